#!/usr/bin/env python3
"""Copies the screenshots the docs show from an end-to-end run's folder
(`make test-desktop` writes them under the target dir's tmp/e2e-screenshots)
into docs/images/, under the names the docs use. A screenshot the run did
not take is an error naming it, so the docs never show a stale one silently.

    python3 scripts/docs_screenshots.py TARGET/tmp/e2e-screenshots docs/images
"""
import os
import shutil
import sys

# docs name -> (e2e test folder, screenshot label after its step number)
SHOTS = {
    "chat.png": ("changing-subject", "conversation-that-changes-subject"),
    "first-run.png": ("chinese-photo-follow-up", "setup-proposes-a-multilingual-embedder"),
    "photo.png": ("chinese-photo-follow-up", "photo-identified-in-chinese"),
    "unsure.png": ("chinese-photo-follow-up", "unsure-with-related-reading"),
    "collections.png": ("collections", "answered-across-collections"),
}


def find(run: str, folder: str, label: str) -> str:
    directory = os.path.join(run, folder)
    names = [n for n in sorted(os.listdir(directory)) if n.endswith(f"-{label}.png")] if os.path.isdir(directory) else []
    if not names:
        sys.exit(f"the end-to-end run in {run} took no screenshot {folder}/*-{label}.png: run `make test-desktop` first")
    return os.path.join(directory, names[-1])


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    run, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name, (folder, label) in SHOTS.items():
        shutil.copyfile(find(run, folder, label), os.path.join(out, name))
        print(f"{name} <- {folder}/{label}")


if __name__ == "__main__":
    main()
