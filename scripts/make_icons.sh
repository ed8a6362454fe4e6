#!/usr/bin/env bash
# Kea's icons at 32–512 px from their one source image
# (src-tauri/icons/source.svg), with the Tauri CLI the UI already installs
# (`cd ui && npm install` first). The window uses the 256 px one (the first
# PNG tauri.conf.json lists); the Debian package installs every size.
set -euo pipefail
cd "$(dirname "$0")/.."
ui/node_modules/.bin/tauri icon src-tauri/icons/source.svg -o src-tauri/icons -p 32,64,128,256,512
