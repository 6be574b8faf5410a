"""Cross-method benchmark: the same scene and questions for every retrieval strategy.

Usage::

    .venv/bin/python benchmarks/cross_method_bench.py                 # local model, 1 question per type
    .venv/bin/python benchmarks/cross_method_bench.py --per-type 3 --methods cypher,keysg-rag
    .venv/bin/python benchmarks/cross_method_bench.py --full --model openai:gpt-4o-mini

Scene: the small synthetic building (``SMALL_SCENE``: 2 floors, 8 rooms) rendered and built offline, so the
whole serialised graph still fits the local model's 8k context (``--full`` uses the first default scene as
well, where it does not). Questions (``cross_method_questions``): lookup ("Which object is the oven in the
kitchen?"), floor-room-object, count, synonym ("couch" for a sofa), attribute (colour), room-of, floor-of and
nearest, with answers in the built graph's symbols. Methods, each an agent with ``run() -> AgentResult``:

- ``cypher``: the agentic Cypher agent with the schema (``CypherAgent``);
- ``hybrid-cypher``: the same plus a ``vector_search(text, label)`` tool (``HybridCypherAgent``);
- ``keysg-rag``: KeySG hierarchical RAG (LLM decomposition, top-down retrieval, answer from the bundle);
- ``subgraph-rag``: EmbodiedRAG-style entity pre-retrieval and induced subgraph (``SubgraphRAGAgent``);
- ``context``: the whole serialised graph in the prompt (``ContextWindowAgent``, one correction allowed).

Prints one line per run, then success / input tokens / latency per method and success per question type
with the winner of each type. ``--out`` writes every record as JSON lines (appended as runs finish).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from scenerag.eval.retrieval_bench import (
    DEFAULT_SCENES,
    QUESTION_TYPES,
    SMALL_SCENE,
    SubgraphRAGAgent,
    bench_cache_dir,
    cross_method_questions,
    format_per_type,
    prepare_scene,
    run_cross_method,
)
from scenerag.eval.runner import markdown_table, summarize

METHODS: tuple[str, ...] = ("cypher", "hybrid-cypher", "keysg-rag", "subgraph-rag", "context")


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def make_agents(
    methods: list[str], model: Any, graph: Any, store: Any, embedder: Any, index_path: Path
) -> dict[str, Any]:
    from scenerag.agents import CypherAgent, CypherAgentConfig
    from scenerag.agents.baselines import ContextWindowAgent, ContextWindowConfig
    from scenerag.agents.hierarchical_rag import HierarchicalRAG
    from scenerag.agents.hybrid_cypher import HybridCypherAgent, HybridCypherConfig
    from scenerag.retrieval.hierarchical import HierarchicalIndex

    agents: dict[str, Any] = {}
    for name in methods:
        if name == "cypher":
            agents[name] = CypherAgent(model, store, CypherAgentConfig(mode="agentic", max_tool_calls=4))
        elif name == "hybrid-cypher":
            agents[name] = HybridCypherAgent.from_graph(
                model, store, graph, embedder, HybridCypherConfig(max_tool_calls=4)
            )
        elif name == "keysg-rag":
            agents[name] = HierarchicalRAG(
                model, HierarchicalIndex.open_or_build(graph, index_path, embedder)
            )
        elif name == "subgraph-rag":
            agents[name] = SubgraphRAGAgent(model, graph, embedder)
        elif name == "context":
            agents[name] = ContextWindowAgent(
                model, graph, ContextWindowConfig(mode="agentic", max_corrections=1)
            )
        else:
            raise SystemExit(f"unknown method {name!r}; use {', '.join(METHODS)}")
    return agents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--per-type", type=int, default=1)
    parser.add_argument("--types", default=",".join(QUESTION_TYPES))
    parser.add_argument(
        "--full", action="store_true", help="3 questions per type on the small and first default scene"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="append JSON-lines records here")
    args = parser.parse_args()

    from scenerag.llm import make_chat_model
    from scenerag.retrieval.embeddings import make_embedder
    from scenerag.retrieval.hierarchical import index_dir
    from scenerag.store import open_store

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    types = {t.strip() for t in args.types.split(",") if t.strip()}
    per_type = 3 if args.full else args.per_type
    scenes = [SMALL_SCENE, DEFAULT_SCENES[0]] if args.full else [SMALL_SCENE]
    model = make_chat_model(args.model)
    embedder = make_embedder("minilm", threads=1)
    records = []
    for spec in scenes:
        scene = prepare_scene(spec, progress=log)
        graph = scene.graph
        questions = [
            q for q in cross_method_questions(graph, seed=args.seed, per_type=per_type) if q.tags[0] in types
        ]
        log(
            f"{spec.name}: {graph.summary()}; {len(questions)} questions; methods {methods}; model {model.name}"
        )
        for q in questions:
            log(f"  [{q.tags[0]}] {q.question} -> {q.solution}")
        store = open_store(bench_cache_dir() / spec.key() / "db")
        store.load(graph)
        try:
            agents = make_agents(methods, model, graph, store, embedder, index_dir(scene.build_dir))
            if "context" in agents:
                log(
                    f"context prompt: {agents['context'].prompt_tokens()} tokens (window {model.context_window})"
                )

            # method by method, so a local model reuses its cached prompt prefix across questions
            for name, agent in agents.items():
                for q in questions:
                    (record,) = run_cross_method({name: agent}, [q], model_name=model.name, progress=log)
                    records.append(record)
                    if args.out:
                        with open(args.out, "a") as fh:
                            fh.write(json.dumps({"scene": spec.name, **record.__dict__}, default=str) + "\n")
        finally:
            store.close()
    print()
    print(markdown_table(summarize(records)))
    print()
    print(format_per_type(records))


if __name__ == "__main__":
    main()
