#!/usr/bin/env bash
# Builds Kea's Debian package with the Tauri bundler from the binaries the
# test build already made (`make test` or `make desktop`: no second compile):
# the desktop app (`kea-desktop`) and the `kea` command line, stripped of
# debug information; ONNX Runtime and the bundled embedding model under
# /usr/lib/kea/models (found there without environment variables); a
# desktop entry and icon; WebKitGTK as a dependency, Tesseract recommended.
# Prints the path of the .deb.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
built="$target/debug"
for bin in kea-desktop kea; do
  [ -x "$built/$bin" ] || { echo "package: $built/$bin is missing (make desktop builds it)" >&2; exit 1; }
done
for model in onnxruntime all-minilm-l6-v2; do
  [ -d "models/$model" ] || { echo "package: models/$model is missing (make models fetches it)" >&2; exit 1; }
done
stage="$target/package"
rm -rf "$stage"
mkdir -p "$stage/debug" "$stage/models"
strip --strip-debug -o "$stage/debug/kea-desktop" "$built/kea-desktop"
strip --strip-debug -o "$stage/kea" "$built/kea"
cp -r models/onnxruntime models/all-minilm-l6-v2 "$stage/models/"
cat > "$stage/package.conf.json" <<JSON
{
  "mainBinaryName": "kea-desktop",
  "bundle": {
    "active": true,
    "targets": ["deb"],
    "category": "Productivity",
    "shortDescription": "Chat with your own documents",
    "longDescription": "Kea indexes a folder of documents on this computer and answers questions about them with citations, in Chinese and English.",
    "linux": {
      "deb": {
        "section": "utils",
        "recommends": ["tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-chi-sim"],
        "files": { "/usr/bin/kea": "$stage/kea", "/usr/lib/kea/models": "$stage/models" }
      }
    }
  }
}
JSON
# The bundler packs the binary it finds in its target dir: the stripped copy.
CARGO_TARGET_DIR="$stage" ui/node_modules/.bin/tauri bundle --debug --bundles deb --config "$stage/package.conf.json" --ci >&2
ls "$stage"/debug/bundle/deb/*.deb
