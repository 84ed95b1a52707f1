"""The shipped model and the opt-in int8 copy against the float32 export: speed, agreement, dense retrieval.

    python -m eval.embed_precision --data ../shared/data/locomo \
        --devmem ../shared/data/devmem --devmem ../shared/data/devmem_validation [--rounds 3]

Three forms of all-MiniLM-L6-v2: `float32`, the ONNX export in ../shared/models (or CHRONOMEM_MODEL_PATH) the
others are made from; `shipped`, the model chronomem ships and runs by default (chronomem/embed/model, made by
scripts/build_model.py: weights stored as float16, computed in float32); `int8`, the shipped model's int8 copy
(CHRONOMEM_EMBED_PRECISION=int8, made into the cache folder). A form may be shipped only while it costs at most
`TOLERANCE` of every retrieval figure against float32 (issue 22); the report says which forms pass.

Every form embeds every LoCoMo turn (as `eval.locomo` writes them) and every question of categories 1-4.
Reported, per form: one query's embedding time (median over the questions, each round alternating the
forms so a noisy machine hurts all alike), throughput (turns/s, shortest first as the bulk import does,
through `FastEmbedder.embed`: float32 compute in batches of 64, int8 one text at a time), and dense-only
evidence R@10 / hit@5 / MRR; against float32: the cosine of each turn's two vectors and the overlap of each
question's top 10. On each DevMem split: dense-only hit@5 / MRR of the gold notes, for every query
with gold notes, among the notes of its project written by its time (by its `as_of` time for an
as_of query). Results go to eval/results/embed_precision.{json,md}.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.embed.packaged import manifest
from eval.common import SHARED_MODEL, read_jsonl, resolve_data_dir
from eval.locomo import SCORED, load_conversation
from eval.metrics import hit_at_k, mean, recall_at_k, reciprocal_rank
from eval.report import (
    RESULTS_DIR,
    env_lines,
    environment,
    fmt,
    md_table,
    write_results,
)

#: The forms compared: the float32 export (the reference), the shipped model, its opt-in int8 copy.
FORMS = ("float32", "shipped", "int8")
#: The forms measured against the reference.
CANDIDATES = ("shipped", "int8")
#: Largest loss of any retrieval figure a shipped form may cost against float32 (issue 22).
TOLERANCE = 0.005


def float32_folder() -> Path:
    """The float32 export: CHRONOMEM_MODEL_PATH, else ../shared/models/all-MiniLM-L6-v2-onnx."""
    import os

    configured = os.environ.get("CHRONOMEM_MODEL_PATH")
    folder = Path(configured) if configured else SHARED_MODEL
    if not (folder / "model.onnx").is_file():
        raise SystemExit(f"the float32 model is not at {folder}: set CHRONOMEM_MODEL_PATH to the ONNX export")
    return folder


def _embedders() -> dict[str, Any]:
    from chronomem.config import DEFAULT_MODEL_DIM
    from chronomem.embed import FastEmbedder

    made = {
        "float32": FastEmbedder(model_path=float32_folder(), dim=DEFAULT_MODEL_DIM, precision="float32"),
        "shipped": FastEmbedder(dim=DEFAULT_MODEL_DIM, precision="float32"),  # nothing set: the shipped model
        "int8": FastEmbedder(dim=DEFAULT_MODEL_DIM, precision="int8"),  # its int8 copy
    }
    for form, embedder in made.items():
        embedder.wait()
        expected = "int8" if form == "int8" else "float32"
        if embedder.precision != expected:
            raise SystemExit(f"the {form} model did not load (it ran as {embedder.precision}): see the log")
    if made["shipped"].source != "shipped" or made["int8"].source != "shipped":
        raise SystemExit("the shipped model is missing from chronomem/embed/model: run scripts/build_model.py")
    return made


def dense_devmem(data: Path, embedders: dict[str, Any]) -> dict[str, Any]:
    """Dense-only retrieval of DevMem's gold notes by each form: hit@5 and MRR over the queries with gold."""
    writes = read_jsonl(data / "writes.jsonl")
    queries = [q for q in read_jsonl(data / "queries.jsonl") if q.get("gold_ids")]
    ids = [w["id"] for w in writes]
    projects = np.array([w["project"] for w in writes])
    times = np.array([w["t"] for w in writes])
    out: dict[str, Any] = {"writes": len(writes), "queries": len(queries)}
    for form, embedder in embedders.items():
        vectors = np.array(embedder.embed_many([w["content"] for w in writes]), dtype=np.float32)
        asked = np.array(embedder.embed([q["query"] for q in queries]), dtype=np.float32)
        h5, rr = [], []
        for qi, q in enumerate(queries):
            until = q.get("as_of") or q["t_query"]
            rows = np.flatnonzero((projects == q["project"]) & (times <= until))
            ranked = [ids[i] for i in rows[np.argsort(-(vectors[rows] @ asked[qi]))[:10]]]
            h5.append(hit_at_k(ranked, q["gold_ids"], 5))
            rr.append(reciprocal_rank(ranked, q["gold_ids"]))
        out[form] = {"hit@5": mean(h5), "mrr": mean(rr)}
    return out


def run(data: Path, rounds: int, devmem: list[Path] | None = None) -> dict[str, Any]:
    conversations = [load_conversation(p) for p in sorted(data.glob("*.json"))]
    embedders = _embedders()
    turns = [(c.conv_id, t.dia_id, t.content()) for c in conversations for t in c.turns]
    questions = [(c.conv_id, q) for c in conversations for q in c.questions if q.category in SCORED]
    texts = [text for _, _, text in turns]
    by_length = sorted(texts, key=len)
    query_texts = [q.text for _, q in questions]

    single: dict[str, list[float]] = {f: [] for f in FORMS}
    batch: dict[str, list[float]] = {f: [] for f in FORMS}
    for _ in range(rounds):
        for form, embedder in embedders.items():
            seconds = []
            for query in query_texts:
                started = time.perf_counter()
                embedder.embed([query])
                seconds.append(time.perf_counter() - started)
            single[form].append(statistics.median(seconds) * 1000)
            started = time.perf_counter()
            embedder.embed(by_length)
            batch[form].append(len(by_length) / (time.perf_counter() - started))

    vectors = {f: np.array(e.embed(texts), dtype=np.float32) for f, e in embedders.items()}
    queries = {f: np.array(e.embed(query_texts), dtype=np.float32) for f, e in embedders.items()}
    conv_rows: dict[str, np.ndarray] = {}
    for conv_id in {c for c, _, _ in turns}:
        conv_rows[conv_id] = np.array([i for i, (c, _, _) in enumerate(turns) if c == conv_id])

    retrieval: dict[str, dict[str, float | None]] = {}
    tops: dict[str, list[list[int]]] = {}
    for form in FORMS:
        r10, h5, rr, top = [], [], [], []
        for qi, (conv_id, question) in enumerate(questions):
            rows = conv_rows[conv_id]
            scores = vectors[form][rows] @ queries[form][qi]
            ranked_rows = rows[np.argsort(-scores)[:10]]
            ranked = [turns[i][1] for i in ranked_rows]
            top.append(list(ranked_rows))
            r10.append(recall_at_k(ranked, question.evidence, 10))
            h5.append(hit_at_k(ranked, question.evidence, 5))
            rr.append(reciprocal_rank(ranked, question.evidence))
        retrieval[form] = {"recall@10": mean(r10), "hit@5": mean(h5), "mrr": mean(rr)}
        tops[form] = top
    splits = {folder.name: dense_devmem(folder, embedders) for folder in devmem or []}
    cosines, overlaps, differences, within = {}, {}, {}, {}
    for form in CANDIDATES:
        cos = np.sum(vectors["float32"] * vectors[form], axis=1)
        cosines[form] = {"median": float(np.median(cos)), "p01": float(np.quantile(cos, 0.01)), "min": float(cos.min())}
        overlaps[form] = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(tops["float32"], tops[form], strict=True)]))
        diff = {f"locomo {m}": retrieval[form][m] - retrieval["float32"][m] for m in ("recall@10", "hit@5", "mrr")}
        for name, split in splits.items():
            diff.update({f"{name} {m}": split[form][m] - split["float32"][m] for m in ("hit@5", "mrr")})
        differences[form] = diff
        within[form] = all(d >= -TOLERANCE for d in diff.values())
    return {
        "env": environment(),
        "float32_model": str(embedders["float32"].source_folder()),
        "shipped_model": str(embedders["shipped"].source_folder()),
        "shipped_precision": str(manifest(embedders["shipped"].source_folder()).get("precision")),
        "int8_model": str(embedders["int8"]._folder),
        "devmem_dense": splits,
        "differences": differences,
        "tolerance": TOLERANCE,
        "within_tolerance": within,
        "turns": len(texts),
        "questions": len(questions),
        "rounds": rounds,
        "single_query_ms": {f: statistics.median(v) for f, v in single.items()},
        "single_query_ms_rounds": single,
        "batch_turns_per_s": {f: statistics.median(v) for f, v in batch.items()},
        "batch_turns_per_s_rounds": batch,
        "dense_retrieval": retrieval,
        "cosine_to_float32": cosines,
        "top10_overlap": overlaps,
    }


def render(payload: dict[str, Any]) -> str:
    single, batch, dense = payload["single_query_ms"], payload["batch_turns_per_s"], payload["dense_retrieval"]
    names = {"float32": "float32 (the export)", "shipped": "shipped (float16 weights, float32 compute)",
             "int8": "int8 copy (opt-in)"}
    rows = [
        [names[f], fmt(single[f], 2), fmt(batch[f], 0), fmt(dense[f]["recall@10"]), fmt(dense[f]["hit@5"]), fmt(dense[f]["mrr"])]
        for f in FORMS
    ]
    for form in CANDIDATES:
        rows.append([
            f"{form} against float32 (time ratio; score difference)",
            f"{single[form] / single['float32']:.2f}×",
            f"{batch[form] / batch['float32']:.2f}×",
            *(f"{dense[form][m] - dense['float32'][m]:+.3f}" for m in ("recall@10", "hit@5", "mrr")),
        ])
    cosine_lines = [
        (f"Cosine between a turn's {form} and float32 vectors: median {c['median']:.6f}, 1st percentile "
         f"{c['p01']:.6f}, min {c['min']:.6f}; questions' dense top 10 shared with float32: "
         f"{payload['top10_overlap'][form]:.3f} on average.")
        for form, c in payload["cosine_to_float32"].items()
    ]
    return "\n".join([
        "# Embedding precision: the shipped model and the int8 copy against the float32 export",
        "",
        env_lines(payload["env"]),
        "",
        (f"{payload['turns']} LoCoMo turns, {payload['questions']} questions (categories 1–4); timings are "
         f"medians over {payload['rounds']} rounds, the three forms alternating; ratios are against float32."),
        "",
        md_table(["form", "one query ms (median)", "turns/s (bulk import)", "dense R@10", "dense hit@5", "dense MRR"], rows),
        "",
        *(line + "\n" for line in cosine_lines),
        *_devmem_lines(payload),
        *_decision_lines(payload),
        ("The shipped model (`chronomem/embed/model/`, made by `scripts/build_model.py` with the recipe of "
         "`chronomem/embed/packaged.py`) stores each weight matrix of the float32 export as float16, cast back "
         "to float32 in the graph (onnxruntime folds the casts when it loads the model), so it computes in "
         "float32: 45 MB against the export's 90 MB. The int8 copy (`chronomem/embed/quantize.py`, "
         "`CHRONOMEM_EMBED_PRECISION=int8`) quantises each MatMul's weights (cast back to float32 first) to int8 "
         "with a scale per output channel; activations are quantised as they flow (onnxruntime's dynamic "
         "quantisation). The full read path is in `locomo.md` and `devmem-*.md` (their runs name the precision)."),
        "",
    ])


def _devmem_lines(payload: dict[str, Any]) -> list[str]:
    """The DevMem table: each form's figures on each split, and each candidate's difference from float32."""
    splits = payload.get("devmem_dense") or {}
    if not splits:
        return []
    rows = [
        [name, str(split["queries"]), *(fmt(split[f][m]) for f in FORMS for m in ("hit@5", "mrr")),
         *(f"{split[f][m] - split['float32'][m]:+.3f}" for f in CANDIDATES for m in ("hit@5", "mrr"))]
        for name, split in splits.items()
    ]
    headers = ["split", "queries", *(f"{f} {m}" for f in FORMS for m in ("hit@5", "MRR")),
               *(f"{f} − float32 {m}" for f in CANDIDATES for m in ("hit@5", "MRR"))]
    return [
        "DevMem, dense only: each query with gold notes ranks the notes of its project written by its time "
        "(its `as_of` time for an as_of query) by cosine; hit@5 and MRR of the gold notes.",
        "",
        md_table(headers, rows),
        "",
    ]


def _decision_lines(payload: dict[str, Any]) -> list[str]:
    """Every retrieval difference of each candidate against the tolerance, the verdicts, and what ships."""
    lines = [
        (f"Decision rule (issue 22): a smaller form of the model may ship only if it costs at most "
         f"{payload['tolerance']} of every retrieval figure above against float32 (a negative difference is a loss)."),
        "",
    ]
    for form in CANDIDATES:
        diffs = payload["differences"][form]
        worst = min(diffs.items(), key=lambda kv: kv[1])
        verdict = "within" if payload["within_tolerance"][form] else "OUTSIDE"
        lines += [
            (f"- **{form}** minus float32: worst {worst[1]:+.4f} ({worst[0]}); tolerance −{payload['tolerance']}: "
             f"**{verdict}**. " + "; ".join(f"{k} {v:+.4f}" for k, v in diffs.items()) + "."),
        ]
    shipped = "within" if payload["within_tolerance"]["shipped"] else "OUTSIDE"
    lines += [
        "",
        (f"Shipped: the `{payload.get('shipped_precision')}` form (float32 compute), {shipped} the tolerance, and the "
         "default; the int8 copy stays opt-in (`CHRONOMEM_EMBED_PRECISION=int8`) "
         + ("although it is within the tolerance too." if payload["within_tolerance"]["int8"]
            else "because it is outside the tolerance.")),
        "",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/locomo", help="folder of LoCoMo conversation files")
    parser.add_argument("--devmem", action="append", default=[],
                        help="a DevMem split folder (repeatable: ../shared/data/devmem, ../shared/data/devmem_validation)")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (each alternates the three forms)")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default eval/results)")
    args = parser.parse_args(argv)
    payload = run(resolve_data_dir(args.data), max(args.rounds, 1), [resolve_data_dir(d) for d in args.devmem])
    markdown = render(payload)
    paths = write_results("embed_precision", payload, markdown, args.out or RESULTS_DIR)
    print(markdown)
    print(f"written: {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
