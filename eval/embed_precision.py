"""The shipped int8 model against float32: speed, agreement and dense retrieval on LoCoMo and DevMem.

    python -m eval.embed_precision --data ../shared/data/locomo \
        --devmem ../shared/data/devmem --devmem ../shared/data/devmem_validation [--rounds 3]

The int8 side is the model chronomem ships (chronomem/embed/model, made by scripts/build_model.py);
the float32 side is its source, the ONNX export in ../shared/models (or CHRONOMEM_MODEL_PATH). The
shipped form is kept only while it costs at most `TOLERANCE` of any retrieval figure.

Both precisions embed every LoCoMo turn (as `eval.locomo` writes them) and every question of
categories 1-4. Reported, per precision: one query's embedding time (median over the questions,
each round alternating the two models so a noisy machine hurts both alike), throughput (turns/s,
shortest first as the bulk import does, through `FastEmbedder.embed`: float32 in batches of 64,
int8 one text at a time), and dense-only evidence
R@10 / hit@5 / MRR; between them: the cosine of each turn's two vectors and the overlap of each
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

PRECISIONS = ("float32", "int8")
#: Largest loss of any retrieval figure the shipped int8 form may cost against float32 (issue 22).
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
        "int8": FastEmbedder(dim=DEFAULT_MODEL_DIM),  # nothing set: the shipped model
    }
    for precision, embedder in made.items():
        embedder.wait()
        if embedder.precision != precision:
            raise SystemExit(f"the {precision} model did not load (it ran as {embedder.precision}): see the log")
    if made["int8"].source != "shipped":
        raise SystemExit("the shipped model is missing from chronomem/embed/model: run scripts/build_model.py")
    return made


def dense_devmem(data: Path, embedders: dict[str, Any]) -> dict[str, Any]:
    """Dense-only retrieval of DevMem's gold notes under each precision: hit@5 and MRR over the queries with gold."""
    writes = read_jsonl(data / "writes.jsonl")
    queries = [q for q in read_jsonl(data / "queries.jsonl") if q.get("gold_ids")]
    ids = [w["id"] for w in writes]
    projects = np.array([w["project"] for w in writes])
    times = np.array([w["t"] for w in writes])
    out: dict[str, Any] = {"writes": len(writes), "queries": len(queries)}
    for precision, embedder in embedders.items():
        vectors = np.array(embedder.embed_many([w["content"] for w in writes]), dtype=np.float32)
        asked = np.array(embedder.embed([q["query"] for q in queries]), dtype=np.float32)
        h5, rr = [], []
        for qi, q in enumerate(queries):
            until = q.get("as_of") or q["t_query"]
            rows = np.flatnonzero((projects == q["project"]) & (times <= until))
            ranked = [ids[i] for i in rows[np.argsort(-(vectors[rows] @ asked[qi]))[:10]]]
            h5.append(hit_at_k(ranked, q["gold_ids"], 5))
            rr.append(reciprocal_rank(ranked, q["gold_ids"]))
        out[precision] = {"hit@5": mean(h5), "mrr": mean(rr)}
    return out


def run(data: Path, rounds: int, devmem: list[Path] | None = None) -> dict[str, Any]:
    conversations = [load_conversation(p) for p in sorted(data.glob("*.json"))]
    embedders = _embedders()
    turns = [(c.conv_id, t.dia_id, t.content()) for c in conversations for t in c.turns]
    questions = [(c.conv_id, q) for c in conversations for q in c.questions if q.category in SCORED]
    texts = [text for _, _, text in turns]
    by_length = sorted(texts, key=len)
    query_texts = [q.text for _, q in questions]

    single: dict[str, list[float]] = {p: [] for p in PRECISIONS}
    batch: dict[str, list[float]] = {p: [] for p in PRECISIONS}
    for _ in range(rounds):
        for precision, embedder in embedders.items():
            seconds = []
            for query in query_texts:
                started = time.perf_counter()
                embedder.embed([query])
                seconds.append(time.perf_counter() - started)
            single[precision].append(statistics.median(seconds) * 1000)
            started = time.perf_counter()
            embedder.embed(by_length)
            batch[precision].append(len(by_length) / (time.perf_counter() - started))

    vectors = {p: np.array(e.embed(texts), dtype=np.float32) for p, e in embedders.items()}
    queries = {p: np.array(e.embed(query_texts), dtype=np.float32) for p, e in embedders.items()}
    conv_rows: dict[str, np.ndarray] = {}
    for conv_id in {c for c, _, _ in turns}:
        conv_rows[conv_id] = np.array([i for i, (c, _, _) in enumerate(turns) if c == conv_id])

    retrieval: dict[str, dict[str, float | None]] = {}
    tops: dict[str, list[list[int]]] = {}
    for precision in PRECISIONS:
        r10, h5, rr, top = [], [], [], []
        for qi, (conv_id, question) in enumerate(questions):
            rows = conv_rows[conv_id]
            scores = vectors[precision][rows] @ queries[precision][qi]
            ranked_rows = rows[np.argsort(-scores)[:10]]
            ranked = [turns[i][1] for i in ranked_rows]
            top.append(list(ranked_rows))
            r10.append(recall_at_k(ranked, question.evidence, 10))
            h5.append(hit_at_k(ranked, question.evidence, 5))
            rr.append(reciprocal_rank(ranked, question.evidence))
        retrieval[precision] = {"recall@10": mean(r10), "hit@5": mean(h5), "mrr": mean(rr)}
        tops[precision] = top
    cosines = np.sum(vectors["float32"] * vectors["int8"], axis=1)
    overlap = [len(set(a) & set(b)) / 10 for a, b in zip(tops["float32"], tops["int8"], strict=True)]
    splits = {folder.name: dense_devmem(folder, embedders) for folder in devmem or []}
    differences = {f"locomo {m}": retrieval["int8"][m] - retrieval["float32"][m] for m in ("recall@10", "hit@5", "mrr")}
    for name, split in splits.items():
        differences.update({f"{name} {m}": split["int8"][m] - split["float32"][m] for m in ("hit@5", "mrr")})
    return {
        "env": environment(),
        "int8_model": str(embedders["int8"].source_folder()),
        "float32_model": str(embedders["float32"].source_folder()),
        "devmem_dense": splits,
        "differences": differences,
        "tolerance": TOLERANCE,
        "within_tolerance": all(d >= -TOLERANCE for d in differences.values()),
        "turns": len(texts),
        "questions": len(questions),
        "rounds": rounds,
        "single_query_ms": {p: statistics.median(v) for p, v in single.items()},
        "single_query_ms_rounds": single,
        "batch_turns_per_s": {p: statistics.median(v) for p, v in batch.items()},
        "batch_turns_per_s_rounds": batch,
        "dense_retrieval": retrieval,
        "cosine_int8_float32": {"median": float(np.median(cosines)), "p01": float(np.quantile(cosines, 0.01)),
                                "min": float(cosines.min())},
        "top10_overlap": float(np.mean(overlap)),
    }


def render(payload: dict[str, Any]) -> str:
    single, batch, dense = payload["single_query_ms"], payload["batch_turns_per_s"], payload["dense_retrieval"]
    rows = [
        [p, fmt(single[p], 2), fmt(batch[p], 0), fmt(dense[p]["recall@10"]), fmt(dense[p]["hit@5"]), fmt(dense[p]["mrr"])]
        for p in PRECISIONS
    ]
    rows.append([
        "int8 against float32 (time ratio; score difference)",
        f"{single['int8'] / single['float32']:.2f}×",
        f"{batch['int8'] / batch['float32']:.2f}×",
        *(f"{dense['int8'][m] - dense['float32'][m]:+.3f}" for m in ("recall@10", "hit@5", "mrr")),
    ])
    cos = payload["cosine_int8_float32"]
    return "\n".join([
        "# Embedding precision: the shipped int8 model against float32",
        "",
        env_lines(payload["env"]),
        "",
        (f"{payload['turns']} LoCoMo turns, {payload['questions']} questions (categories 1–4); "
         f"medians over {payload['rounds']} rounds, the two models alternating."),
        "",
        md_table(["precision", "one query ms (median)", "turns/s (bulk import)", "dense R@10", "dense hit@5", "dense MRR"], rows),
        "",
        (f"Cosine between a turn's int8 and float32 vectors: median {cos['median']:.4f}, 1st percentile "
         f"{cos['p01']:.4f}, min {cos['min']:.4f}. Questions' dense top 10 shared by both: "
         f"{payload['top10_overlap']:.3f} on average."),
        "",
        *_devmem_lines(payload),
        ("The shipped model (`chronomem/embed/model/`, made by `scripts/build_model.py` with the recipe of "
         "`chronomem/embed/quantize.py`) quantises each MatMul's weights to int8 with a scale per "
         "output channel; activations are quantised as they flow (onnxruntime's dynamic quantisation). The full "
         "read path with it is in `locomo.md` and `devmem-*.md` (their runs name the precision); "
         "`CHRONOMEM_EMBED_PRECISION=float32` reruns them with the float32 model."),
        "",
    ])


def _devmem_lines(payload: dict[str, Any]) -> list[str]:
    """The DevMem table, then every retrieval difference against the tolerance, with the verdict."""
    lines: list[str] = []
    splits = payload.get("devmem_dense") or {}
    if splits:
        rows = [
            [name, str(split["queries"]), *(fmt(split[p][m]) for p in PRECISIONS for m in ("hit@5", "mrr")),
             *(f"{split['int8'][m] - split['float32'][m]:+.3f}" for m in ("hit@5", "mrr"))]
            for name, split in splits.items()
        ]
        lines += [
            "DevMem, dense only: each query with gold notes ranks the notes of its project written by its time "
            "(its `as_of` time for an as_of query) by cosine; hit@5 and MRR of the gold notes.",
            "",
            md_table(["split", "queries", "float32 hit@5", "float32 MRR", "int8 hit@5", "int8 MRR",
                      "difference hit@5", "difference MRR"], rows),
            "",
        ]
    worst = min(payload["differences"].items(), key=lambda kv: kv[1])
    verdict = "within" if payload["within_tolerance"] else "OUTSIDE"
    lines += [
        (f"Retrieval difference, shipped int8 minus float32 (a negative number is a loss): worst {worst[1]:+.4f} "
         f"({worst[0]}); tolerance −{payload['tolerance']}: **{verdict}**. "
         + "; ".join(f"{k} {v:+.4f}" for k, v in payload["differences"].items()) + "."),
        "",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/locomo", help="folder of LoCoMo conversation files")
    parser.add_argument("--devmem", action="append", default=[],
                        help="a DevMem split folder (repeatable: ../shared/data/devmem, ../shared/data/devmem_validation)")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (each alternates the two models)")
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
