#!/usr/bin/env python3
"""Generates tiny ONNX models that stand in for weights this machine cannot
download, so the real fastembed code paths can be tested. They are FIXTURES,
not useful models, and are marked so in their manifests.

- fixture-clip-vision / fixture-clip-text: CLIP-shaped graphs (pixel_values
  [b,3,224,224] -> image_embeds [b,4]; input_ids/attention_mask -> text_embeds
  [b,4]). The image embedding is the mean colour (R, G, B, 0); a label's text
  embedding is the sum of colours assigned to the word pieces of four
  species names (budgerigar green, sun conure yellow, macaw blue, lovebird
  red; colour words their colour), plus a small fourth component, so other labels are orthogonal to
  every image. A solid colour image therefore drives each branch of
  identification: clear match, near tie, no plausible label.
- fixture-reranker: a cross-encoder-shaped graph (input_ids, attention_mask,
  token_type_ids -> logits [batch, 1]) whose logit is the share of the
  query's word pieces that also occur in the passage, mapped to [-4, 4]: a
  lexical-overlap "cross-encoder". It reuses MiniLM's BERT tokenizer.

They are written to their own folder (default tests/fixture-models), never
to the models folder the app installs into, so a user's model list never
shows them. Usage: make_fixture_models.py [OUT_DIR]

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


def write_reranker(tokenizer_dir: Path, models: Path) -> None:
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


# Fixture colours by species name (R, G, B).
CLIP_COLOURS = {
    "budgerigar": (0.0, 1.0, 0.0),
    "sun conure": (1.0, 1.0, 0.0),
    "macaw": (0.0, 0.0, 1.0),
    "rosy-faced lovebird": (1.0, 0.0, 0.0),
    # Colour words, for the visual-description prompts.
    "green": (0.0, 1.0, 0.0),
    "yellow": (1.0, 1.0, 0.0),
    "blue": (0.0, 0.0, 1.0),
    "red": (1.0, 0.0, 0.0),
}


def wordpieces(vocab: dict, text: str) -> list:
    """Greedy longest-match BERT word pieces of lower-cased text."""
    ids = []
    for word in text.lower().replace("-", " - ").split():
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    ids.append(vocab[piece])
                    break
                end -= 1
            if end == start:
                break
            start = end
    return ids


def clip_graphs(vocab: dict):
    import numpy as np
    from onnx import numpy_helper

    f = TensorProto.FLOAT
    # Vision: mean colour per channel, then a zero fourth component.
    v = [
        helper.make_node("ReduceMean", ["pixel_values"], ["rgb"], axes=[2, 3], keepdims=0),
        const("start", [0]), const("end", [1]), const("axis1", [1]), const("zero", 0.0, f),
        helper.make_node("Slice", ["rgb", "start", "end", "axis1"], ["first"]),
        helper.make_node("Mul", ["first", "zero"], ["pad"]),
        helper.make_node("Concat", ["rgb", "pad"], ["image_embeds"], axis=1),
    ]
    vision = helper.make_graph(
        v, "kea_fixture_clip_vision",
        [helper.make_tensor_value_info("pixel_values", f, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("image_embeds", f, ["batch", 4])],
    )
    # Text: summed colour table over word pieces, plus a small bias on the fourth axis.
    table = np.zeros((len(vocab), 4), dtype=np.float32)
    pieces = {i: p for p, i in vocab.items()}
    for name, (r, g, b) in CLIP_COLOURS.items():
        for token in wordpieces(vocab, name):
            if pieces[token].lstrip("#").isalpha():
                table[token] = (r, g, b, 0.0)
    t = [
        helper.make_node("Constant", [], ["table"], value=numpy_helper.from_array(table, "table_v")),
        helper.make_node("Constant", [], ["bias"], value=numpy_helper.from_array(np.array([0, 0, 0, 0.01], dtype=np.float32), "bias_v")),
        const("axis2", [2]), const("axis1", [1]),
        helper.make_node("Gather", ["table", "input_ids"], ["colours"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=f),
        helper.make_node("Unsqueeze", ["mask", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["colours", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),
        helper.make_node("Add", ["summed", "bias"], ["text_embeds"]),
    ]
    text = helper.make_graph(
        t, "kea_fixture_clip_text",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in ["input_ids", "attention_mask"]],
        [helper.make_tensor_value_info("text_embeds", f, ["batch", 4])],
    )
    out = []
    for graph in (vision, text):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kea-fixtures")
        model.ir_version = 8
        onnx.checker.check_model(model)
        out.append(model)
    return out


def write_clip(tokenizer_dir: Path, models: Path) -> None:
    vocab = json.loads((tokenizer_dir / "tokenizer.json").read_text())["model"]["vocab"]
    vision, text = clip_graphs(vocab)
    note = "TEST FIXTURE: colour arithmetic shaped like CLIP, not a trained model"
    vdir = models / "fixture-clip-vision"
    vdir.mkdir(parents=True, exist_ok=True)
    onnx.save(vision, str(vdir / "model.onnx"))
    (vdir / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": 224},
        "do_center_crop": True, "crop_size": {"height": 224, "width": 224}, "do_rescale": True,
        "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0, 0, 0], "image_std": [1, 1, 1],
    }))
    (vdir / "kea-model.json").write_text(json.dumps({
        "id": "fixture-clip-vision", "kind": "image-embedding", "dim": 4, "max_length": 0, "pooling": "none",
        "onnx": "model.onnx", "tokenizer": "", "config": "", "special_tokens_map": "", "tokenizer_config": "",
        "preprocessor": "preprocessor_config.json", "text_model": "fixture-clip-text",
        "prompt": "{en}", "logit_scale": 10.0, "min_similarity": 0.9, "fixture": note,
    }, indent=2))
    tdir = models / "fixture-clip-text"
    tdir.mkdir(parents=True, exist_ok=True)
    onnx.save(text, str(tdir / "model.onnx"))
    for name in TOKENIZER_FILES:
        shutil.copyfile(tokenizer_dir / name, tdir / name)
    (tdir / "kea-model.json").write_text(json.dumps({
        "id": "fixture-clip-text", "kind": "text-embedding", "dim": 4, "max_length": 77, "pooling": "none",
        "onnx": "model.onnx", "tokenizer": "tokenizer.json", "config": "config.json",
        "special_tokens_map": "special_tokens_map.json", "tokenizer_config": "tokenizer_config.json", "fixture": note,
    }, indent=2))
    print(f"  wrote {vdir} and {tdir}")


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "fixture-models"
    minilm = ROOT / "models" / "all-minilm-l6-v2"
    write_reranker(minilm, out)
    write_clip(minilm, out)
