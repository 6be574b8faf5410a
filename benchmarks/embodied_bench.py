"""EmbodiedRAG benchmark: ReAct, Full-Mem, EmbodiedRAG, -strict and -feedback on the household tasks.

Usage::

    .venv/bin/python benchmarks/embodied_bench.py                       # small local subset (see below)
    .venv/bin/python benchmarks/embodied_bench.py --tasks easy_02,easy_04 --agents embodiedrag-strict
    .venv/bin/python benchmarks/embodied_bench.py --full --llm openai:gpt-4o-mini   # the whole grid
    .venv/bin/python benchmarks/embodied_bench.py --mode replay --tasks easy:3,hard:3 --distractors 1135
    # a long run in parts, then one record:
    .venv/bin/python benchmarks/embodied_bench.py --tasks easy:5 --record /tmp/part1.json ...
    .venv/bin/python benchmarks/embodied_bench.py --merge /tmp/part1.json /tmp/part2.json

``--mode episodes`` (default) plays real episodes: the planner model decides every step. Without ``--full``
it runs ``--tasks`` (default ``easy:2``) × ``--agents`` (default all five) at ``--distractors`` (default
1135) with ``--max-steps`` (default 10). ``--full`` runs all 40 tasks × 5 agents × distractors
0/290/1135 with 25 steps. Prints one line per step and per episode, then per agent and distractor setting:
success rate (easy / hard / all), mean steps, planner tokens per step and per episode (provider usage),
seconds per planner call (median; mean prompt evaluation vs generation, with the prompt tokens actually
evaluated and the tokens generated, on local models), the median whole step (retrieval, self-query,
planner, environment), full-graph requests, retrieval recall, overflows, and the episodes and failed steps
by cause. Every retrieving agent's live trajectory is also replayed by Full-Mem (``--count-along``) and
Full-Mem's prompts along it are counted with the model's tokenizer: Full-Mem's token cost where its
prompts do not fit the context.

``--mode replay`` measures context size without model decisions: each agent follows the oracle solver's
plan and every prompt it builds is counted with the model's tokenizer (``count_tokens``); pre-retrieval
still asks the model (``--pre-retrieval required-types``: an oracle naming the task's required object types,
no model call, to separate retrieval quality from the model's pre-retrieval). Prints per task and agent the cumulative planner input tokens, the largest prompt,
the steps whose prompt exceeds the model's context window, the Full-Mem / strict ratio, and recall.

Either mode writes its report and the run's conditions (mode, pre-retrieval, model, machine load) to
``benchmarks/results/embodied_bench-<mode>.json`` (``--record PATH``; ``--out`` keeps its own full report);
finished episodes are appended as they end to a ``.episodes.jsonl`` beside ``--out`` (else the record).
``--recount EPISODES ...`` recounts recorded episodes' planner tokens under the current code without a
model: the calls that reached the environment are replayed with their recorded replies by the episode's
agent and by Full-Mem, both prompts counted with the GGUF's tokenizer (``--gguf``), with the prompt flags
given (``--list-calls --walkthrough --hand-in-thought`` as the live parts); a prompt change's effect on the
token ratio, measured on committed episodes. ``--merge PART ...`` joins the records of an episodes run made in parts (each part's command, commit and
machine load are kept) into one record and prints the joint table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench_record import BenchRecord, add_record_argument, default_record_path
from scenerag.agents.embodied import (
    AgentKind,
    BenchmarkConfig,
    EpisodeResult,
    PlannerConfig,
    format_summary,
    parse_agent_kind,
    run_benchmark,
    select_tasks,
    summarize,
)
from scenerag.agents.embodied.runner import (
    REPLAY_AGENTS,
    CountedAlong,
    bench_models,
    counted_ratios,
    episode_token_ratios,
    format_counted,
    format_ratios,
    format_replay,
    recount_episode,
    run_replay_bench,
)
from scenerag.retrieval import make_embedder
from scenerag.sim.household import DISTRACTOR_SETTINGS, get_task


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def print_episode_tables(episodes: list[EpisodeResult], counted: list[CountedAlong]) -> None:
    print()
    print(format_summary(summarize(episodes)))
    for line in format_ratios(
        episode_token_ratios(episodes), "full-mem / embodiedrag-strict planner tokens (provider usage)"
    ):
        print(line)
    for line in format_counted(counted):
        print(line)


def episodes_mode(args: argparse.Namespace) -> dict[str, object]:
    options = {} if args.threads is None else {"n_threads": args.threads}
    planner_model, retrieval_model = bench_models(args.model, **options)
    count_along = (
        [a for a in args.agents if parse_agent_kind(a).retrieves]
        if args.count_along is None
        else args.count_along
    )
    config = BenchmarkConfig(
        agents=args.agents,
        tasks=args.tasks,
        distractors=args.distractors,
        style=args.style,
        seed=args.seed,
        planner=PlannerConfig(
            max_steps=args.max_steps,
            list_calls=args.list_calls,
            walkthrough=args.walkthrough,
            refuse_undo=not args.allow_undo,
            task_words=not args.all_words,
            hand_in_thought=args.hand_in_thought,
        ),
        count_along=count_along,
    )
    embedder = make_embedder(args.embedder, threads=1)
    log(
        f"model {planner_model.name}; agents {', '.join(a.value for a in config.agent_kinds())}; "
        f"tasks {', '.join(t.task_id for t in select_tasks(config.tasks))}; distractors {list(config.distractors)}"
    )
    keep_next_to = args.out if args.out is not None else None if args.record == "-" else Path(args.record)
    partial = keep_next_to.with_suffix(".episodes.jsonl") if keep_next_to is not None else None
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
    print_episode_tables(report.episodes, report.counted)
    return report.to_dict(trajectories=True)


def merge_mode(args: argparse.Namespace) -> dict[str, object]:
    """One record from the records of an episodes run made in parts (later parts win on repeats)."""
    by_key: dict[tuple[str, int, str, str], EpisodeResult] = {}
    counted: dict[tuple[str, int, str, str], CountedAlong] = {}
    pre_retrievals: dict[str, object] = {}
    parts: list[dict[str, object]] = []
    for path in args.merge:
        data = json.loads(Path(path).read_text())
        if data.get("conditions", {}).get("mode") != "episodes":
            raise SystemExit(f"{path} is not an episodes record of embodied_bench.py")
        results = data["results"]
        for item in results["episodes"]:
            episode = EpisodeResult.from_dict(item)
            by_key[(episode.task_id, episode.n_distractors, episode.agent, episode.layout)] = episode
        for item in results.get("counted_along", []):
            row = CountedAlong.from_dict(item)
            counted[(row.task_id, row.n_distractors, row.agent, row.counted_agent)] = row
        pre_retrievals.update(results.get("pre_retrievals", {}))
        parts.append(
            {
                "record": str(path),
                "command": data.get("command"),
                "started": data.get("started"),
                "wall_s": data.get("wall_s"),
                "git": data.get("git"),
                "machine": data.get("machine"),
                "episodes": len(results["episodes"]),
            }
        )
    episodes = list(by_key.values())
    rows = list(counted.values())
    log(f"merged {len(episodes)} episodes from {len(parts)} parts")
    print_episode_tables(episodes, rows)
    return {
        "parts": parts,
        "episodes": [e.to_dict(trajectory=True) for e in episodes],
        "pre_retrievals": pre_retrievals,
        "summary": [r.to_dict() for r in summarize(episodes)],
        "counted_along": [r.to_dict() for r in rows],
        "counted_ratios": counted_ratios(rows),
    }


def load_episodes(paths: list[str]) -> list[EpisodeResult]:
    """The episodes of episodes records (``.json``) or of their ``.episodes.jsonl`` files."""
    out: list[EpisodeResult] = []
    for path in paths:
        text = Path(path).read_text()
        if path.endswith(".jsonl"):
            out.extend(
                EpisodeResult.from_dict(json.loads(line)) for line in text.splitlines() if line.strip()
            )
        else:
            out.extend(EpisodeResult.from_dict(e) for e in json.loads(text)["results"]["episodes"])
    return out


def tokenizer_counter(model_path: str | None) -> Callable[[str], int]:
    """The local GGUF model's tokenizer alone (vocab_only: no weights, no threads), as a counter."""
    import llama_cpp

    from scenerag.llm.model_files import resolve_model_path

    vocab = llama_cpp.Llama(model_path=str(resolve_model_path(model_path)), vocab_only=True, verbose=False)
    return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))


class _Counter:
    """What recounting needs of a model: a name, its context window and its tokenizer."""

    def __init__(self, count_tokens: Callable[[str], int], context_window: int) -> None:
        self.name = "tokenizer"
        self.context_window = context_window
        self.count_tokens = count_tokens


def recount_mode(args: argparse.Namespace) -> dict[str, object]:
    """Recorded episodes' planner tokens recounted under the current code, offline (no model calls): the
    live agent's and Full-Mem's prompts rebuilt along each episode's calls (see ``recount_episode``)."""
    from scenerag.llm.local import DEFAULT_N_CTX

    count = tokenizer_counter(args.gguf)
    model = _Counter(count, DEFAULT_N_CTX)
    embedder = make_embedder(args.embedder, threads=1)
    planner = PlannerConfig(
        list_calls=args.list_calls,
        walkthrough=args.walkthrough,
        refuse_undo=not args.allow_undo,
        task_words=not args.all_words,
        hand_in_thought=args.hand_in_thought,
    )
    rows: list[CountedAlong] = []
    for episode in load_episodes(args.recount):
        task = get_task(episode.task_id)
        style, seed, _ = episode.layout.split("-")  # the episode's kitchen: "u_shape-s0-d290"
        row = recount_episode(
            model,  # type: ignore[arg-type]
            episode,
            task,
            style=style,
            seed=int(seed.removeprefix("s")),
            embedder=embedder,
            count_tokens=count,
            planner=planner,
        )
        rows.append(row)
        log(
            f"{episode.task_id} @{episode.n_distractors}: {episode.agent} {row.live_planner_tokens} tokens in "
            f"{row.live_steps} calls (recorded: {episode.planner_tokens} in {episode.steps}); "
            f"{row.counted_agent} {row.counted_planner_tokens}: {row.ratio:.2f}x"
        )
    print()
    for line in format_counted(rows):
        print(line)
    return {"counted_along": [r.to_dict() for r in rows], "counted_ratios": counted_ratios(rows)}


def replay_mode(args: argparse.Namespace) -> dict[str, object]:
    agents = args.agents if args.agents_given else [k.value for k in REPLAY_AGENTS]
    report = run_replay_bench(
        args.tasks,
        model_spec=args.model,
        agents=agents,
        distractors=args.distractors,
        pre_retrieval=args.pre_retrieval,
        style=args.style,
        seed=args.seed,
        progress=log,
    )
    print()
    print(format_replay(report))
    return report.to_dict()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("episodes", "replay", "recount"), default="episodes")
    parser.add_argument(
        "--llm",
        "--model",
        dest="model",
        default=None,
        help="chat model spec (default: $SCENERAG_LLM or local)",
    )
    parser.add_argument("--agents", default=None, help="comma-separated agents (default: all five)")
    parser.add_argument(
        "--count-along",
        default=None,
        help="agents whose live trajectories Full-Mem replays to count its prompts (default: every "
        "retrieving agent run; 'none' for none)",
    )
    parser.add_argument("--merge", nargs="+", default=None, metavar="RECORD", help="join part records")
    parser.add_argument(
        "--recount",
        nargs="+",
        default=None,
        metavar="EPISODES",
        help="recount the planner tokens of recorded episodes (records or .episodes.jsonl) under the current "
        "code, for their agent and Full-Mem, with the prompt flags given (no model calls)",
    )
    parser.add_argument(
        "--gguf", default=None, help="recount: the GGUF whose tokenizer counts (default model)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="local model threads (default: every core; on a machine busy with other work one thread is "
        "much faster than two: llama.cpp's threads wait for each other at every layer)",
    )
    parser.add_argument(
        "--embedder",
        default="minilm-numpy",
        help="entity embedder (default minilm-numpy: MiniLM's vectors without torch, whose OpenMP threads "
        "would compete with llama.cpp's)",
    )
    parser.add_argument("--tasks", default=None, help="all, easy, hard, easy:3, or ids (default: easy:2)")
    parser.add_argument("--distractors", default=None, help=f"comma-separated, from {DISTRACTOR_SETTINGS}")
    parser.add_argument("--style", default="l_shape", help="layout style, or 'cycle' for all five")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--full", action="store_true", help="all tasks x all distractor settings, 25 steps")
    parser.add_argument(
        "--list-calls",
        action="store_true",
        help="end each prompt with the object calls the step allows ('You can now: pickup(Apple_1), ...')",
    )
    parser.add_argument(
        "--walkthrough",
        action="store_true",
        help="end the system prompt with the environment's example episode of another task",
    )
    parser.add_argument(
        "--allow-undo",
        action="store_true",
        help="do not refuse a call that would only undo the robot's last change (close after open, ...)",
    )
    parser.add_argument(
        "--hand-in-thought",
        action="store_true",
        help="the grammar starts every thought with what the robot holds ('I hold Apple_1; ...')",
    )
    parser.add_argument(
        "--all-words",
        action="store_true",
        help="retrieving agents' search takes every object type, not only the task's words",
    )
    parser.add_argument(
        "--pre-retrieval",
        choices=("llm", "required-types"),
        default="llm",
        help="replay mode: the model's pre-retrieval, or an oracle one naming the task's required types",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the full report as JSON here")
    add_record_argument(parser)
    args = parser.parse_args(argv)
    if args.record == str(default_record_path()):
        args.record = str(default_record_path(f"embodied_bench-{args.mode}"))
    if args.merge:
        args.mode = "episodes"
    if args.recount:
        args.mode = "recount"
    if args.count_along is not None:
        args.count_along = [] if args.count_along == "none" else args.count_along.split(",")
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
    record = BenchRecord(
        args,
        mode=args.mode,
        llm=(
            "replay: every agent follows the oracle solver's plan, prompts counted with the model's tokenizer, "
            "no planner decisions"
            if args.mode == "replay"
            else "recount: recorded episodes' calls and replies replayed under the current code, prompts "
            "counted with the model's tokenizer, no model calls"
            if args.mode == "recount"
            else "live: the model plans every step"
        ),
        pre_retrieval=(
            "oracle: the task's required object types, no model call"
            if args.mode == "replay" and args.pre_retrieval == "required-types"
            else "the model (one JSON-schema call per task)"
        ),
        model=args.model or "$SCENERAG_LLM or local",
    )
    started = time.perf_counter()
    if args.merge:
        report = merge_mode(args)
    elif args.recount:
        report = recount_mode(args)
    else:
        report = episodes_mode(args) if args.mode == "episodes" else replay_mode(args)
    record.results = report
    record.write()
    log(f"done in {time.perf_counter() - started:.0f} s")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, default=str))
        log(f"report written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
