"""Referring-expression grounding benchmark in the spirit of Nr3D (KeySG's Table IV).

Usage::

    .venv/bin/python benchmarks/grounding_bench.py                    # deterministic methods on every
                                                                      # expression + a stratified LLM subset
    .venv/bin/python benchmarks/grounding_bench.py --llm-per-cell 0   # no LLM
    .venv/bin/python benchmarks/grounding_bench.py --full             # LLM on every expression (slow)

Expressions are generated from each scene's ground truth for targets with same-class distractors in their
room: spatial ("the chair next to the table in the kitchen", "the mug on the table ..."), colour ("the red
chair ...") and size ("the big cabinet ..."), each with the target class and without it ("the red object
..."), kept only when unambiguous. A prediction (an object of the *built* graph) is correct when the
ground-truth object its 3D box overlaps most is the target, with IoU >= 0.25. Methods: ``flat``,
``keysg-embed-rules`` (no LLM), and from one LLM run per expression ``keysg-embed-llm`` (LLM decomposition,
retriever's best) and ``keysg-rag-llm`` (the LLM picks among the retrieved candidates). The LLM runs on
``--llm-per-cell`` expressions per (category, with/without class) cell of the first scene unless ``--full``;
rows marked "(LLM subset)" are the deterministic methods on exactly those expressions. The report and the
run's conditions go to ``benchmarks/results/grounding_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench_record import BenchRecord, add_record_argument
from scenerag.eval.retrieval_bench import DEFAULT_SCENES, RetrievalBenchConfig, run_retrieval_benchmark


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenes", type=int, default=len(DEFAULT_SCENES))
    parser.add_argument(
        "--llm-per-cell", type=int, default=1, help="LLM expressions per (category, class) cell"
    )
    parser.add_argument("--llm-max", type=int, help="at most this many LLM expressions per scene")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--model", default="local")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    add_record_argument(parser)
    args = parser.parse_args()
    use_llm = args.full or args.llm_per_cell > 0
    record = BenchRecord(
        args,
        perception="oracle (scenes rendered and built offline with BuildConfig.offline())",
        llm=f"live ({args.model}) on the LLM rows" if use_llm else "none",
    )
    from scenerag.retrieval.embeddings import make_embedder

    model = None
    if use_llm:
        from scenerag.llm import make_chat_model

        model = make_chat_model(args.model)
    config = RetrievalBenchConfig(
        scenes=DEFAULT_SCENES[: args.scenes],
        tables=("grounding",),
        llm_expressions_per_cell=args.llm_per_cell,
        llm_max_expressions=args.llm_max,
        full=args.full,
        seed=args.seed,
    )
    report = run_retrieval_benchmark(config, make_embedder("minilm", threads=1), model, progress=log)
    for r in report.grounding:
        if "llm" in r.method:
            log(f"{r.method}: {r.text!r} -> {r.predicted} {'ok' if r.correct else 'wrong'} (IoU {r.iou:.2f})")
    print()
    print(report.to_text())
    record.results = report.to_json()
    record.write()
    if args.out:
        Path(args.out).write_text(json.dumps(report.to_json(), indent=1, default=str))


if __name__ == "__main__":
    main()
