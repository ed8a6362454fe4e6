#!/usr/bin/env bash
# The installed package, as a user gets it: installs the .deb (dpkg -i as
# root, else unpacked into a scratch root), then — with a fresh home and no
# Kea environment variables — the installed CLI indexes ~/Documents/Kea and
# answers a question from it with a citation, and the installed desktop app
# starts and indexes the same folder on its own; finally the package is
# removed and the user's documents and index stay. Usage: tests/package.sh KEA.deb
set -euo pipefail
deb="$(realpath "$1")"
work=$(mktemp -d)
home="$work/home"
app_pid=""
cleanup() {
  [ -n "$app_pid" ] && kill -- "-$app_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "package test: $*" >&2; exit 1; }

if [ "$(id -u)" = 0 ]; then
  dpkg -i "$deb" >/dev/null
  prefix=/usr
else
  dpkg -x "$deb" "$work/root"
  prefix="$work/root/usr"
fi
for f in bin/kea bin/kea-desktop lib/kea/models/all-minilm-l6-v2/kea-model.json lib/kea/models/onnxruntime/libonnxruntime.so \
  share/applications/Kea.desktop; do
  [ -e "$prefix/$f" ] || fail "$prefix/$f is not installed"
done
grep -q "^Exec=kea-desktop" "$prefix/share/applications/Kea.desktop" || fail "the desktop entry does not start kea-desktop"
for size in 32x32 128x128 256x256 512x512; do
  [ -e "$prefix/share/icons/hicolor/$size/apps/kea-desktop.png" ] || fail "no $size icon is installed"
done
dpkg-deb -f "$deb" Depends | grep -q webkit2gtk || fail "WebKitGTK is not a declared dependency"
dpkg-deb -f "$deb" Recommends | grep -q tesseract-ocr || fail "Tesseract is not recommended"

# A user's first documents, in the default folder.
docs="$home/Documents/Kea"
mkdir -p "$docs"
printf '# Sourdough starter\n\nFeed the sourdough starter once a day with equal weights of flour and water.\nKeep it at room temperature between feedings.\n' > "$docs/starter.md"
printf '# Window boxes\n\nWindow boxes need drainage holes and a light potting mix.\nWater them every morning in summer.\n' > "$docs/boxes.md"
user=(env -i "HOME=$home" "PATH=$prefix/bin:/usr/bin:/bin" LANG=C.UTF-8)
cd "$home"

"${user[@]}" kea index >/dev/null || fail "the installed CLI could not index ~/Documents/Kea"
answer=$("${user[@]}" kea ask "What do I feed the sourdough starter with?" --json)
python3 - "$answer" <<'PY' || fail "the installed CLI did not answer with a citation: $answer"
import json, sys
a = json.loads(sys.argv[1])
assert a["outcome"] == "answered", a["outcome"]
assert any(c["source"] == "starter.md" for c in a["citations"]), a["citations"]
PY
[ -f "$home/.local/share/kea/kea.sqlite3" ] || fail "the index is not in the XDG data folder"

# The app on its own: a new document in the folder is indexed by its watcher.
printf '# Bike chains\n\nClean the bike chain with a dry rag and oil it lightly every month.\n' > "$docs/chain.md"
setsid "${user[@]}" xvfb-run -a kea-desktop >"$work/app.log" 2>&1 &
app_pid=$!
indexed=""
for _ in $(seq 1 120); do
  # Read-only, beside the running app (SQLite WAL).
  if python3 - "$home/.local/share/kea/kea.sqlite3" <<'PY' 2>/dev/null; then
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
row = db.execute("SELECT status, chunk_count FROM documents WHERE path = 'chain.md'").fetchone()
sys.exit(0 if row and row[0] == "indexed" and row[1] > 0 else 1)
PY
    indexed=yes
    break
  fi
  kill -0 "$app_pid" 2>/dev/null || fail "the installed app exited: $(tail -5 "$work/app.log")"
  sleep 1
done
[ -n "$indexed" ] || fail "the installed app did not index the new document: $(tail -5 "$work/app.log")"
kill -- "-$app_pid" 2>/dev/null || true
wait "$app_pid" 2>/dev/null || true
app_pid=""

if [ "$(id -u)" = 0 ]; then
  dpkg -r kea >/dev/null
  [ ! -e /usr/bin/kea ] && [ ! -e /usr/bin/kea-desktop ] && [ ! -d /usr/lib/kea ] || fail "removing the package left files behind"
fi
[ -f "$docs/starter.md" ] && [ -f "$home/.local/share/kea/kea.sqlite3" ] || fail "removing the package touched the user's documents or index"
echo "package test: installed, indexed, answered, removed ($(du -h "$deb" | cut -f1) package)"
