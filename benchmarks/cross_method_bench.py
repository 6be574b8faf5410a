"""Cross-method benchmark: the same scene and questions for every retrieval strategy.

Usage::

    .venv/bin/python benchmarks/cross_method_bench.py                 # local model, 1 question per type
    .venv/bin/python benchmarks/cross_method_bench.py --per-type 3 --methods cypher,keysg-rag
    .venv/bin/python benchmarks/cross_method_bench.py --full --model openai:gpt-4o-mini

(``scenerag bench retrieval cross`` runs the same code.) Scene: the small synthetic building
(``SMALL_SCENE``: 2 floors, 4 rooms) rendered and built offline, so the whole serialised graph still fits the
local model's context (``--full`` adds the first default scene, where it may not). Questions
(``cross_method_questions``): lookup ("Which object is the oven in the kitchen?"), floor-room-object, count,
synonym ("couch" for a sofa), attribute (colour), room-of, floor-of and nearest, with answers in the built
graph's symbols. Methods (``CROSS_METHODS``):

- ``cypher``: the agentic Cypher agent with the schema (``CypherAgent``);
- ``hybrid-cypher``: the same plus a ``vector_search(text, label)`` tool (``HybridCypherAgent``);
- ``keysg-rag``: KeySG hierarchical RAG (LLM decomposition, top-down retrieval, answer from the bundle);
- ``subgraph-rag``: EmbodiedRAG-style entity pre-retrieval and induced subgraph (``SubgraphRAGAgent``);
- ``context``: the whole serialised graph in the prompt (``ContextWindowAgent``, one correction allowed).

Prints one line per run, then success / input tokens / latency per method and success per question type
with the winner of each type. ``--out`` appends every record as a JSON line as runs finish; the report and
the run's conditions go to ``benchmarks/results/cross_method_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from bench_record import BenchRecord, add_record_argument
from scenerag.eval.retrieval_bench import (
    CROSS_METHODS,
    DEFAULT_SCENES,
    QUESTION_TYPES,
    SMALL_SCENE,
    CrossMethodConfig,
    run_cross_method_bench,
)
from scenerag.eval.runner import Record


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--methods", default=",".join(CROSS_METHODS))
    parser.add_argument("--per-type", type=int, default=1)
    parser.add_argument("--types", default=",".join(QUESTION_TYPES))
    parser.add_argument(
        "--full", action="store_true", help="3 questions per type on the small and first default scene"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="append JSON-lines records here")
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(
        args,
        perception="oracle (scenes rendered and built offline with BuildConfig.offline())",
        llm=f"live ({args.model})",
        model=args.model,
    )
    records: list[dict] = []

    from scenerag.llm import make_chat_model
    from scenerag.retrieval.embeddings import make_embedder

    config = CrossMethodConfig(
        scenes=(SMALL_SCENE, DEFAULT_SCENES[0]) if args.full else (SMALL_SCENE,),
        methods=tuple(m.strip() for m in args.methods.split(",") if m.strip()),
        types=tuple(t.strip() for t in args.types.split(",") if t.strip()),
        per_type=3 if args.full else args.per_type,
        seed=args.seed,
    )

    def append(scene: str, run: Record) -> None:
        records.append({"scene": scene, **asdict(run)})
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(json.dumps(records[-1], default=str) + "\n")

    report = run_cross_method_bench(
        config,
        make_chat_model(args.model),
        make_embedder("minilm", threads=1),
        progress=log,
        on_record=append,
    )
    print()
    print(report.to_text())
    record.results["report"] = report.to_text()
    record.results["records"] = records
    record.write()


if __name__ == "__main__":
    main()
