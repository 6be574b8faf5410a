"""EmbodiedRAG benchmark: ReAct, Full-Mem, EmbodiedRAG, -strict and -feedback on the household tasks.

Usage::

    .venv/bin/python benchmarks/embodied_bench.py                       # small local subset (see below)
    .venv/bin/python benchmarks/embodied_bench.py --tasks easy_02,easy_04 --agents embodiedrag-strict
    .venv/bin/python benchmarks/embodied_bench.py --full --model openai:gpt-4o-mini   # the whole grid
    .venv/bin/python benchmarks/embodied_bench.py --mode replay --tasks easy:3,hard:3 --distractors 1135

``--mode episodes`` (default) plays real episodes: the planner model decides every step. Without ``--full``
it runs ``--tasks`` (default ``easy:2``) × ``--agents`` (default all five) at ``--distractors`` (default
1135) with ``--max-steps`` (default 10): the slow local model cannot do more in reasonable time. ``--full``
runs all 40 tasks × 5 agents × distractors 0/290/1135 with 25 steps. Prints one line per episode, then per
agent: success rate (easy/hard), mean seconds per planning step (planner call) and per whole step
(retrieval, self-query, environment included), cumulative planner tokens per episode (provider usage),
total tokens with pre-retrieval/self-query, full-graph requests, and retrieval recall of the task's
required object types (first step / ever during the episode).

``--mode replay`` measures context size without model decisions: each agent follows the oracle solver's
plan and every prompt it builds is counted with the model's tokenizer (``count_tokens``); pre-retrieval
still asks the model (``--pre-retrieval required-types``: an oracle naming the task's required object types,
no model call, to separate retrieval quality from the model's pre-retrieval). Prints per task and agent the cumulative planner input tokens, the largest prompt,
the steps whose prompt exceeds the model's context window, the Full-Mem / strict ratio, and recall.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from scenerag.agents.embodied import (
    AgentKind,
    BenchmarkConfig,
    EpisodeResult,
    PlannerConfig,
    PreRetriever,
    format_summary,
    measure_replayed_tokens,
    run_benchmark,
    select_tasks,
    summarize,
)
from scenerag.agents.embodied.runner import bench_models, required_types_pre_retrieval
from scenerag.retrieval import make_embedder
from scenerag.sim.household import ATTRIBUTE_NAMES, DISTRACTOR_SETTINGS, LAYOUT_STYLES

REPLAY_AGENTS = (AgentKind.FULL_MEM, AgentKind.EMBODIED_RAG, AgentKind.STRICT)


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def episodes_mode(args: argparse.Namespace) -> dict[str, object]:
    planner_model, retrieval_model = bench_models(args.model)
    config = BenchmarkConfig(
        agents=args.agents,
        tasks=args.tasks,
        distractors=args.distractors,
        style=args.style,
        seed=args.seed,
        planner=PlannerConfig(max_steps=args.max_steps),
    )
    embedder = make_embedder("minilm", threads=1)
    log(
        f"model {planner_model.name}; agents {', '.join(a.value for a in config.agent_kinds())}; "
        f"tasks {', '.join(t.task_id for t in select_tasks(config.tasks))}; distractors {list(config.distractors)}"
    )
    partial = args.out.with_suffix(".episodes.jsonl") if args.out is not None else None
    if partial is not None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text("")

    def keep(episode: EpisodeResult) -> None:  # so an interrupted run still leaves its finished episodes
        if partial is not None:
            with partial.open("a") as stream:
                stream.write(json.dumps(episode.to_dict(), default=str) + "\n")

    report = run_benchmark(
        config, planner_model, embedder, retrieval_model=retrieval_model, progress=log, on_episode=keep
    )
    print()
    print(format_summary(summarize(report.episodes)))
    return report.to_dict(trajectories=True)


def replay_mode(args: argparse.Namespace) -> dict[str, object]:
    planner_model, retrieval_model = bench_models(args.model)
    embedder = make_embedder("minilm", threads=1)
    agents = [AgentKind(a) for a in args.agents] if args.agents_given else list(REPLAY_AGENTS)
    pre_retriever = PreRetriever(retrieval_model, ATTRIBUTE_NAMES)
    window = planner_model.context_window
    rows: list[dict[str, object]] = []
    ratios: dict[int, list[float]] = {}
    for index, task in enumerate(select_tasks(args.tasks)):
        if args.pre_retrieval == "llm":
            pre = pre_retriever.run(task.instruction)
        else:
            pre = required_types_pre_retrieval(task)
        log(
            f"{task.task_id} pre-retrieval ({pre.seconds:.0f} s): {[(e.name, list(e.attributes)) for e in pre.entities]}"
        )
        style = args.style or LAYOUT_STYLES[index % len(LAYOUT_STYLES)]
        for n in args.distractors:
            results = measure_replayed_tokens(
                planner_model,
                task,
                agents,
                embedder=embedder,
                pre_retrieval=pre,
                style=style,
                seed=args.seed,
                n_distractors=n,
            )
            for agent, episode in results.items():
                prompts = [s.input_tokens for s in episode.trajectory]
                row = {
                    "task": task.task_id,
                    "distractors": n,
                    "agent": agent,
                    "steps": episode.steps,
                    "success": episode.success,
                    "input_tokens": episode.planner_usage.input_tokens,
                    "output_tokens": episode.planner_usage.output_tokens,
                    "max_prompt": max(prompts),
                    "over_context": sum(p > window for p in prompts),
                    "recall_first": episode.recall_first,
                    "recall_env_feedback": episode.recall_after_feedback,
                    "pre_retrieval_tokens": episode.retrieval_usage.total_tokens,
                }
                rows.append(row)
                recall = (
                    ""
                    if episode.recall_first is None
                    else (f" recall {episode.recall_first:.2f} -> {episode.recall_after_feedback:.2f}")
                )
                log(
                    f"  d={n:4d} {agent:19s} steps {episode.steps:2d} input tokens {row['input_tokens']:8d} "
                    f"max prompt {row['max_prompt']:6d} over {window}: {row['over_context']:2d}{recall}"
                )
            if "full-mem" in results and "embodiedrag-strict" in results:
                full = results["full-mem"].planner_usage.total_tokens
                strict = results["embodiedrag-strict"].planner_usage.total_tokens
                ratios.setdefault(n, []).append(full / strict)
                log(f"  d={n:4d} full-mem / strict planner tokens: {full / strict:.1f}x")
    print()
    for n, values in ratios.items():
        print(
            f"distractors {n:4d}: full-mem / embodiedrag-strict cumulative planner tokens, median "
            f"{statistics.median(values):.1f}x (min {min(values):.1f}x, max {max(values):.1f}x, "
            f"n={len(values)} tasks; counted with {planner_model.name}'s tokenizer)"
        )
    return {"rows": rows, "context_window": window, "model": planner_model.name}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("episodes", "replay"), default="episodes")
    parser.add_argument("--model", default=None, help="chat model spec (default: $SCENERAG_LLM or local)")
    parser.add_argument("--agents", default=None, help="comma-separated agents (default: all five)")
    parser.add_argument("--tasks", default=None, help="all, easy, hard, easy:3, or ids (default: easy:2)")
    parser.add_argument("--distractors", default=None, help=f"comma-separated, from {DISTRACTOR_SETTINGS}")
    parser.add_argument("--style", default="l_shape", help="layout style, or 'cycle' for all five")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--full", action="store_true", help="all tasks x all distractor settings, 25 steps")
    parser.add_argument(
        "--pre-retrieval",
        choices=("llm", "required-types"),
        default="llm",
        help="replay mode: the model's pre-retrieval, or an oracle one naming the task's required types",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the full report as JSON here")
    args = parser.parse_args(argv)
    args.agents_given = args.agents is not None
    args.agents = args.agents.split(",") if args.agents else [k.value for k in AgentKind]
    if args.style == "cycle":
        args.style = None
    if args.full:
        args.tasks = args.tasks or "all"
        args.distractors = args.distractors or ",".join(map(str, DISTRACTOR_SETTINGS))
        args.max_steps = args.max_steps or 25
    args.tasks = args.tasks or ("easy:2" if args.mode == "episodes" else "easy:3,hard:3")
    args.distractors = [int(d) for d in (args.distractors or str(DISTRACTOR_SETTINGS[-1])).split(",")]
    args.max_steps = args.max_steps or 10
    started = time.perf_counter()
    report = episodes_mode(args) if args.mode == "episodes" else replay_mode(args)
    log(f"done in {time.perf_counter() - started:.0f} s")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, default=str))
        log(f"report written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
