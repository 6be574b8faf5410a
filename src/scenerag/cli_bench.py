"""``scenerag bench …``: the benchmark commands (one function per benchmark, registered on ``bench_app``).

Each command prints its tables with rich and can write the raw records as JSON; heavy imports stay inside
the command so ``scenerag --help`` stays fast.
"""

from __future__ import annotations

import typer

bench_app = typer.Typer(
    name="bench",
    help="Benchmarks that print the papers' tables (success, tokens, latency) for this machine.",
    no_args_is_help=True,
)


# -- scenerag bench retrieval (KeySG hierarchical RAG and the cross-method comparison) ------------------------
_RETRIEVAL_TABLES = ("objects", "grounding", "latency", "cross")


@bench_app.command()
def retrieval(
    table: list[str] = typer.Option(  # noqa: B008 (typer reads the default list)
        list(_RETRIEVAL_TABLES),
        "--table",
        "-t",
        help="objects (Recall@1/5/10 at IoU 0/0.1/0.5), grounding (accuracy by category), latency "
        "(retrieval only, synthetic building) or cross (Cypher / hybrid Cypher / hierarchical RAG / "
        "EmbodiedRAG subgraph / context window); repeat for several.",
    ),
    llm: str | None = typer.Option(
        None, "--llm", help="chat model spec (local, openai:MODEL, anthropic:MODEL); 'none': no LLM methods"
    ),
    limit: int = typer.Option(
        1,
        "--limit",
        help="LLM work: queries per kind and expressions per cell of the first scene; questions per type "
        "in the cross-method table",
    ),
    full: bool = typer.Option(False, "--full", help="run the LLM on every query and expression (slow)"),
    scenes: int = typer.Option(3, "--scenes", help="how many synthetic buildings for objects/grounding"),
    methods: str = typer.Option(
        "cypher,hybrid-cypher,keysg-rag,subgraph-rag,context", "--methods", help="cross-method methods"
    ),
    types: str = typer.Option("", "--types", help="cross-method question types (comma list; default all)"),
    objects: int = typer.Option(10_000, "--objects", help="latency: objects of the synthetic building"),
    keyframes: int = typer.Option(5_000, "--keyframes", help="latency: keyframes of the synthetic building"),
    seed: int = typer.Option(0, "--seed"),
    out: str | None = typer.Option(None, "--out", help="write every table and raw record as JSON here"),
) -> None:
    """KeySG hierarchical RAG benchmarks: object retrieval, grounding, retrieval latency, and every retrieval
    strategy side by side on the same questions (success, input tokens, latency, winner per question type)."""
    import json
    import time
    from pathlib import Path

    from scenerag.cli import _errors, console

    unknown = sorted(set(table) - set(_RETRIEVAL_TABLES))
    if unknown or not table:
        console.print(f"[red]error:[/red] --table {unknown}: use {', '.join(_RETRIEVAL_TABLES)}")
        raise typer.Exit(2)
    if limit < 0:
        console.print("[red]error:[/red] --limit must be >= 0")
        raise typer.Exit(2)

    def say(text: str) -> None:
        from rich.markup import escape

        console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {escape(text)}", highlight=False)

    with _errors():
        from scenerag.eval.retrieval_bench import (
            DEFAULT_SCENES,
            QUESTION_TYPES,
            SMALL_SCENE,
            CrossMethodConfig,
            RetrievalBenchConfig,
            format_latency,
            run_cross_method_bench,
            run_latency_bench,
            run_retrieval_benchmark,
        )
        from scenerag.retrieval.embeddings import make_embedder

        embedder = make_embedder("minilm", threads=1)
        grid_tables = tuple(t for t in ("objects", "grounding") if t in table)
        model = None
        needs_llm = "cross" in table or (bool(grid_tables) and (limit > 0 or full))
        if needs_llm and (llm is None or llm.strip().lower() != "none"):
            from scenerag.llm import make_chat_model

            model = make_chat_model(llm)
        result: dict[str, object] = {"model": model.name if model is not None else None}
        console.print(
            "Offline there is no image encoder: keyframes and objects are retrieved by their text (summaries, "
            "descriptions, names); the visual route (CLIP) runs only with an encoder given."
        )
        if grid_tables:
            config = RetrievalBenchConfig(
                scenes=DEFAULT_SCENES[: max(1, scenes)],
                tables=grid_tables,
                llm_queries_per_kind=limit,
                llm_expressions_per_cell=limit,
                full=full,
                seed=seed,
            )
            report = run_retrieval_benchmark(config, embedder, model, progress=say)
            console.print(report.to_text(), markup=False, highlight=False)
            result["retrieval"] = report.to_json()
        if "latency" in table:
            latency = run_latency_bench(
                embedder, objects=objects, keyframes=keyframes, seed=seed, progress=say
            )
            console.print(format_latency(latency), markup=False, highlight=False)
            result["latency"] = latency
        if "cross" in table:
            if model is None:
                console.print("cross-method table skipped: it needs an LLM (--llm none was given)")
            else:
                chosen = tuple(t.strip() for t in types.split(",") if t.strip()) or QUESTION_TYPES
                cross = run_cross_method_bench(
                    CrossMethodConfig(
                        scenes=(SMALL_SCENE,),
                        methods=tuple(m.strip() for m in methods.split(",") if m.strip()),
                        types=chosen,
                        per_type=max(1, limit),
                        seed=seed,
                    ),
                    model,
                    embedder,
                    progress=say,
                )
                console.print(cross.to_text(), markup=False, highlight=False)
                result["cross"] = cross.to_json()
        if out:
            Path(out).write_text(json.dumps(result, indent=1, default=str))
            console.print(f"wrote {out}")


# -- scenerag bench embodied (EmbodiedRAG: Table 1 / Figure 2 of the paper) ----------------------------------
_EMBODIED_MODES = ("episodes", "replay")


@bench_app.command()
def embodied(
    agents: str = typer.Option(
        "all",
        "--agents",
        help="comma list of react, full-mem, embodiedrag, embodiedrag-strict, embodiedrag-feedback, or all "
        "(replay mode: all = full-mem, embodiedrag, embodiedrag-strict)",
    ),
    tasks: str = typer.Option(
        "easy:2", "--tasks", help="all, easy, hard, easy:3 (first three easy), or task ids (comma list)"
    ),
    limit: int = typer.Option(0, "--limit", help="only the first N selected tasks (0 = all selected)"),
    distractors: str = typer.Option(
        "1135", "--distractors", "-d", help="distractor settings, comma list of 0, 290, 1135"
    ),
    max_steps: int = typer.Option(10, "--max-steps", help="planning steps per episode"),
    style: str = typer.Option(
        "l_shape", "--style", help="kitchen layout style, or 'cycle' to cycle the five styles over the tasks"
    ),
    seed: int = typer.Option(0, "--seed"),
    mode: str = typer.Option(
        "episodes",
        "--mode",
        help="episodes: the model plans every step (success, time, provider token usage); replay: every "
        "agent follows the oracle plan and the exact prompts it builds are counted with the model's "
        "tokenizer (no planning calls)",
    ),
    pre_retrieval: str = typer.Option(
        "llm",
        "--pre-retrieval",
        help="replay mode: llm (the model's pre-retrieval) or required-types (oracle, no model call)",
    ),
    llm: str | None = typer.Option(
        None, "--llm", help="chat model spec: local (default, offline GGUF), openai:MODEL, anthropic:MODEL"
    ),
    out: str | None = typer.Option(
        None, "--out", help="write the full report (episodes, trajectories) as JSON"
    ),
) -> None:
    """EmbodiedRAG agents on the household kitchen tasks: per agent and distractor setting, success rate
    (easy/hard), time per planning step, cumulative planner tokens (provider usage), full-graph requests and
    retrieval recall, then the Full-Mem / EmbodiedRAG-strict token ratio (the paper's Table 1 / Figure 2)."""
    import json
    import time
    from pathlib import Path

    from rich.table import Table

    from scenerag.cli import _errors, console, err_console

    def say(text: str) -> None:
        err_console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {text}", markup=False, highlight=False)

    def fmt(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    if mode not in _EMBODIED_MODES:
        console.print(f"[red]error:[/red] --mode {mode!r}: use {' or '.join(_EMBODIED_MODES)}")
        raise typer.Exit(2)
    if limit < 0 or max_steps < 1:
        console.print("[red]error:[/red] --limit must be >= 0 and --max-steps >= 1")
        raise typer.Exit(2)
    with _errors():
        from scenerag.agents.embodied import (
            AgentKind,
            BenchmarkConfig,
            PlannerConfig,
            select_tasks,
            summarize,
        )
        from scenerag.agents.embodied.errors import EmbodiedConfigError
        from scenerag.agents.embodied.runner import (
            REPLAY_AGENTS,
            episode_token_ratios,
            format_ratios,
            run_embodied_bench,
            run_replay_bench,
        )
        from scenerag.sim.household import DISTRACTOR_SETTINGS

        try:
            settings = [int(d) for d in distractors.split(",") if d.strip()]
        except ValueError:
            settings = []
        if not settings or any(d not in DISTRACTOR_SETTINGS for d in settings):
            raise EmbodiedConfigError(
                f"bad --distractors {distractors!r}", hint=f"use a comma list of {DISTRACTOR_SETTINGS}"
            )
        chosen = select_tasks(tasks)
        task_ids = [t.task_id for t in (chosen[:limit] if limit else chosen)]
        default_agents = REPLAY_AGENTS if mode == "replay" else tuple(AgentKind)
        kinds = [a.strip() for a in agents.split(",") if a.strip()]
        if not kinds or kinds == ["all"]:
            kinds = [k.value for k in default_agents]
        layout = None if style == "cycle" else style
        say(f"{mode}: agents {', '.join(kinds)}; tasks {', '.join(task_ids)}; distractors {settings}")
        result: dict[str, object]
        if mode == "replay":
            replay = run_replay_bench(
                task_ids,
                model_spec=llm,
                agents=kinds,
                distractors=settings,
                pre_retrieval=pre_retrieval,
                style=layout,
                seed=seed,
                progress=say,
            )
            table = Table(title=f"Replayed oracle plans: prompts counted with {replay.model}'s tokenizer")
            for column in (
                "agent",
                "distractors",
                "tasks",
                "median planner tokens",
                "median max prompt",
                "prompts > context",
                "recall@1",
                "recall end",
            ):
                table.add_column(column, justify="left" if column == "agent" else "right")
            groups: dict[tuple[str, int], list] = {}
            for row in replay.rows:
                groups.setdefault((row.agent, row.n_distractors), []).append(row)
            import statistics

            for (agent, n), rows in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
                recalls = [r.recall_first for r in rows if r.recall_first is not None]
                ends = [r.recall_after_feedback for r in rows if r.recall_after_feedback is not None]
                table.add_row(
                    agent,
                    str(n),
                    str(len(rows)),
                    f"{statistics.median(r.planner_tokens for r in rows):.0f}",
                    f"{statistics.median(r.max_prompt for r in rows):.0f}",
                    str(sum(r.over_context for r in rows)),
                    fmt(statistics.fmean(recalls) if recalls else None, ".2f"),
                    fmt(statistics.fmean(ends) if ends else None, ".2f"),
                )
            console.print(table)
            for line in format_ratios(replay.ratios(), "full-mem / embodiedrag-strict planner tokens"):
                console.print(line, markup=False, highlight=False)
            result = replay.to_dict()
        else:
            config = BenchmarkConfig(
                agents=kinds,
                tasks=task_ids,
                distractors=settings,
                style=layout,
                seed=seed,
                planner=PlannerConfig(max_steps=max_steps),
            )
            report = run_embodied_bench(config, model_spec=llm, progress=say)
            episodes = report.episodes
            model_name = episodes[0].model if episodes else (llm or "local")
            table = Table(title=f"EmbodiedRAG agents ({model_name}, at most {max_steps} steps)")
            for column in (
                "agent",
                "distractors",
                "episodes",
                "success easy",
                "success hard",
                "s / planning step",
                "planner tokens / ep",
                "median",
                "full-graph / ep",
                "recall@1",
                "recall fb",
                "errors",
            ):
                table.add_column(column, justify="left" if column == "agent" else "right")
            for r in summarize(episodes):
                table.add_row(
                    r.agent,
                    str(r.n_distractors),
                    str(r.episodes),
                    fmt(r.success_easy, ".2f"),
                    fmt(r.success_hard, ".2f"),
                    fmt(r.mean_planner_s_per_step, ".1f"),
                    f"{r.mean_planner_tokens:.0f}",
                    f"{r.median_planner_tokens:.0f}",
                    f"{r.mean_full_graph_requests:.2f}",
                    fmt(r.recall_first, ".2f"),
                    fmt(r.recall_after_feedback, ".2f"),
                    f"{r.errors} ({r.context_overflows} overflow)" if r.context_overflows else str(r.errors),
                )
            console.print(table)
            for line in format_ratios(
                episode_token_ratios(episodes), "full-mem / embodiedrag-strict planner tokens"
            ):
                console.print(line, markup=False, highlight=False)
            result = report.to_dict(trajectories=True)
        if out:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(json.dumps(result, indent=1, default=str))
            console.print(f"wrote {out}")
