#!/usr/bin/env python3
"""Fits and reports Kea's answer decision over several collections: the
sample knowledge and the small collections of other subjects in
tests/collections/ (see its README for the fit / held-out split).

Each collection is indexed on its own with the built `kea`; its golden
questions' decision signals are saved (`kea eval --signals-out`). With
--fit, one decision is fitted on every row not held out (`kea eval
--calibrate --from-signals`). Then every collection's held-out questions are
evaluated with that fit (or the shipped one) and what a user without a
language model sees is printed per collection and language.

    python3 scripts/eval_collections.py --kea target/debug/kea --work /tmp/eval [--fit FILE]
        [--embed-url http://127.0.0.1:PORT/v1 --embed-model multilingual-e5-small-q4]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_GOLDEN = ["new-en-answerable", "new-en-unanswerable", "zh-paraphrases", "zh-owners", "sample-knowledge", "unanswerable"]


def collections() -> list[tuple[str, str, list[str]]]:
    """(name, folder, golden files) of the sample and of each test collection."""
    found = [("sample", os.path.join(ROOT, "knowledge"), [os.path.join(ROOT, "tests/golden", f + ".jsonl") for f in SAMPLE_GOLDEN])]
    base = os.path.join(ROOT, "tests/collections")
    for name in sorted(os.listdir(base)):
        if os.path.isdir(os.path.join(base, name)) and os.path.exists(os.path.join(base, name + ".jsonl")):
            found.append((name, os.path.join(base, name), [os.path.join(base, name + ".jsonl")]))
    return found


def kea(args: argparse.Namespace, folder: str, data: str, *rest: str) -> str:
    embed = ["--embed-url", args.embed_url, "--embed-model", args.embed_model] if args.embed_url else []
    done = subprocess.run([args.kea, "--knowledge", folder, "--data-dir", data, *embed, *rest], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"kea {' '.join(rest[:2])} failed for {folder}:\n{done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kea", required=True)
    parser.add_argument("--work", required=True, help="a folder for the indexes and signal files")
    parser.add_argument("--fit", help="fit a decision on the rows not held out and write it here")
    parser.add_argument("--use", help="evaluate with this calibration file instead of the shipped one")
    parser.add_argument("--embed-url")
    parser.add_argument("--embed-model", default="multilingual-e5-small-q4")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    signal_files = []
    for name, folder, golden in collections():
        data = os.path.join(args.work, name)
        kea(args, folder, data, "index", "--json")
        signals = os.path.join(args.work, name + ".signals.jsonl")
        kea(args, folder, data, "eval", *golden, "--signals-out", signals, "--label", name, "--force")
        signal_files.append(signals)
    use = args.use
    if args.fit:
        sample = os.path.join(args.work, "sample")
        print(kea(args, os.path.join(ROOT, "knowledge"), sample, "eval", *signal_files, "--calibrate", "--from-signals", "--out", args.fit, "--force"))
        use = args.fit
    full = os.path.join(args.work, "full.json")
    with open(full, "w") as f:
        f.write('{"compare_sentences": true}')
    figures = {}
    for name, folder, golden in collections():
        data = os.path.join(args.work, name)
        own = os.path.join(data, "relevance-calibration.json")
        if use:
            shutil.copyfile(use, own)
        elif os.path.exists(own):
            os.remove(own)
        out = json.loads(kea(args, folder, data, "eval", *golden, "--split", "test", "--config", f"full={full}", "--json"))
        result = out["results"][0]
        refusal = result.get("refusal") or {}
        unanswerable = {lang: rates[1] for lang, rates in refusal.get("by_lang", {}).items()}
        if refusal:
            unanswerable["all"] = refusal["outcomes"][1]
        figures[name] = {"answers": result["answers"], "unanswerable": unanswerable}
        for lang, a in sorted(result["answers"].items()):
            u = unanswerable.get(lang, {})
            print(
                f"{name:<16} {lang:<3} answerable {a['questions']:>3}: answered {a['answered']:.2f} unsure {a['unsure']:.2f} refused {a['refused']:.2f} "
                f"shown {a['shown']:.2f} quoted {a['quoted']:.2f} (of {a['quoted_of']}) other doc {a['other_document']:.2f} "
                f"related sentence {a['related_quoted']:.2f} (of {a['related_quoted_of']})"
                + (f" | unanswerable {u.get('questions', 0)}: answered {u.get('answered', 0):.2f} refused {u.get('refused', 0):.2f}" if u else "")
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
