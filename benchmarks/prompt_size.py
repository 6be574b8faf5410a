"""Prompt sizes, in the local model's own tokens: the Cypher agent's prompt vs pasting the whole graph.

    .venv/bin/python benchmarks/prompt_size.py [--places 15944]

For the Hydra example and the synthetic outdoor graph: tokens of the agentic system prompt (schema +
examples + rules), of the no-schema prompt, and of the context-window baseline's prompt (the serialised
graph), counted with the Qwen2.5 tokenizer of the offline model. Running the agent (input tokens summed
over its calls, from provider usage) is `scenerag eval benchmarks/experiments/local_*.yaml`. The rows go to
``benchmarks/results/prompt_size.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench_record import BenchRecord, add_record_argument
from scenerag.agents import CypherAgent, CypherAgentConfig
from scenerag.agents.baselines import ContextWindowAgent
from scenerag.graph.io import read_scene_graph
from scenerag.llm import make_chat_model
from scenerag.sim.outdoor import generate_outdoor_graph
from scenerag.store import open_store

HYDRA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hydra_small_indoor_dsg.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--places", type=int, default=15_944)
    add_record_argument(ap)
    args = ap.parse_args()
    record = BenchRecord(args, llm="none (tokenizer only)", model="local")
    model = make_chat_model("local")
    graphs = [
        ("hydra example", read_scene_graph(HYDRA)),
        (f"outdoor {args.places:,} places", generate_outdoor_graph(n_places=args.places)),
    ]
    print(f"tokens counted with {model.name}'s tokenizer; context window {model.context_window}")
    print(
        f"{'graph':<24} {'nodes':>8} {'agentic+schema':>15} {'agentic no-schema':>18} {'context window':>15} {'ratio':>7}"
    )
    for name, graph in graphs:
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(Path(tmp) / "db")
            try:
                store.load(graph)
                with_schema = model.count_tokens(CypherAgent(model, store).system_prompt("qa"))
                no_schema = model.count_tokens(
                    CypherAgent(model, store, CypherAgentConfig(with_schema=False)).system_prompt("qa")
                )
            finally:
                store.close()
        context = ContextWindowAgent(model, graph).prompt_tokens()
        print(
            f"{name:<24} {graph.num_nodes:>8,} {with_schema:>15,} {no_schema:>18,} {context:>15,} {context / with_schema:>6.0f}x"
        )
        record.results.setdefault("rows", []).append(
            {
                "graph": name,
                "nodes": graph.num_nodes,
                "agentic_schema_tokens": with_schema,
                "agentic_no_schema_tokens": no_schema,
                "context_window_tokens": context,
            }
        )
    record.results["tokenizer"] = model.name
    record.write()


if __name__ == "__main__":
    main()
