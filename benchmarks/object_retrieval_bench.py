"""Object retrieval benchmark in the HM3DSem protocol of KeySG's Table III, plus the retrieval latency bar.

Usage::

    .venv/bin/python benchmarks/object_retrieval_bench.py                  # deterministic methods on every
                                                                           # query + LLM subset + latency
    .venv/bin/python benchmarks/object_retrieval_bench.py --llm-per-kind 0 # no LLM at all
    .venv/bin/python benchmarks/object_retrieval_bench.py --full           # LLM on every query (slow)
    .venv/bin/python benchmarks/object_retrieval_bench.py --latency-only

Scenes: ``DEFAULT_SCENES`` (three synthetic multi-floor buildings), rendered and built offline once and cached
in ``~/.cache/scenerag/bench``. Queries: every (room, object) and (floor, room, object) combination of the
ground truth ("the oven in the kitchen", "the toilet in the bathroom on the ground floor"). Methods:

- ``flat``: the whole query embedded and matched against every object (no hierarchy);
- ``keysg-embed-rules``: rule-based decomposition + top-down hierarchical retrieval (no LLM);
- ``keysg-embed-llm``: LLM decomposition + hierarchical retrieval (the paper's "w/o RAG");
- ``keysg-rag-llm``: LLM decomposition + retrieval + LLM selection among the candidates (full KeySG RAG).

The two LLM variants come from the same run per query (same decomposition); they run on ``--llm-per-kind``
queries per kind of the first scene (seeded sample) unless ``--full``; rows marked "(LLM subset)" are the
deterministic methods on exactly those queries. Recall@K (K = 1, 5, 10) at 3D-box IoU thresholds 0.0
(overlap), 0.10, 0.50 between the retrieved built object and any ground-truth target.

Latency: a synthetic KeySG-shaped graph of ``--objects`` objects and ``--keyframes`` keyframes (10 floors x 20
rooms, no rendering) is indexed once (cached); each rule-decomposed query is retrieved with precomputed
query vectors (retrieval only, the quality bar: p50 <= 20 ms) and end to end with the embedding of texts the
embedder has not cached. Wall and thread-CPU p50/p95 are printed (the machine is shared: CPU time is the cost
on a quiet core). The report and the run's conditions go to ``benchmarks/results/object_retrieval_bench.json``
(``--record``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from bench_record import BenchRecord, add_record_argument
from scenerag.eval.retrieval_bench import (
    RetrievalBenchConfig,
    format_latency,
    run_latency_bench,
    run_retrieval_benchmark,
)


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def latency(args: argparse.Namespace, embedder: Any) -> dict[str, Any]:
    result = run_latency_bench(
        embedder,
        objects=args.objects,
        keyframes=args.keyframes,
        queries=args.latency_queries,
        repeats=args.repeats,
        seed=args.seed,
        progress=log,
    )
    print()
    print(format_latency(result))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenes", type=int, default=3, help="how many of the default scenes")
    parser.add_argument("--llm-per-kind", type=int, default=3, help="LLM queries per kind on the first scene")
    parser.add_argument("--full", action="store_true", help="LLM on every query of every scene")
    parser.add_argument("--model", default="local", help="chat model spec (make_chat_model)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency-only", action="store_true")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--keyframes", type=int, default=5_000)
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="write the report (rows and records) as JSON here")
    add_record_argument(parser)
    args = parser.parse_args()
    use_llm = not args.latency_only and (args.full or args.llm_per_kind > 0)
    record = BenchRecord(
        args,
        perception="none (latency only)"
        if args.latency_only
        else "oracle (scenes rendered and built offline with BuildConfig.offline())",
        llm=f"live ({args.model}) on the LLM rows" if use_llm else "none",
        latency="synthetic KeySG-shaped building, query vectors precomputed (retrieval only)",
    )
    from scenerag.eval.retrieval_bench import DEFAULT_SCENES
    from scenerag.retrieval.embeddings import make_embedder

    embedder = make_embedder("minilm", threads=1)
    out: dict[str, Any] = {}
    if not args.latency_only:
        model = None
        if use_llm:
            from scenerag.llm import make_chat_model

            model = make_chat_model(args.model)
        config = RetrievalBenchConfig(
            scenes=DEFAULT_SCENES[: args.scenes],
            tables=("objects",),
            llm_queries_per_kind=args.llm_per_kind,
            full=args.full,
            seed=args.seed,
        )
        report = run_retrieval_benchmark(config, embedder, model, progress=log)
        print()
        print(report.to_text())
        out["report"] = report.to_json()
    if not args.no_latency:
        out["latency"] = latency(args, embedder)
    record.results = out
    record.write()
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
