#!/usr/bin/env bash
# Installs the Debian packages Kea's build needs (WebKitGTK, a C/C++
# toolchain, cmake and clang for llama.cpp) and uses at run time (Tesseract
# OCR with Chinese and English data, poppler's pdftoppm for scanned PDF
# pages); with --test also what the tests need (Xvfb, xauth,
# WebKitWebDriver, strace, xdotool and GTK's Python bindings for a real
# drag-and-drop, D-Bus and gnome-keyring for the keyring test, a CJK font
# so the end-to-end screenshots show Chinese
# text). Idempotent: does nothing when they are all present; skips apt (with
# a hint) when not root and something is missing.
set -euo pipefail

# WebKitGTK for the desktop shell; cmake and clang for the embedded llama.cpp.
packages=(libwebkit2gtk-4.1-dev build-essential pkg-config cmake clang libclang-dev)
# OCR of scanned PDFs and of page photos in the knowledge folder.
packages+=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim poppler-utils)
if [ "${1:-}" = "--test" ]; then
  packages+=(xvfb xauth webkit2gtk-driver strace fonts-wqy-microhei xdotool python3-gi gir1.2-gtk-3.0)
  # A real Secret Service for the keyring test: a private session bus and gnome-keyring.
  packages+=(dbus-daemon dbus-bin gnome-keyring)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "install-system-deps: please install: ${missing[*]} (no apt-get here)" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "install-system-deps: run as root, or install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "installing ${missing[*]}"
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
