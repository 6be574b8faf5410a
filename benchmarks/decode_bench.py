"""What the schema grammar and the k candidates cost the local model: prompt evaluation vs generation, with
and without the grammar, one candidate vs k decoded together.

For each question of a set, the Cypher agent's real prompt (its system turn, retrieved examples, linked
entities, the question) is built; then, with the system turn cached as in production:

* ``plain``: one greedy reply, no grammar;
* ``grammar``: one greedy reply under the schema grammar;
* ``k3``: three replies (greedy + two sampled) under the grammar, decoded together from one prompt
  evaluation.

Prints medians (prompt tokens/s, generation ms per step, seconds per call) and the ratios grammar/plain and
k3/grammar, and how often the grammar changed the greedy query. The prompt of each question is evaluated
once per variant (the cache is cleared between variants) so the split is honest.

    python benchmarks/decode_bench.py --questions benchmarks/questions/hydra_dev7_qa.yaml --limit 12
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench_record import BenchRecord, add_record_argument

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--questions", type=Path, default=ROOT / "benchmarks" / "questions" / "hydra_dev7_qa.yaml"
    )
    parser.add_argument("--graph", default=str(DATA / "hydra_small_indoor_dsg.json"))
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--k", type=int, default=3)
    add_record_argument(parser)
    args = parser.parse_args()

    from scenerag import read_scene_graph
    from scenerag.agents import CypherAgent, CypherAgentConfig
    from scenerag.agents.linking import mask_question
    from scenerag.eval.questions import load_questions
    from scenerag.llm import Message, make_chat_model
    from scenerag.store import open_store

    questions = [q for q in load_questions(args.questions) if q.task == "qa"][: args.limit]
    record = BenchRecord(args, llm="live local", perception="oracle (the scene graph file)")
    model = make_chat_model("local")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="decode-bench-") as tmp:
        store = open_store(Path(tmp) / "db", create=True)
        store.load(read_scene_graph(args.graph))
        agent = CypherAgent(model, store, CypherAgentConfig())
        decoder = None
        for q in questions:
            links = agent.linker().link(q.question)
            examples = agent.library().retrieve(
                q.question, agent.config.examples_k, task="qa", masked=mask_question(q.question, links)
            )
            messages = [
                Message.system(agent.system_prompt("qa")),
                Message.user(agent.user_prompt(q.question, "qa", links, examples, q.answer_type())),
            ]
            grammar = agent.grammar(q.question)
            row: dict[str, Any] = {"uid": q.uid}
            for name, n, g in (("plain", 1, None), ("grammar", 1, grammar), ("k3", args.k, grammar)):
                decoder = model._model.decoder  # type: ignore[attr-defined]
                if decoder is not None:
                    decoder._cached = []  # evaluate the question's turn again: each variant pays for it
                replies = model.sample(messages, n=n, grammar=g, max_tokens=agent.config.max_reply_tokens)  # type: ignore[attr-defined]
                t = replies[0].timings
                steps = model._model.decoder.stats.steps + 1  # type: ignore[attr-defined]
                row[name] = {
                    "prompt_tokens": t.prompt_tokens,
                    "prompt_s": round(t.prompt_s, 3),
                    "generated": t.generated_tokens,
                    "generation_s": round(t.generation_s, 3),
                    "steps": steps,
                    "ms_per_step": round(1000 * t.generation_s / max(1, steps), 1),
                    "reply": replies[0].message.content.strip()[:300],
                }
            row["grammar_changed_greedy"] = row["plain"]["reply"] != row["grammar"]["reply"]
            rows.append(row)
            print(
                f"{q.uid}: prompt {row['grammar']['prompt_tokens']} tok {row['grammar']['prompt_s']:.1f} s; "
                f"ms/step plain {row['plain']['ms_per_step']} grammar {row['grammar']['ms_per_step']} "
                f"k{args.k} {row['k3']['ms_per_step']}; changed={row['grammar_changed_greedy']}",
                flush=True,
            )
        store.close()

    def med(variant: str, key: str) -> float:
        return statistics.median(r[variant][key] for r in rows)

    summary = {
        "questions": len(rows),
        "prompt_tokens_median": med("grammar", "prompt_tokens"),
        "prompt_tokens_per_s_median": round(
            statistics.median(r["grammar"]["prompt_tokens"] / r["grammar"]["prompt_s"] for r in rows), 1
        ),
        "ms_per_step_plain": med("plain", "ms_per_step"),
        "ms_per_step_grammar": med("grammar", "ms_per_step"),
        f"ms_per_step_k{args.k}": med("k3", "ms_per_step"),
        "generation_s_plain": med("plain", "generation_s"),
        "generation_s_grammar": med("grammar", "generation_s"),
        f"generation_s_k{args.k}": med("k3", "generation_s"),
        "grammar_over_plain_per_step": round(med("grammar", "ms_per_step") / med("plain", "ms_per_step"), 2),
        f"k{args.k}_over_one_per_step": round(med("k3", "ms_per_step") / med("grammar", "ms_per_step"), 2),
        f"k{args.k}_call_over_one_call": round(
            statistics.median(
                (r["k3"]["prompt_s"] + r["k3"]["generation_s"])
                / (r["grammar"]["prompt_s"] + r["grammar"]["generation_s"])
                for r in rows
            ),
            2,
        ),
        "grammar_changed_greedy": sum(r["grammar_changed_greedy"] for r in rows),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
    }
    print()
    for key, value in summary.items():
        print(f"{key:>32}: {value}")
    record.results["summary"] = summary
    record.results["questions"] = rows
    record.write()


if __name__ == "__main__":
    main()
