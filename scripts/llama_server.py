#!/usr/bin/env python3
"""llama.cpp's OpenAI-compatible HTTP server for the HTTP client's tests.

The server is llama.cpp's own (`tools/server`), prebuilt in PyPI's
`xllamacpp` wheel, so no C++ build is needed; this launcher takes the
subset of `llama-server`'s flags the tests pass and serves until killed.
`make test` installs the wheel into a virtual environment under
`$KEA_CACHE_DIR` (default `~/.cache/kea`); run from any Python, the
launcher re-executes itself with that environment's interpreter.
"""

import argparse
import os
import signal
import sys
import time

VENV = os.path.join(os.environ.get("KEA_CACHE_DIR") or os.path.expanduser("~/.cache/kea"), "llama-venv")

try:
    import xllamacpp
except ImportError:
    python = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV) or not os.path.exists(python):
        sys.exit(f"llama_server: xllamacpp is not installed in {VENV} (make test installs it)")
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("-c", "--ctx-size", type=int, default=4096)
    parser.add_argument("-t", "--threads", type=int, default=1)
    parser.add_argument("-np", "--parallel", type=int, default=1)
    parser.add_argument("-m", "--model", required=True)
    args = parser.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx_size
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_parallel = args.parallel
    params.hostnames = [args.host]
    params.port = args.port
    server = xllamacpp.Server(params)
    print(f"llama_server: listening on {server.listening_address}", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
