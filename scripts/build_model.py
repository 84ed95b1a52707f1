"""Make the embedding model chronomem ships: all-MiniLM-L6-v2 with float16-stored weights, with its tokenizer.

    python scripts/build_model.py [--source ../shared/models/all-MiniLM-L6-v2-onnx] [--out chronomem/embed/model]

Reads the float32 ONNX export (model.onnx, tokenizer.json, config.json, special_tokens_map.json,
tokenizer_config.json), stores its weight matrices as float16 with the recipe of
`chronomem/embed/packaged.py` (each cast back to float32 in the graph, so the model computes in float32:
45 MB instead of 90 MB, vectors within cosine 0.99999 of the export's) and writes the result, the tokenizer
files and `chronomem-model.json` (what it is, how and from what it was made) into the package folder, which
pyproject's package-data carries into every install. Deterministic: the same source gives the same bytes.

`eval/embed_precision.py` measures what the shipped form and the opt-in int8 copy cost against the float32
export (LoCoMo and DevMem dev and validation); `eval/results/embed_precision.md` has the figures. The shipped
form may cost at most 0.005 of any retrieval figure (issue 22).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from chronomem.config import DEFAULT_MODEL, DEFAULT_MODEL_DIM  # noqa: E402
from chronomem.embed.packaged import FLOAT16_WEIGHTS, MANIFEST, MODEL_FILE, RECIPE, store_weights_float16  # noqa: E402

#: The tokenizer and config files fastembed reads beside model.onnx (vocab.txt is inside tokenizer.json).
SIDE_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")


def default_source() -> Path:
    """CHRONOMEM_SHARED's model, else ../shared's (beside the checkout, or beside its worktree folder)."""
    import os

    bases = [Path(os.environ["CHRONOMEM_SHARED"])] if os.environ.get("CHRONOMEM_SHARED") else []
    bases += [REPO.parent / "shared", REPO.parent.parent / "shared"]
    for base in bases:
        if (base / "models" / "all-MiniLM-L6-v2-onnx" / MODEL_FILE).is_file():
            return base / "models" / "all-MiniLM-L6-v2-onnx"
    return bases[0] / "models" / "all-MiniLM-L6-v2-onnx"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build(source: Path, out: Path) -> dict[str, object]:
    missing = [name for name in (MODEL_FILE, *SIDE_FILES) if not (source / name).is_file()]
    if missing:
        raise SystemExit(f"{source} lacks {', '.join(missing)}: pass --source with the float32 ONNX export")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        made = Path(tmp) / MODEL_FILE
        store_weights_float16(source / MODEL_FILE, made)
        shutil.copyfile(made, out / MODEL_FILE)
    for name in SIDE_FILES:
        shutil.copyfile(source / name, out / name)
    manifest = {
        "model": DEFAULT_MODEL,
        "dim": DEFAULT_MODEL_DIM,
        "precision": FLOAT16_WEIGHTS,
        "computes_in": "float32",
        "recipe": RECIPE,
        "source_model_sha256": sha256(source / MODEL_FILE),
        "model_sha256": sha256(out / MODEL_FILE),
        "made_by": "scripts/build_model.py",
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=default_source(),
                        help="folder of the float32 ONNX export (default ../shared/models/all-MiniLM-L6-v2-onnx)")
    parser.add_argument("--out", type=Path, default=REPO / "chronomem" / "embed" / "model",
                        help="where to write the shipped model (default chronomem/embed/model)")
    args = parser.parse_args(argv)
    manifest = build(args.source, args.out)
    size = (args.out / MODEL_FILE).stat().st_size / 1e6
    print(f"wrote {args.out} ({size:.1f} MB model.onnx, sha256 {str(manifest['model_sha256'])[:12]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
