#!/usr/bin/env python3
"""Generates tiny ONNX models that stand in for weights this machine cannot
download, so the real fastembed code paths can be tested. They are FIXTURES,
not useful models, and are marked so in their manifests.

- fixture-reranker: a cross-encoder-shaped graph (input_ids, attention_mask,
  token_type_ids -> logits [batch, 1]) whose logit is the share of the
  query's word pieces that also occur in the passage, mapped to [-4, 4]: a
  lexical-overlap "cross-encoder". It reuses MiniLM's BERT tokenizer.

Needs the `onnx` package (make fixtures installs it into a cache venv).
"""
import json
import shutil
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER_FILES = ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]
# BERT vocabulary ids below this are special tokens and punctuation.
FIRST_WORD_ID = 1000


def const(name, value, dtype=TensorProto.INT64):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_v", dtype, [len(value)] if isinstance(value, list) else [], value if isinstance(value, list) else [value]))


def reranker_graph() -> onnx.ModelProto:
    n = []
    f = TensorProto.FLOAT
    n.append(const("axis1", [1]))
    n.append(const("axis2", [2]))
    n.append(const("first_word", FIRST_WORD_ID))
    n.append(const("one", 1.0, f))
    n.append(const("eps", 1e-6, f))
    n.append(const("scale", 8.0, f))
    n.append(const("shift", 4.0, f))
    n.append(helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=f))
    n.append(helper.make_node("Cast", ["token_type_ids"], ["passage_f"], to=f))
    n.append(helper.make_node("Sub", ["one", "passage_f"], ["query_f"]))
    n.append(helper.make_node("Greater", ["input_ids", "first_word"], ["is_word"]))
    n.append(helper.make_node("Cast", ["is_word"], ["word_f"], to=f))
    n.append(helper.make_node("Mul", ["mask_f", "word_f"], ["content"]))
    n.append(helper.make_node("Mul", ["content", "query_f"], ["q"]))
    n.append(helper.make_node("Mul", ["content", "passage_f"], ["p"]))
    n.append(helper.make_node("Unsqueeze", ["input_ids", "axis2"], ["ids_col"]))
    n.append(helper.make_node("Unsqueeze", ["input_ids", "axis1"], ["ids_row"]))
    n.append(helper.make_node("Equal", ["ids_col", "ids_row"], ["same"]))
    n.append(helper.make_node("Cast", ["same"], ["same_f"], to=f))
    n.append(helper.make_node("Unsqueeze", ["q", "axis2"], ["q_col"]))
    n.append(helper.make_node("Unsqueeze", ["p", "axis1"], ["p_row"]))
    n.append(helper.make_node("Mul", ["same_f", "q_col"], ["m1"]))
    n.append(helper.make_node("Mul", ["m1", "p_row"], ["matches"]))
    n.append(helper.make_node("ReduceMax", ["matches"], ["found"], axes=[2], keepdims=0))
    n.append(helper.make_node("ReduceSum", ["found", "axis1"], ["overlap"], keepdims=1))
    n.append(helper.make_node("ReduceSum", ["q", "axis1"], ["q_count"], keepdims=1))
    n.append(helper.make_node("Add", ["q_count", "eps"], ["q_safe"]))
    n.append(helper.make_node("Div", ["overlap", "q_safe"], ["share"]))
    n.append(helper.make_node("Mul", ["share", "scale"], ["scaled"]))
    n.append(helper.make_node("Sub", ["scaled", "shift"], ["logits"]))
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"]) for name in ["input_ids", "attention_mask", "token_type_ids"]]
    output = helper.make_tensor_value_info("logits", f, ["batch", 1])
    graph = helper.make_graph(n, "kea_fixture_lexical_reranker", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kea-fixtures")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write_reranker(models: Path) -> None:
    tokenizer_dir = models / "all-minilm-l6-v2"
    if not (tokenizer_dir / "tokenizer.json").exists():
        sys.exit("run `make models` first: the fixture reuses MiniLM's tokenizer")
    folder = models / "fixture-reranker"
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(reranker_graph(), str(folder / "model.onnx"))
    for name in TOKENIZER_FILES:
        shutil.copyfile(tokenizer_dir / name, folder / name)
    manifest = {
        "id": "fixture-reranker",
        "kind": "reranker",
        "dim": 0,
        "max_length": 256,
        "pooling": "none",
        "onnx": "model.onnx",
        "tokenizer": "tokenizer.json",
        "config": "config.json",
        "special_tokens_map": "special_tokens_map.json",
        "tokenizer_config": "tokenizer_config.json",
        "fixture": "TEST FIXTURE: a lexical-overlap graph shaped like a cross-encoder, not a trained model",
    }
    (folder / "kea-model.json").write_text(json.dumps(manifest, indent=2))
    print(f"  wrote {folder}")


if __name__ == "__main__":
    models = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "models"
    write_reranker(models)
