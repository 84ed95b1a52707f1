"""The embedding model the package ships: where it is, what its manifest says, and the recipe that makes it.

`packaged_model_dir()` is all-MiniLM-L6-v2 inside the package (chronomem/embed/model/, made by
scripts/build_model.py with `store_weights_float16` below, carried by pyproject's package-data): the default
embedder loads it with nothing set, offline, writing nothing. Its `chronomem-model.json` says what it is.

Its weights are *stored* as float16 and *computed* in float32: every weight matrix of the float32 ONNX
export is a float16 initializer followed by a Cast to float32 under the matrix's own name, so the graph is
otherwise the export's. onnxruntime folds those Casts when the session loads (constant folding, on by default
in fastembed's sessions), so the model runs exactly as the float32 one does, on weights rounded to float16
(a relative error of at most 2^-11 each): its vectors keep a cosine of 0.99999 or more to the float32
export's, and it is half the size on disk (45 MB against 90 MB; the int8 form was 59 MB, its embedding table
still float32). Retrieval is unchanged (eval/results/embed_precision.md). Biases and LayerNorm weights,
a few kB in all, stay float32.

`float32_weights` undoes the storage (each Cast becomes its float32 initializer again): what the opt-in int8
copy (`embed/quantize.py`) quantises, since the quantiser only quantises a MatMul whose weights are an
initializer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MODEL_FILE = "model.onnx"
#: The file beside a model saying what it is (model, dim, precision, recipe, checksums): scripts/build_model.py.
MANIFEST = "chronomem-model.json"

#: A manifest's precision for a model whose weights are stored as float16 and computed in float32 (the shipped one).
FLOAT16_WEIGHTS = "float16-weights"
#: A manifest's precision for a model that is int8 already (an int8 export, or the int8 model chronomem once shipped).
INT8_MODEL = "int8"
#: Changes whenever the way the shipped model is made changes.
RECIPE = "float16-weights-cast-to-float32-1"
#: Suffix of a float16 initializer's name; the Cast that follows it gives the float32 matrix its original name.
_STORED = "__float16"


def packaged_model_dir() -> Path:
    """The all-MiniLM-L6-v2 shipped inside the package (may be absent in a checkout without it)."""
    return Path(__file__).resolve().parent / "model"


def manifest(folder: Path) -> dict[str, object]:
    """The folder's chronomem-model.json, or {} when it has none or it does not read."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_int8_model(folder: Path) -> bool:
    """Does the folder's manifest say its model is int8 already (so it runs as it is, never quantised again)?"""
    return manifest(folder).get("precision") == INT8_MODEL


def store_weights_float16(model: Path, out: Path) -> None:
    """Write the float32 ONNX `model` to `out` with every weight matrix stored as float16 and cast back to float32
    in the graph (the recipe RECIPE names; deterministic). Raises ValueError when a weight does not fit float16."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = onnx.load(str(model))
    kept, casts = [], []
    for initializer in graph.graph.initializer:
        if initializer.data_type != TensorProto.FLOAT or len(initializer.dims) < 2:
            kept.append(initializer)
            continue
        weights = numpy_helper.to_array(initializer)
        if float(np.abs(weights).max(initial=0.0)) >= float(np.finfo(np.float16).max):
            raise ValueError(f"{initializer.name} holds values beyond float16's range")
        stored = numpy_helper.from_array(weights.astype(np.float16), initializer.name + _STORED)
        kept.append(stored)
        casts.append(helper.make_node("Cast", [stored.name], [initializer.name], to=TensorProto.FLOAT,
                                      name=initializer.name + "__to_float32"))
    nodes = [*casts, *graph.graph.node]
    del graph.graph.initializer[:]
    graph.graph.initializer.extend(kept)
    del graph.graph.node[:]
    graph.graph.node.extend(nodes)
    onnx.checker.check_model(graph)
    onnx.save(graph, str(out))


def float32_weights(model: Path) -> Any:
    """The ONNX graph (an onnx.ModelProto) of `model` with its float16-stored weights made float32 initializers
    again (the values are the float16 ones, exactly); None when it stores none (a float32 export as it is)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    graph = onnx.load(str(model))
    stored = {i.name: i for i in graph.graph.initializer if i.name.endswith(_STORED) and i.data_type == TensorProto.FLOAT16}
    if not stored:
        return None
    restored, nodes = [], []
    for node in graph.graph.node:
        source = node.input[0] if node.op_type == "Cast" and len(node.input) == 1 else None
        if source in stored:
            restored.append(numpy_helper.from_array(numpy_helper.to_array(stored[source]).astype(np.float32), node.output[0]))
        else:
            nodes.append(node)
    kept = [i for i in graph.graph.initializer if i.name not in stored]
    del graph.graph.initializer[:]
    graph.graph.initializer.extend([*kept, *restored])
    del graph.graph.node[:]
    graph.graph.node.extend(nodes)
    return graph
