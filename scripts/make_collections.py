#!/usr/bin/env python3
"""Writes the one binary document of the test collections in
tests/collections/ (the kettle manual PDF) with the standard library only,
and checks every collection's golden questions against its documents.

    python3 scripts/make_collections.py           # (re)write the PDF
    python3 scripts/make_collections.py --check   # validate all collections

Each PDF page is a section heading set larger than its body, in real text
operators (Tj, T*), so Kea reads one heading per page.
"""
import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path

from make_sample_docs import pdf_escape, write_pdf

ROOT = Path(__file__).resolve().parent.parent / "tests" / "collections"
MANUAL = ROOT / "kettle-manual" / "brisa-kt17-manual.pdf"
HELD_OUT = {"kettle-manual", "inventory", "long-handbook", "garden-zh-en", "residents-handbook"}
# Folders with pages in both languages: any question may be in either.
MIXED = {"garden-zh-en", "residents-handbook"}
FIT = {"recipes", "meeting-notes", "work-notes-zh", "recipes-zh"}
KINDS = {"short", "everyday", "paraphrase", "yesno", "number", "long", "neighbour", "offtopic", "crosslingual"}

TITLE = "Brisa KT-17 Electric Kettle - Instruction Manual"
# (heading, body lines); "" is a paragraph gap. ASCII only.
MANUAL_PAGES = [
    ("Safety instructions", [
        "Brisa KT-17 cordless electric kettle, 1.7 litres, 2200 W, 220-240 V.",
        "Read this manual before first use and keep it for future reference.",
        "",
        "Use the kettle only with the power base supplied (model KB-17).",
        "Never put the kettle or the power base in water or any other liquid.",
        "",
        "Do not fill the kettle above the MAX mark (1.7 L).",
        "Never fill it with less than 0.5 L (the MIN mark).",
        "If the kettle is overfilled, boiling water may spit out of the spout.",
        "",
        "Keep the lid closed while the water is boiling.",
        "Do not open the lid while pouring: steam from the spout can cause burns.",
        "",
        "Children under 8 years must not use or clean the kettle.",
        "Keep the kettle and its cord out of the reach of children.",
        "",
        "Do not use the kettle if the cord, the plug or the base is damaged.",
        "A damaged cord must be replaced by an authorised service agent.",
        "Unplug the power base before cleaning and when it is not in use.",
    ]),
    ("Parts and controls", [
        "1. Lid with push-button release",
        "2. Removable mesh limescale filter behind the spout",
        "3. Water level window marked in 0.25 L steps",
        "4. Handle with the temperature panel",
        "5. Power base with 360 degree connector and cord storage underneath",
        "",
        "The temperature panel has five buttons: 40, 70, 80, 90 and 100 C.",
        "Press the power button once to boil the water to 100 C.",
        "Press a temperature button first to heat to a lower temperature.",
        "",
        "Hold the KEEP WARM button for 2 seconds to keep the water hot.",
        "The kettle keeps the chosen temperature for up to 30 minutes.",
        "The light flashes blue while the kettle keeps the water warm.",
        "",
        "To shorten the cord, wind it around the cord store under the base.",
    ]),
    ("Using the kettle", [
        "Before first use, fill the kettle to MAX, boil it and pour the water away.",
        "Repeat this twice to remove any manufacturing residue.",
        "",
        "Fill the kettle through the lid. Put it on the base and press the power",
        "button. The light turns red while the water is heating.",
        "The kettle switches off automatically and gives three short beeps",
        "when the water boils or reaches the chosen temperature.",
        "",
        "Boiling a full kettle takes about 4 minutes.",
        "One cup of water (250 ml) boils in about 75 seconds.",
        "",
        "If the kettle is switched on empty, the boil-dry protection turns it off.",
        "Let it cool for 10 minutes before refilling.",
        "",
        "Recommended temperatures:",
        "green tea 80 C, white tea 70 C, black tea and herbal tea 100 C.",
        "The 40 C setting is for warming baby bottles in a jug of water.",
    ]),
    ("Descaling and cleaning", [
        "Limescale builds up faster in hard water areas.",
        "Descale the kettle every 4 weeks in hard water areas.",
        "In soft water areas, descale it every 3 months.",
        "The descale light on the handle turns orange after 100 boils.",
        "",
        "To descale with citric acid:",
        "1. Fill the kettle with 1 litre of water and add 25 g of citric acid.",
        "2. Bring it to the boil and leave the solution in for 30 minutes.",
        "3. Pour it away and rinse the kettle three times with clean water.",
        "4. Boil a full kettle of clean water and throw it away.",
        "",
        "You can also use white vinegar mixed half and half with water.",
        "Do not use coffee machine descalers that contain hydrochloric acid.",
        "To reset the descale light, hold the 70 and 90 buttons for 3 seconds.",
        "",
        "Cleaning the filter: pull the mesh filter straight up out of the spout,",
        "rinse it under the tap and brush it gently with a soft toothbrush.",
        "The filter is not dishwasher safe.",
        "Wipe the outside with a damp cloth. Never use scouring pads.",
    ]),
    ("Troubleshooting", [
        "The kettle does not switch on:",
        "check that the kettle sits properly on the base and the socket works.",
        "",
        "The kettle switches off before the water boils:",
        "limescale on the heating element trips the thermostat early.",
        "Descale the kettle.",
        "",
        "The kettle does not switch off: the lid is probably not closed.",
        "Close the lid until it clicks.",
        "",
        "The water tastes of plastic: boil and discard a full kettle three times.",
        "",
        "Error code E1: the kettle was switched on empty.",
        "Lift it off the base, let it cool for 10 minutes and fill it with water.",
        "",
        "Error code E2: a temperature sensor fault.",
        "Unplug the base for 1 minute. If E2 comes back, contact customer service.",
        "",
        "White flakes floating in the water are limescale and are harmless.",
        "",
        "Water leaks from under the kettle: it may have been overfilled.",
        "If it still leaks when filled below MAX, stop using it and call us.",
    ]),
    ("Warranty and service", [
        "The Brisa KT-17 has a 2 year warranty from the date of purchase.",
        "Register the kettle online within 28 days at brisa-home.example/register",
        "to extend the warranty to 3 years.",
        "Keep your receipt: it is needed for any warranty claim.",
        "",
        "The warranty does not cover damage caused by limescale,",
        "damage from dropping the kettle, or commercial use.",
        "",
        "Customer service: 0800 555 0173, Monday to Friday, 8:00 to 18:00.",
        "Email: support@brisa-home.example",
        "",
        "Spare parts (lid, filter, power base) can be ordered from our website.",
        "A replacement limescale filter, part number KF-17, costs EUR 6.50.",
        "",
        "Disposal: do not put the kettle in household waste.",
        "Take it to an electrical recycling point.",
    ]),
]


def page_ops(index: int, heading: str, body: list) -> bytes:
    """A page: the manual's title (page 1 only, 18 pt), the heading (15 pt),
    then the body lines (11 pt, 15 pt leading; a gap is an empty line)."""
    ops, y = [], 790
    if index == 0:
        ops += ["BT", "/F1 18 Tf", f"56 {y} Td", f"({pdf_escape(TITLE)}) Tj", "ET"]
        y -= 40
    ops += ["BT", "/F1 15 Tf", f"56 {y} Td", f"({pdf_escape(heading)}) Tj", "ET"]
    ops += ["BT", "/F1 11 Tf", "15 TL", f"56 {y - 30} Td"]
    for n, line in enumerate(body):
        if n:
            ops.append("T*")
        if line:
            ops.append(f"({pdf_escape(line)}) Tj")
    ops.append("ET")
    return "\n".join(ops).encode("ascii")


def make_pdf(path: Path, pages) -> None:
    """The manual as a PDF (the sample documents' writer), a title and
    headings in larger type."""
    write_pdf(path, [page_ops(index, heading, body) for index, (heading, body) in enumerate(pages)])


def manual_lines():
    return [TITLE] + [line for heading, body in MANUAL_PAGES for line in [heading] + body if line]


def pdf_text_lines(path: Path):
    """The strings shown by Tj in the PDF's (uncompressed) content streams."""
    data = path.read_bytes().decode("latin-1")
    shown = re.findall(r"\(((?:[^()\\]|\\.)*)\)\s*Tj", data)
    return [re.sub(r"\\(.)", r"\1", s) for s in shown]


# ---------------------------------------------------------------- checking

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_sections(text: str):
    """{heading text: [section text up to the next heading of any level]}."""
    sections, current, fenced = {}, None, False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if m:
            current = m.group(2)
            sections.setdefault(current, []).append("")
        elif current is not None:
            sections[current][-1] += line + "\n"
    return sections


def check() -> int:
    errors = []
    assert pdf_text_lines(MANUAL) == manual_lines(), "the PDF is stale or its text is not in Tj operators: rerun without --check"
    total = Counter()
    for jsonl in sorted(ROOT.glob("*.jsonl")):
        name = jsonl.stem
        folder = ROOT / name
        if name not in FIT | HELD_OUT or not folder.is_dir():
            errors.append(f"{jsonl.name}: no such collection folder")
            continue
        counts = Counter()
        seen = set()
        for n, raw in enumerate(jsonl.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{jsonl.name}:{n}"
            try:
                q = json.loads(raw)
            except json.JSONDecodeError as e:
                errors.append(f"{where}: {e}")
                continue
            keys = set(q)
            want = {"query", "answerable", "relevant", "lang", "kind"} | ({"evidence"} if q.get("answerable") else set())
            if not want <= keys or keys - want - {"split"}:
                errors.append(f"{where}: fields {sorted(keys)}")
                continue
            if q["query"] in seen:
                errors.append(f"{where}: duplicate query")
            seen.add(q["query"])
            if q.get("kind") not in KINDS:
                errors.append(f"{where}: kind {q.get('kind')!r}")
            is_zh = bool(re.search(r"[\u4e00-\u9fff]", q["query"]))
            if q.get("lang") != ("zh" if is_zh else "en"):
                errors.append(f"{where}: lang {q.get('lang')!r} does not match the query")
            if "split" in q and q["split"] != "test":
                errors.append(f"{where}: split {q['split']!r}")
            if name in HELD_OUT and q.get("split") != "test":
                errors.append(f"{where}: held-out collection, split must be test")
            if not q["answerable"]:
                if q["relevant"]:
                    errors.append(f"{where}: unanswerable with relevant")
            else:
                if not q["relevant"]:
                    errors.append(f"{where}: answerable without relevant")
                ev = q["evidence"]
                # 3-12 words, or 4-15 Chinese characters (a number counts as one)
                zh = re.search(r"[\u4e00-\u9fff]", ev)
                size = len(re.findall(r"[\u4e00-\u9fff]|[A-Za-z0-9.,:]+", ev)) if zh else len(ev.split())
                low, high = (4, 15) if zh else (3, 12)
                if not q["relevant"][0].endswith(".csv") and not low <= size <= high:
                    errors.append(f"{where}: evidence of {size} words/characters: {ev!r}")
                found = False
                for rel in q["relevant"]:
                    path, _, heading = rel.partition("#")
                    doc = folder / path
                    if not doc.is_file():
                        errors.append(f"{where}: no file {rel}")
                        continue
                    if doc.suffix == ".pdf":
                        texts = pdf_text_lines(doc)
                    elif doc.suffix == ".csv":
                        texts = [cell for row in csv.reader(doc.read_text(encoding="utf-8").splitlines()) for cell in row]
                    else:
                        text = doc.read_text(encoding="utf-8")
                        if heading:
                            sections = markdown_sections(text)
                            if heading not in sections:
                                errors.append(f"{where}: no heading {heading!r} in {path}")
                                continue
                            texts = sections[heading]
                        else:
                            texts = [text]
                    found |= any(q["evidence"] in t for t in texts)
                if not found:
                    errors.append(f"{where}: evidence {q['evidence']!r} not in {q['relevant']} (section / PDF line / CSV cell)")
            split = "test" if q.get("split") == "test" else "fit"
            counts["answerable" if q["answerable"] else "unanswerable"] += 1
            counts[q["lang"]] += 1
            counts["crosslingual"] += q["kind"] == "crosslingual"
            counts[split] += 1
            counts[f"{split}-{'ans' if q['answerable'] else 'unans'}"] += 1
        total.update(counts)
        ans, unans = counts["answerable"], counts["unanswerable"]
        other = counts["zh"] if counts["en"] >= counts["zh"] else counts["en"]
        if not 3 <= counts["crosslingual"] <= 14 or (name not in MIXED and other != counts["crosslingual"]):
            errors.append(f"{jsonl.name}: {counts['crosslingual']} crosslingual, {other} in the other language (want 3-14)")
        if not (18 <= ans <= 32 and 10 <= unans <= 16):
            errors.append(f"{jsonl.name}: {ans} answerable / {unans} unanswerable")
        role = "held-out" if name in HELD_OUT else "fit"
        print(f"{name:15} {role:8} answerable {ans:2}  unanswerable {unans:2}  en {counts['en']:2}  zh {counts['zh']:2}"
              f"  fit {counts['fit']:2} (ans {counts['fit-ans']:2})  test {counts['test']:2} (ans {counts['test-ans']:2})")
    print(f"{'total':15} {'':8} answerable {total['answerable']}  unanswerable {total['unanswerable']}  en {total['en']}  zh {total['zh']}"
          f"  fit {total['fit']}  test {total['test']}")
    missing = (FIT | HELD_OUT) - {p.stem for p in ROOT.glob("*.jsonl")}
    errors += [f"{m}.jsonl missing" for m in sorted(missing)]
    for e in errors:
        print("ERROR", e)
    print("OK" if not errors else f"{len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        sys.exit(check())
    make_pdf(MANUAL, MANUAL_PAGES)
    print(f"wrote {MANUAL}")
