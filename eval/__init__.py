"""Benchmarks for chronomem: LoCoMo evidence retrieval and DevMem coding-agent memory.

`python -m eval.locomo` and `python -m eval.devmem [--agent-facts]` replay a data set
from ../shared/data through the real tools and write JSON + Markdown to eval/results/.
Modules: `metrics` (pure scoring), `ablation` (single-signal and fused rankers),
`common` (stores, upkeep, timing), `report` (environment and tables).
"""
