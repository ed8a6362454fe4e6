"""A Python peer of Parrot-Set's design, for `kea bench peer`.

Same corpus and the same ONNX model (all-MiniLM-L6-v2) as Kea: heading
chunks embedded with onnxruntime + tokenizers (mean pooling, L2 norm),
stored in a chromadb persistent collection; any change rebuilds the whole
collection, as Parrot-Set does. Prints one JSON object of figures.

Usage: peer.py --corpus DIR --model DIR --queries FILE --edit FILE --db DIR
"""
import argparse
import json
import re
import resource
import shutil
import time
from pathlib import Path

import chromadb
import numpy as np
import onnxruntime as ort
from chromadb.config import Settings
from tokenizers import Tokenizer


class Embedder:
    def __init__(self, model_dir: Path):
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(256)
        self.tokenizer.enable_padding()
        self.session = ort.InferenceSession(str(model_dir / "model.onnx"), providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def __call__(self, texts):
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        pooled = summed / np.clip(mask.sum(axis=1, keepdims=True), 1, None)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def chunks(path: Path):
    """Sections under headings, as Kea chunks Markdown (title + heading path)."""
    text = path.read_text(encoding="utf-8")
    title, heading, body, out = path.stem, "", [], []
    for line in text.splitlines():
        match = re.match(r"^(#{1,6})\s+(.*)", line)
        if match:
            if "".join(body).strip():
                out.append(f"{title} > {heading}\n" + "\n".join(body).strip())
            body = []
            if len(match.group(1)) == 1:
                title = match.group(2)
            heading = match.group(2)
        else:
            body.append(line)
    if "".join(body).strip():
        out.append(f"{title} > {heading}\n" + "\n".join(body).strip())
    return out


def rebuild(client, corpus: Path, embed: Embedder) -> int:
    """Drops the collection and embeds every chunk again (Parrot-Set's way)."""
    if "docs" in [c.name for c in client.list_collections()]:
        client.delete_collection("docs")
    collection = client.create_collection("docs", metadata={"hnsw:space": "cosine"})
    items = [(f"{p.name}#{i}", text, p.name) for p in sorted(corpus.rglob("*.md")) for i, text in enumerate(chunks(p))]
    for start in range(0, len(items), 64):
        batch = items[start : start + 64]
        vectors = embed([text for _, text, _ in batch])
        collection.add(ids=[i for i, _, _ in batch], embeddings=vectors.tolist(), documents=[t for _, t, _ in batch], metadatas=[{"source": s} for _, _, s in batch])
    return len(items)


def main():
    parser = argparse.ArgumentParser()
    for name in ("--corpus", "--model", "--queries", "--edit", "--db"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    corpus, db = Path(args.corpus), Path(args.db)
    embed = Embedder(Path(args.model))
    embed(["warm up"])
    shutil.rmtree(db, ignore_errors=True)
    client = chromadb.PersistentClient(path=str(db), settings=Settings(anonymized_telemetry=False))

    started = time.perf_counter()
    count = rebuild(client, corpus, embed)
    ingest_ms = (time.perf_counter() - started) * 1000

    edited = Path(args.edit)
    edited.write_text(edited.read_text(encoding="utf-8") + "\nAn edited sentence about parrots.\n", encoding="utf-8")
    started = time.perf_counter()
    rebuild(client, corpus, embed)
    edit_ms = (time.perf_counter() - started) * 1000

    collection = client.get_collection("docs")
    latencies = []
    for query in Path(args.queries).read_text(encoding="utf-8").splitlines():
        started = time.perf_counter()
        collection.query(query_embeddings=embed([query]).tolist(), n_results=5)
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    pick = lambda p: round(latencies[round((len(latencies) - 1) * p)], 2)
    print(json.dumps({
        "chunks": count,
        "ingest_ms": round(ingest_ms),
        "edit_reindex_ms": round(edit_ms),
        "query_p50_ms": pick(0.5),
        "query_p99_ms": pick(0.99),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


if __name__ == "__main__":
    main()
