#!/usr/bin/env bash
# Builds llama.cpp's OpenAI-compatible `llama-server` (a real third-party
# server for the HTTP client's tests) from the PyPI source package of
# llama-cpp-python, once, into a cache outside the clone. Prints its path.
set -euo pipefail

version=0.3.36
cache="${KEA_CACHE_DIR:-$HOME/.cache/kea}"
out="$cache/llama-server-$version/llama-server"
if [ -x "$out" ]; then echo "$out"; exit 0; fi

for tool in cmake c++; do
  command -v "$tool" >/dev/null || { echo "build_llama_server: $tool is missing (make system-deps)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work" >&2
tar -xzf "$work"/llama_cpp_python-$version.tar.gz -C "$work"
src="$work/llama_cpp_python-$version/vendor/llama.cpp"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
mkdir -p "$(dirname "$out")"
cp "$work/build/bin/llama-server" "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
