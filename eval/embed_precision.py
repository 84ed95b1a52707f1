"""The embedding model's int8 copy against float32: speed, agreement and dense retrieval on LoCoMo.

    python -m eval.embed_precision --data ../shared/data/locomo [--rounds 3]

Both precisions embed every LoCoMo turn (as `eval.locomo` writes them) and every question of
categories 1-4. Reported, per precision: one query's embedding time (median over the questions,
each round alternating the two models so a noisy machine hurts both alike), throughput (turns/s,
shortest first as the bulk import does, through `FastEmbedder.embed`: float32 in batches of 64,
int8 one text at a time), and dense-only evidence
R@10 / hit@5 / MRR; between them: the cosine of each turn's two vectors and the overlap of each
question's top 10. Results go to eval/results/embed_precision.{json,md}.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from eval.common import resolve_data_dir, settings_for
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


def _embedders() -> dict[str, Any]:
    from chronomem.config import DEFAULT_MODEL_DIM
    from chronomem.embed import FastEmbedder

    settings = settings_for(Path("."), "eval")
    made = {}
    for precision in PRECISIONS:
        embedder = FastEmbedder(settings.model_name, settings.model_path, DEFAULT_MODEL_DIM, precision=precision)
        embedder.wait()
        if embedder.precision != precision:
            raise SystemExit(f"the {precision} model did not load (it ran as {embedder.precision}): see the log")
        made[precision] = embedder
    return made


def run(data: Path, rounds: int) -> dict[str, Any]:
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
    return {
        "env": environment(),
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
        "# Embedding precision: the model's int8 copy against float32",
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
        ("The int8 copy (`chronomem/embed/quantize.py`) quantises each MatMul's weights to int8 with a scale per "
         "output channel; activations are quantised as they flow (onnxruntime's dynamic quantisation). The full "
         "read path with it is in `locomo.md` and `devmem-*.md` (their runs name the precision); "
         "`CHRONOMEM_EMBED_PRECISION=float32` reruns them with the float32 model."),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/locomo", help="folder of LoCoMo conversation files")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (each alternates the two models)")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default eval/results)")
    args = parser.parse_args(argv)
    payload = run(resolve_data_dir(args.data), max(args.rounds, 1))
    markdown = render(payload)
    paths = write_results("embed_precision", payload, markdown, args.out or RESULTS_DIR)
    print(markdown)
    print(f"written: {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
