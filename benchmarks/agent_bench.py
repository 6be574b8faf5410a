"""The Cypher agent on question sets: accuracy per tag, latency (median / p95), input tokens, LLM calls.

Two ways to run each question:

* ``--process`` (what a user pays): every question is a fresh ``scenerag ask --json`` process — Python,
  JVM and model start, linking, retrieval, the LLM, the query — timed from spawn to exit;
* in-process (default): one agent answers every question (model and JVM loaded once); answers are
  identical (the local model restores the same system-prompt state for every question).

Examples::

    .venv/bin/python benchmarks/agent_bench.py --questions benchmarks/questions/hydra_user_qa.yaml --process
    .venv/bin/python benchmarks/agent_bench.py --questions benchmarks/questions/hydra_qa.yaml \\
        benchmarks/questions/hydra_pddl.yaml --tag seed

Conditions: the offline local model (``--llm``, default ``local``) answering live, greedy; the graph given
(``--graph``) loaded into a fresh embedded ArcadeDB; the answer-type hint from each solution's SLDP type
(the seed protocol) unless ``--no-type-hint``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_record import BenchRecord, add_record_argument

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


def run_in_process(args: argparse.Namespace, questions: list[Any], db: str) -> list[dict[str, Any]]:
    from scenerag.agents import CypherAgent
    from scenerag.llm import make_chat_model
    from scenerag.store import open_store

    store = open_store(db)
    model = make_chat_model(args.llm)
    agent = CypherAgent(model, store, agent_config(args))
    rows = []
    try:
        for i, q in enumerate(questions, 1):
            hint = None if args.no_type_hint else q.answer_type()
            result = agent.run(q.question, task=q.task, answer_type=hint)
            rows.append(_row(q, result.to_dict(), result.wall_s))
            _progress(i, len(questions), rows[-1])
    finally:
        store.close()
    return rows


def agent_config(args: argparse.Namespace) -> Any:
    """The agent's settings from the command line (defaults: the shipped configuration)."""
    from scenerag.agents import CypherAgentConfig

    return CypherAgentConfig(
        mode=args.mode,
        max_tool_calls=args.max_tool_calls,
        candidates=args.candidates,
        vote=args.vote,
        grammar=not args.no_grammar,
        plan=not args.no_plan,
        compare_form=not args.no_compare_form,
        examples_k=args.examples_k,
    )


def run_processes(args: argparse.Namespace, questions: list[Any], db: str) -> list[dict[str, Any]]:
    exe = str(Path(sys.executable).with_name("scenerag"))
    rows = []
    for i, q in enumerate(questions, 1):
        cmd = [
            exe,
            "ask" if q.task == "qa" else "ground",
            q.question,
            "--db",
            db,
            "--json",
            "--llm",
            args.llm,
        ]
        cmd += ["--mode", args.mode, "--max-tool-calls", str(args.max_tool_calls)]
        hint = None if args.no_type_hint else q.answer_type()
        if hint and q.task == "qa":
            cmd += ["--answer-type", hint]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            data = {"answer": None, "error": (proc.stderr or proc.stdout)[-400:], "usage": {}, "tools": []}
        rows.append(_row(q, data, wall))
        _progress(i, len(questions), rows[-1])
    return rows


def _row(q: Any, data: dict[str, Any], wall: float) -> dict[str, Any]:
    answer = data.get("answer")
    return {
        "uid": q.uid,
        "question": q.question,
        "tags": q.tags,
        "task": q.task,
        "solution": q.solution,
        "answer": answer,
        "correct": bool(q.is_correct(answer)),
        "wall_s": round(wall, 2),
        "input_tokens": (data.get("usage") or {}).get("input_tokens", 0),
        "output_tokens": (data.get("usage") or {}).get("output_tokens", 0),
        "llm_calls": data.get("llm_calls", 0),
        "queries": [t.get("input") for t in data.get("tools", [])],
        "error": data.get("error"),
        "not_found": bool((data.get("context") or {}).get("not_found")),
        "links": (data.get("context") or {}).get("links", []),
        "examples": (data.get("context") or {}).get("examples", []),
        "rewrites": (data.get("context") or {}).get("rewrites", []),
        "steps": (data.get("context") or {}).get("steps", []),
        "plan_tried": (data.get("context") or {}).get("plan_tried", []),
        "grade": (data.get("context") or {}).get("grade"),
        "candidates": (data.get("context") or {}).get("candidates", []),
        "timings_s": (data.get("context") or {}).get("timings_s", {}),
    }


def _progress(i: int, n: int, row: dict[str, Any]) -> None:
    mark = "ok " if row["correct"] else "XX "
    print(
        f"[{i}/{n}] {mark}{row['uid']}: {row['question'][:60]!r} -> {str(row['answer'])[:50]} "
        f"({row['wall_s']:.1f} s, {row['input_tokens']} in)",
        file=sys.stderr,
        flush=True,
    )


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups["all"].append(r)
        for t in r["tags"]:
            groups[t].append(r)
    table = {}
    for tag, rs in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        walls = [r["wall_s"] for r in rs]
        tokens = [r["input_tokens"] for r in rs]
        table[tag] = {
            "n": len(rs),
            "correct": sum(r["correct"] for r in rs),
            "accuracy": round(sum(r["correct"] for r in rs) / len(rs), 3),
            "median_s": round(statistics.median(walls), 2),
            "p95_s": round(pct(walls, 0.95), 2),
            "median_input_tokens": int(statistics.median(tokens)),
            "max_input_tokens": max(tokens),
            "mean_llm_calls": round(statistics.mean(r["llm_calls"] for r in rs), 2),
        }
    return table


def load_graph(spec: str) -> Any:
    """The scene graph named by ``--graph``: a file, or ``building`` (``generate_building()``, seed 0)."""
    if spec == "building":
        from scenerag.sim.building import generate_building

        return generate_building().to_scene_graph()
    from scenerag import read_scene_graph

    return read_scene_graph(spec)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", nargs="+", required=True, type=Path)
    parser.add_argument(
        "--graph",
        default=str(DATA / "hydra_small_indoor_dsg.json"),
        help="a scene-graph file, or 'building' for the procedural two-floor building (seed 0, defaults)",
    )
    parser.add_argument("--tag", action="append", help="keep questions with this tag (repeatable)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many questions")
    parser.add_argument("--uid", action="append", help="keep the question with this id (repeatable)")
    parser.add_argument("--llm", default="local")
    parser.add_argument("--mode", default="agentic", choices=["agentic", "feedforward"])
    parser.add_argument("--max-tool-calls", type=int, default=3)
    parser.add_argument(
        "--candidates", type=int, default=3, help="candidate queries per round (1: greedy only)"
    )
    parser.add_argument("--vote", default="adaptive", choices=["adaptive", "always"])
    parser.add_argument("--no-grammar", action="store_true", help="decode without the schema grammar")
    parser.add_argument("--no-plan", action="store_true", help="never plan a question in steps")
    parser.add_argument(
        "--no-compare-form", action="store_true", help="never fill the compare form (the model's query only)"
    )
    parser.add_argument("--examples-k", type=int, default=4, help="worked examples retrieved per question")
    parser.add_argument("--process", action="store_true", help="one scenerag ask process per question")
    parser.add_argument("--no-type-hint", action="store_true")
    add_record_argument(parser)
    args = parser.parse_args()

    from scenerag.eval.questions import load_questions
    from scenerag.store import open_store

    questions = [q for f in args.questions for q in load_questions(f)]
    if args.tag:
        questions = [q for q in questions if set(args.tag) & set(q.tags)]
    if args.uid:
        questions = [q for q in questions if q.uid in set(args.uid)]
    if args.limit:
        questions = questions[: args.limit]
    record = BenchRecord(args, llm=f"live {args.llm}", perception="oracle (the scene graph file)")
    with tempfile.TemporaryDirectory(prefix="agent-bench-") as tmp:
        db = str(Path(tmp) / "db")
        store = open_store(db, create=True)
        store.load(load_graph(args.graph))
        store.close()
        rows = run_processes(args, questions, db) if args.process else run_in_process(args, questions, db)
    table = summarize(rows)
    head = f"{'tag':<22}{'n':>4}{'right':>7}{'acc':>7}{'median s':>10}{'p95 s':>8}{'in tok (med/max)':>18}{'calls':>7}"
    print(
        f"Cypher agent, {args.llm}, {args.mode}, {'process per question' if args.process else 'in-process'}"
    )
    print(head)
    for tag, t in table.items():
        print(
            f"{tag:<22}{t['n']:>4}{t['correct']:>7}{t['accuracy']:>7.0%}{t['median_s']:>10.1f}{t['p95_s']:>8.1f}"
            f"{t['median_input_tokens']:>11}/{t['max_input_tokens']:<6}{t['mean_llm_calls']:>7.2f}"
        )
    record.results["table"] = table
    record.results["questions"] = rows
    record.write()


if __name__ == "__main__":
    main()
