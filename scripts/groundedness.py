#!/usr/bin/env python3
"""Groundedness of `kea ask` answers over golden questions (figures for the
closing note and the floor in kea-llm's select.rs, not a test).

For each question: the share of answer sentences carrying a valid [S#]
citation (Kea removes markers naming no source) whose words mostly occur in
the cited documents (md/txt; a cited PDF or Word file is taken as
support); whether any citation is present; whether the answer's
language is the question's. Refused questions are counted apart. Usage:
  groundedness.py KEA_BIN KNOWLEDGE DATA_DIR GOLDEN.jsonl N -- [kea ask flags]
(the embedded model is chosen with KEA_EMBEDDED_MODEL)
"""
import json, re, subprocess, sys

def language(text):
    cjk = sum(1 for c in text if '\u4e00' <= c <= '\u9fff')
    latin = sum(1 for c in text if c.isascii() and c.isalpha())
    return "zh" if cjk and cjk * 3 >= latin else "en"

def words(text):
    return set(re.findall(r"[a-z]{3,}", text.lower())) | set(re.findall(r"[\u4e00-\u9fff]{2}", text))

def sentences(text):
    """Sentences with the citation markers that follow them ("… seeds. [S1]")."""
    parts = re.findall(r".+?(?:[.!?。！？](?:\s*\[S[\d, S]+\])*|$)", text.replace("\n", " "))
    return [s.strip() for s in parts if len(s.strip()) > 3]

def cited_text(knowledge, citations):
    """The cited documents' text (md/txt); None when one cannot be read as text."""
    out = []
    for c in citations:
        try:
            out.append(open(f"{knowledge}/{c['source']}", encoding="utf-8").read())
        except (OSError, UnicodeDecodeError):
            return None
    return " ".join(out)

def main():
    kea, knowledge, data, golden, n = sys.argv[1:6]
    extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    items = [json.loads(l) for l in open(golden) if l.strip() and not l.startswith("//")]
    en = [i for i in items if i.get("lang") == "en"][: int(n) // 2]
    zh = [i for i in items if i.get("lang") == "zh"][: int(n) - len(en)]
    scores, cited, same_lang, refused = [], 0, 0, 0
    for item in en + zh:
        q = item["query"]
        r = subprocess.run([kea, "--knowledge", knowledge, "--data-dir", data, "ask", q, "--json", *extra], capture_output=True, text=True)
        if "{" not in r.stdout:
            print("no answer:", q, r.stderr[-300:], file=sys.stderr)
            scores.append(0.0)
            continue
        answer = json.loads(r.stdout[r.stdout.index("{"):])
        if answer.get("refused"):
            refused += 1
            print(f"refused {q}", file=sys.stderr)
            continue
        text = answer.get("answer", "")
        source = cited_text(knowledge, answer.get("citations", []))
        support = words(source) if source is not None else None
        sents = sentences(text) or [text]
        good = sum(1 for s in sents if re.search(r"\[S\d", s) and (support is None or len(words(s) & support) >= 0.5 * max(1, len(words(s)))))
        scores.append(good / len(sents))
        cited += bool(answer.get("citations"))
        same_lang += language(text) == language(q)
        print(f"{scores[-1]:.2f} {q} -> {text[:120]!r}", file=sys.stderr)
    total = len(scores)
    print(json.dumps({"questions": total + refused, "refused": refused, "groundedness": round(sum(scores) / max(1, total), 3),
                      "cited": round(cited / max(1, total), 3), "language_match": round(same_lang / max(1, total), 3)}))

if __name__ == "__main__":
    main()
