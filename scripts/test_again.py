#!/usr/bin/env python3
"""Runs the built integration and end-to-end test binaries several times and
reports every test that failed at least once (a flaky test fails in some
rounds only). Nothing is rebuilt: the binaries are the ones the last test
build made, found through `cargo test --no-run --message-format=json`,
which only lists them when they are current (the Makefile passes the test
build's own flags, so cargo has nothing to compile).

    python3 scripts/test_again.py --rounds 3 --logs DIR -- cargo test <flags> --no-run

Exit status 1 when any test failed in any round. The environment the tests
need (model folders, servers) is the caller's, as in `make test`.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict

SUITES = ("integration", "e2e")
RESULT = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)", re.MULTILINE)


def test_binaries(cargo: list[str]) -> dict[str, tuple[str, str]]:
    """The executable of each of the SUITES and its package's folder (cargo
    runs a test there), by suite name, from cargo's JSON messages."""
    listed = subprocess.run(cargo + ["--message-format=json"], check=True, capture_output=True, text=True).stdout
    found = {}
    for line in listed.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        target = message.get("target", {})
        if message.get("reason") == "compiler-artifact" and message.get("executable") and target.get("name") in SUITES and "test" in target.get("kind", []):
            found[target["name"]] = (message["executable"], os.path.dirname(message["manifest_path"]))
        if message.get("reason") == "compiler-artifact" and not message.get("fresh", True):
            print(f"note: cargo rebuilt {target.get('name')}: the binaries are not those of the last test build", file=sys.stderr)
    missing = [s for s in SUITES if s not in found]
    if missing:
        sys.exit(f"no built test binary for {missing}: run `make test-build` first")
    return found


def run_round(binary: tuple[str, str], suite: str, round_no: int, logs: str) -> tuple[dict[str, str], float, int]:
    """One run of a suite: each test's result, the wall time and the exit code."""
    executable, package = binary
    started = time.monotonic()
    done = subprocess.run([executable], cwd=package, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    results = {name: status for name, status in RESULT.findall(done.stdout)}
    if done.returncode != 0 and "FAILED" not in results.values():
        results[f"<{suite} binary exited with {done.returncode}>"] = "FAILED"
    with open(os.path.join(logs, f"{suite}-{round_no}.log"), "w") as f:
        f.write(done.stdout + "\n--- stderr ---\n" + done.stderr)
    return results, elapsed, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--logs", default="test-again-logs", help="where each round's output is kept")
    parser.add_argument("cargo", nargs=argparse.REMAINDER, help="-- the cargo command that lists the built tests")
    args = parser.parse_args()
    cargo = [a for a in args.cargo if a != "--"]
    binaries = test_binaries(cargo)
    os.makedirs(args.logs, exist_ok=True)
    failures: dict[str, list[int]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    for round_no in range(1, args.rounds + 1):
        for suite in SUITES:
            results, elapsed, code = run_round(binaries[suite], suite, round_no, args.logs)
            failed = sorted(name for name, status in results.items() if status == "FAILED")
            for name in failed:
                failures[f"{suite}::{name}"].append(round_no)
            counts[suite] = max(counts[suite], len(results))
            print(f"round {round_no} {suite}: {len(results)} tests, {len(failed)} failed, {elapsed:.0f} s, exit {code}", flush=True)
    print(f"\n{args.rounds} rounds of {', '.join(f'{counts[s]} {s}' for s in SUITES)} tests")
    if not failures:
        print(f"no test failed in any round (logs in {args.logs})")
        return
    for name, rounds in sorted(failures.items()):
        kind = "failed every round" if len(rounds) == args.rounds else "FLAKY"
        print(f"{kind}: {name} (rounds {', '.join(map(str, rounds))})")
    sys.exit(1)


if __name__ == "__main__":
    main()
