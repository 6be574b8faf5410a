"""The ``scenerag`` command line (typer + rich). Errors print as one line and exit non-zero."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from scenerag.errors import SceneRagError

app = typer.Typer(
    name="scenerag",
    help="LLM reasoning over large 3D scene graphs stored in a graph database.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="markdown",  # docstrings wrap as paragraphs; `code` is shown as code
)
console = Console()
err_console = Console(stderr=True)


def _untyped_flags() -> None:
    """Newer typer prints a type column for every option, ``<bool>`` for on/off flags (``--help <bool>``);
    a flag takes no value, so its type is left out of the help."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover - older typer: no type column
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "untyped_flags", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich.untyped_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_untyped_flags()

DbOption = Annotated[str, typer.Option("--db", help="Database directory (embedded ArcadeDB) or bolt:// URI.")]
# The demo's default scene graph: the Hydra example, which is not part of the package (see
# shared/data/README.md). It is looked for in $SCENERAG_DATA, then shared/data in or beside the working
# directory (a checkout has shared/ beside it; scripts/demo.sh runs from the checkout's root).
DEMO_GRAPH_NAME = "hydra_small_indoor_dsg.json"


#: --debug (or SCENERAG_DEBUG=1): errors keep their exception type and traceback
_DEBUG = {"on": os.environ.get("SCENERAG_DEBUG", "") not in ("", "0")}
# Java and Python exception class names inside a message (org.antlr.v4.runtime.InputMismatchException,
# java.lang.IllegalArgumentException: ..., ValueError: ...): dropped from user-facing lines unless --debug
_EXCEPTION_NAME = re.compile(r"\b(?:[a-z_][\w$]*\.)*[A-Z]\w*(?:Exception|Error)\b(?::\s*)?")


def user_message(text: str) -> str:
    """``text`` as one line for a user: newlines joined with " | ", exception class names dropped."""
    line = str(text).replace("\n", " | ")
    if not _DEBUG["on"]:
        line = _EXCEPTION_NAME.sub("", line)
        line = re.sub(r"\s{2,}", " ", line).strip(" :")
    return line


#: the stage reporter of the running command: closed (its spinner cleared) before an error is printed
_ACTIVE_PROGRESS: list[Any] = []


def _end_progress() -> None:
    """Stop the heartbeat and clear the spinner before printing anything else."""
    for progress in _ACTIVE_PROGRESS:
        progress.close()


def _fail(message: str, code: int = 1) -> None:
    _end_progress()
    err_console.print(f"[bold red]error:[/] {escape(user_message(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        from scenerag import __version__

        console.print(f"scenerag {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help="On errors, print the exception type and traceback (env SCENERAG_DEBUG=1)."
        ),
    ] = False,
) -> None:
    """LLM reasoning over large 3D scene graphs stored in a graph database."""
    if debug:
        _DEBUG["on"] = True


def _os_message(exc: OSError) -> str:
    """An OS error as a sentence: the file and what is wrong with it."""
    what = exc.strerror or str(exc)
    return f"{exc.filename}: {what}" if exc.filename else what


@contextmanager
def _errors(on_interrupt: Callable[[], str] | None = None) -> Iterator[None]:
    """Turn scenerag and OS errors into one readable line and a non-zero exit; Ctrl-C ends it with
    "interrupted" and status 130. With ``on_interrupt`` (long database work: load, cypher), SIGINT, SIGTERM
    and SIGHUP raise ``Interrupted`` inside the block, a running embedded query is terminated at once,
    cleanup runs, and the line adds ``on_interrupt()``'s account of the data; status 128 + the signal
    number (130, 143, 129). With ``--debug`` the traceback comes first; without it no exception class name
    reaches the user (an unexpected error says so and points to ``--debug``)."""
    from scenerag.interrupts import handle_signals

    try:
        with handle_signals() if on_interrupt is not None else nullcontext():
            yield
    except typer.Exit:
        raise
    except KeyboardInterrupt as exc:
        name = getattr(exc, "signal_name", "SIGINT")
        detail = ""
        if on_interrupt is not None:
            with suppress(Exception):
                detail = f": {on_interrupt()}"
        err_console.print(f"[bold yellow]interrupted[/] ({name}){detail}", highlight=False, soft_wrap=True)
        raise typer.Exit(getattr(exc, "exit_code", 130)) from None
    except Exception as exc:
        if _DEBUG["on"]:
            err_console.print_exception()
            _fail(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, SceneRagError):
            _fail(str(exc))
        if isinstance(exc, OSError):
            _fail(_os_message(exc))
        if isinstance(exc, ValueError):
            _fail(str(exc))
        _fail(f"unexpected failure: {exc or type(exc).__name__} (run with --debug for the details)")


def _progress() -> Any:
    from scenerag.progress import progress_bar

    return progress_bar(console=err_console)


QuietOption = Annotated[
    bool, typer.Option("--quiet", help="No stage lines or heartbeat on stderr (only the result).")
]


@contextmanager
def _stages(quiet: bool) -> Iterator[Any]:
    """Stage lines with a heartbeat on stderr (scenerag.progress), or silence with ``--quiet``."""
    from scenerag.progress import SILENT, StderrProgress

    if quiet:
        yield SILENT
        return
    with StderrProgress(sys.stderr) as progress:
        _ACTIVE_PROGRESS.append(progress)
        try:
            yield progress
        finally:
            _ACTIVE_PROGRESS.remove(progress)


def _open(db: str, *, create: bool) -> Any:
    # While `scenerag serve` or `view` holds this embedded database, go through that process.
    from scenerag.serve.share import open_store_or_shared

    return open_store_or_shared(db, create=create)


def _read(path: Path, fmt: str) -> Any:
    from scenerag.graph.io import read_scene_graph

    return read_scene_graph(path, fmt)  # type: ignore[arg-type]


#: classes listed per label by ``info`` before "…and N more"
INFO_CLASSES = 24


def _listing(counts: list[tuple[str, int]], limit: int = INFO_CLASSES) -> str:
    """``"chair 3, table 1"``; past ``limit`` entries it ends with ``"…and N more"``."""
    shown = ", ".join(f"{c} {k}" for c, k in counts[:limit])
    rest = len(counts) - limit
    return f"{shown}, …and {rest} more" if rest > 0 else shown


@app.command()
def info(
    file: Annotated[Path, typer.Argument(help="Scene-graph file (scenerag JSON or Hydra/spark_dsg).")],
    format: Annotated[str, typer.Option("--format", help="auto, native or hydra.")] = "auto",
) -> None:
    """Summarise a scene-graph file: node and edge counts by label and type, and every class with its count."""
    with _errors():
        graph = _read(file, format)
        table = Table(title=f"{file.name}: {graph.num_nodes} nodes, {graph.num_edges} edges")
        table.add_column("label")
        table.add_column("nodes", justify="right")
        table.add_column("classes")
        for label, count in sorted(graph.label_counts().items()):
            classes: dict[str, int] = {}
            for n in graph.nodes(label):
                classes[n.class_name] = classes.get(n.class_name, 0) + 1
            table.add_row(
                label, str(count), _listing(sorted(classes.items(), key=lambda kv: (-kv[1], kv[0])))
            )
        console.print(table)
        edges = Table(title="edges")
        edges.add_column("type")
        edges.add_column("count", justify="right")
        for etype, count in sorted(graph.edge_type_counts().items()):
            edges.add_row(etype, str(count))
        console.print(edges)


@app.command()
def load(
    file: Annotated[Path, typer.Argument(help="Scene-graph file to load.")],
    db: DbOption,
    format: Annotated[str, typer.Option("--format", help="auto, native or hydra.")] = "auto",
) -> None:
    """Load a scene graph into the database, replacing what it held (atomically)."""
    opened: dict[str, Any] = {}

    def interrupted() -> str:
        # An embedded store names its live generation: a new one means the swap had happened.
        store = opened.get("store")
        if store is not None and getattr(store, "generation", None) != opened["before"]:
            return f"the load had finished: {db} holds the new graph"
        if store is not None and getattr(store, "generation", True) is None:
            return f"nothing was loaded into {db}"
        return f"the previous graph in {db} is unchanged"

    with _errors(interrupted):
        graph = _read(file, format)
        store = _open(db, create=True)
        opened.update(store=store, before=getattr(store, "generation", None))
        try:
            start = time.perf_counter()
            with _progress() as update:
                store.load(graph, progress=update)
            elapsed = time.perf_counter() - start
        finally:
            store.close()
        from scenerag.store.journal import UndoJournal

        UndoJournal.for_target(db).clear()  # undo entries refer to the replaced graph
        console.print(f"loaded {graph.summary()} into {db} in {elapsed:.2f} s")


def _cell(value: Any) -> str:
    """A result value as table text (markup-escaped: ``[r:CONTAINS]`` is data, not a rich style)."""
    if isinstance(value, (dict, list)):
        return escape(json.dumps(value, separators=(", ", ": ")))
    return "null" if value is None else escape(str(value))


def _check_limits(timeout: float, max_rows: int | None = None) -> None:
    """Refuse a non-positive --timeout / --max-rows, naming the flag."""
    if not timeout > 0:
        _fail(f"--timeout must be a positive number of seconds (got {timeout:g})")
    if max_rows is not None and max_rows < 1:
        _fail(f"--max-rows must be at least 1 (got {max_rows}); to see every row, raise it instead")


@app.command()
def cypher(
    query: Annotated[str, typer.Argument(help="A Neo4j-dialect Cypher query.")],
    db: DbOption,
    write: Annotated[bool, typer.Option("--write", help="Allow the query to change the graph.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Time limit in seconds.")] = 10.0,
    max_rows: Annotated[
        int, typer.Option("--max-rows", help="Row cap; more rows are cut and marked.")
    ] = 1000,
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="Query parameter NAME=JSON.")
    ] = None,
) -> None:
    """Run a Cypher query (read-only unless --write) and print the rows."""
    _check_limits(timeout, max_rows)
    cancelled = "the query was cancelled" + ("; an uncommitted write was rolled back" if write else "")
    with _errors(lambda: cancelled):
        params: dict[str, Any] = {}
        for item in param or []:
            name, sep, raw = item.partition("=")
            if not sep or not name:
                _fail(f"--param {item!r}: expected NAME=VALUE")
            try:
                params[name] = json.loads(raw)
            except json.JSONDecodeError:
                params[name] = raw
        store = _open(db, create=False)
        try:
            result = store.query(query, params, read_only=not write, timeout_s=timeout, max_rows=max_rows)
        finally:
            store.close()
        if as_json:
            sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
            return
        table = Table(show_lines=False)
        for col in result.columns:
            table.add_column(col, overflow="fold")
        for row in result.rows:
            table.add_row(*(_cell(row.get(c)) for c in result.columns))
        console.print(table)
        note = result.truncation_note()
        console.print(
            f"{len(result.rows)} row(s) in {result.elapsed_ms:.1f} ms" + (f" — {note}" if note else "")
        )
        for notice in result.notices:
            console.print(f"[dim]note: {notice}[/]")


@app.command()
def schema(
    db: DbOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print the schema as JSON.")] = False,
) -> None:
    """Print the database schema: labels, relationship types, properties, containment chains."""
    with _errors():
        store = _open(db, create=False)
        try:
            s = store.schema()
        finally:
            store.close()
        if as_json:
            sys.stdout.write(json.dumps(s.to_dict(), indent=2) + "\n")
        else:
            console.print(s.to_text(), highlight=False, markup=False)


LlmOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="Chat model: local (default, offline GGUF), local:/path.gguf, openai:MODEL (any OpenAI-compatible "
        "endpoint; OPENAI_BASE_URL/OPENAI_API_KEY), anthropic:MODEL. Env: SCENERAG_LLM.",
    ),
]


def _chat_model(llm: str | None, progress: Any) -> Any:
    """The chat model named by ``--llm``, reporting each call as stage ``generating`` (with tokens/s)."""
    from scenerag.llm import make_chat_model
    from scenerag.progress import SILENT, ProgressChatModel

    progress.stage("loading the model", llm or os.environ.get("SCENERAG_LLM") or "local")
    model = make_chat_model(llm)
    return model if progress is SILENT else ProgressChatModel(model, progress)


def _agent(
    db: str, llm: str | None, mode: str, schema: bool, max_tool_calls: int, progress: Any
) -> tuple[Any, Any]:
    """The Cypher agent on ``db``; the model (and the agent's embedder) load on a worker thread while the
    JVM starts and the database opens (both release the GIL: ~2 s saved per ``ask``)."""
    from concurrent.futures import ThreadPoolExecutor

    from scenerag.agents import CypherAgent, CypherAgentConfig
    from scenerag.agents.examples import ExampleLibrary, generate_examples
    from scenerag.agents.linking import EntityLinker

    if mode not in ("agentic", "feedforward"):
        _fail(f"--mode {mode!r}: use agentic or feedforward")
    config = CypherAgentConfig(mode=mode, with_schema=schema, max_tool_calls=max_tool_calls)  # type: ignore[arg-type]

    def load() -> tuple[Any, Any]:
        embedder = None
        if config.embedder.lower() not in ("", "none"):
            from scenerag.retrieval.embeddings import make_embedder

            try:
                embedder = make_embedder(config.embedder)
                embedder.embed(["warm up"])
            except (SceneRagError, ImportError):
                embedder = None
        return _chat_model(llm, progress), embedder

    with ThreadPoolExecutor(max_workers=1) as pool:
        loading = pool.submit(load)
        try:
            progress.stage("opening the database", db)
            store = _open(db, create=False)
        except BaseException:
            if not loading.cancel():
                with contextlib.suppress(Exception):
                    loading.result()  # let the worker finish before the error leaves
            raise
        try:
            # what needs only the store (the linker's vocabulary, the generated examples) is made while the
            # model still loads (~0.6 s saved per ``ask``); leaving the pool waits for the worker on errors
            linker = EntityLinker(store)
            linker.vocabulary()
            generated = generate_examples(store.schema(), store)
            model, embedder = loading.result()
        except BaseException:
            store.close()
            raise
    linker.embedder = embedder
    library = ExampleLibrary.for_store(
        store, embedder=embedder, user_files=config.example_files, linker=linker, generated=generated
    )
    agent = CypherAgent(
        model, store, config, embedder=embedder, linker=linker, library=library, progress=progress
    )
    return agent, store


def _print_run(result: Any, as_json: bool, label: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, default=str) + "\n")
        return
    for i, tool in enumerate(result.tools, 1):
        status = f"{tool.rows} row(s)" if tool.ok else f"[red]{escape((tool.error or '').splitlines()[0])}[/]"
        console.print(
            f"[dim]query {i}:[/] {escape(tool.input)}\n  -> {status}", highlight=False, soft_wrap=True
        )
    if result.answer is not None:
        found = " [dim](not found in the graph)[/]" if result.context.get("not_found") else ""
        console.print(f"[bold green]{label}:[/] {escape(str(result.answer))}{found}", highlight=False)
    u = result.usage
    console.print(
        f"[dim]{result.method} · {result.llm_calls} LLM call(s) · {result.tool_calls} query(ies) · "
        f"{u.input_tokens} in / {u.output_tokens} out tokens · {result.wall_s:.1f} s[/]"
    )
    if result.error:
        err_console.print(
            f"[yellow]warning:[/] {escape(user_message(result.error))}", highlight=False, soft_wrap=True
        )


ModeOption = Annotated[str, typer.Option("--mode", help="agentic (several queries) or feedforward (one).")]
SchemaOption = Annotated[
    bool, typer.Option("--schema/--no-schema", help="Put the live schema in the prompt.")
]
ToolBudgetOption = Annotated[int, typer.Option("--max-tool-calls", help="Query budget (agentic).")]
RunJsonOption = Annotated[bool, typer.Option("--json", help="Print the whole run (queries, tokens) as JSON.")]


def _llm_failure(result: Any) -> str | None:
    """The error of a run that never got a reply from the model (a dead endpoint, a missing model file)."""
    if result.answer is None and result.llm_calls == 0 and result.error:
        return str(result.error)
    return None


def _accepted(result: Any, label: str, refusal: str) -> str:
    """The answer of an agent run (a goal, a write) when it is valid; otherwise one error line: the model's
    failure, or the run shown and ``refusal``."""
    failure = _llm_failure(result)
    if failure is not None:
        _fail(f"no {label}: the language model failed: {failure}")
    if result.answer is None or result.error:
        _end_progress()
        _print_run(result, False, label)
        _fail(refusal)
    return str(result.answer)


def _run_agent(
    text: str,
    task: str,
    db: str,
    llm: str | None,
    mode: str,
    schema: bool,
    budget: int,
    as_json: bool,
    quiet: bool,
    answer_type: str | None = None,
) -> None:
    with _errors():
        with _stages(quiet) as progress:
            agent, store = _agent(db, llm, mode, schema, budget, progress)
            try:
                result = agent.run(text, task=task, answer_type=answer_type)  # type: ignore[arg-type]
            finally:
                store.close()
        failure = _llm_failure(result)
        if failure is not None and not as_json:
            _fail(f"no answer: the language model failed: {failure}")
        _print_run(result, as_json, "answer" if task == "qa" else "goal")
        if result.answer is None or (task == "pddl" and result.error):
            raise typer.Exit(1)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question about the scene graph.")],
    db: DbOption,
    llm: LlmOption = None,
    mode: ModeOption = "agentic",
    schema: SchemaOption = True,
    max_tool_calls: ToolBudgetOption = 3,
    as_json: RunJsonOption = False,
    answer_type: Annotated[
        str | None,
        typer.Option("--answer-type", help="Expected SLDP form: set, list, dict, point, number or string."),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Answer a question: an LLM writes read-only Cypher against the database; the answer is in SLDP
    (``<>``: nothing in the graph matches)."""
    if answer_type is not None and answer_type not in ("set", "list", "dict", "point", "number", "string"):
        _fail(f"--answer-type {answer_type!r}: use set, list, dict, point, number or string")
    _run_agent(question, "qa", db, llm, mode, schema, max_tool_calls, as_json, quiet, answer_type)


@app.command()
def ground(
    instruction: Annotated[str, typer.Argument(help="An instruction for the robot.")],
    db: DbOption,
    llm: LlmOption = None,
    mode: ModeOption = "agentic",
    schema: SchemaOption = True,
    max_tool_calls: ToolBudgetOption = 3,
    as_json: RunJsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Ground an instruction to a PDDL goal whose symbols all exist in the database."""
    _run_agent(instruction, "pddl", db, llm, mode, schema, max_tool_calls, as_json, quiet)


@app.command("eval")
def eval_(
    experiment: Annotated[
        Path, typer.Argument(help="Experiment YAML: graph, questions, runs (see scenerag.eval.runner).")
    ],
    out: Annotated[
        Path, typer.Option("--out", help="Directory for records.jsonl and the summary tables.")
    ] = Path("benchmarks/out/eval"),
    questions: Annotated[
        list[str] | None, typer.Option("--questions", "-q", help="Extra question YAML file(s).")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Only the first N questions (0 = all).")] = 0,
    tags: Annotated[
        list[str] | None, typer.Option("--tag", help="Only questions with this tag (repeatable).")
    ] = None,
) -> None:
    """Run an experiment (methods × models × schema × tool budget) and print the results table."""
    with _errors():
        from scenerag.eval.runner import load_experiment, markdown_table, run_experiment, write_results

        exp = load_experiment(experiment, extra_questions=questions)
        if tags:
            exp.questions = [q for q in exp.questions if set(tags) & set(q.tags)]
        if limit > 0:
            exp.questions = exp.questions[:limit]
        if not exp.questions:
            _fail("no question left after --tag/--limit")
        records = []
        with _progress() as update:
            for record in run_experiment(exp, progress=update):
                records.append(record)
                mark = "[green]✓[/]" if record.correct else "[red]✗[/]"
                err_console.print(
                    f"{mark} {record.config} {record.uid}: {escape(f'{record.answer!s:.80}')}",
                    highlight=False,
                )
        rows = write_results(out, records)
        console.print(markdown_table(rows), highlight=False, markup=False)
        console.print(f"[dim]records and tables in {out}[/]")


def _parse_start(start: str | None) -> Any:
    if start is None:
        return None
    parts = start.split(",")
    if len(parts) == 3:
        try:
            return tuple(float(p) for p in parts)
        except ValueError:
            pass
    return start


@app.command()
def plan(
    instruction: Annotated[str, typer.Argument(help="An instruction, or a PDDL goal with --goal.")],
    db: DbOption,
    llm: LlmOption = None,
    goal: Annotated[
        bool, typer.Option("--goal", help="The argument is a PDDL goal: skip LLM grounding.")
    ] = False,
    start: Annotated[
        str | None,
        typer.Option("--start", help="Start: a place/object/agent symbol or x,y,z (default: the Agent)."),
    ] = None,
    time_limit: Annotated[float, typer.Option("--time-limit", help="Planner time limit in seconds.")] = 30.0,
    optimal: Annotated[
        bool, typer.Option("--optimal", help="Optimal search (A* + LM-cut) instead of LAMA.")
    ] = False,
    no_reduce: Annotated[bool, typer.Option("--no-reduce", help="Plan over the whole graph.")] = False,
    pddl_dir: Annotated[
        Path | None, typer.Option("--pddl-dir", help="Also write domain.pddl / problem.pddl.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    quiet: QuietOption = False,
) -> None:
    """Ground an instruction to a PDDL goal (LLM + Cypher), build the problem from the graph, solve it with
    Fast Downward and print the validated plan. An unreachable goal is reported, never a hang."""
    with _errors():
        from scenerag.lang.pddl_goal import goal_symbols
        from scenerag.planning import graph_from_store, plan_for_goal

        with _stages(quiet) as progress:
            progress.stage("opening the database", db)
            store = _open(db, create=False)
            try:
                start_spec = _parse_start(start)
                _check_start(store, start_spec)  # before any model call: a missing start fails at once
                if goal:
                    goal_text = instruction
                else:
                    from scenerag.agents import CypherAgent

                    agent = CypherAgent(_chat_model(llm, progress), store, progress=progress)
                    result = agent.run(instruction, task="pddl")
                    goal_text = _accepted(result, "goal", "could not ground the instruction to a valid goal")
                symbols = set(goal_symbols(goal_text))
                if isinstance(start_spec, str):
                    symbols.add(start_spec)
                progress.stage("reading the planning subgraph")
                graph = graph_from_store(store, symbols)
            finally:
                store.close()
            progress.stage("planning", f"Fast Downward, limit {time_limit:g} s")
            outcome = plan_for_goal(
                graph,
                goal_text,
                start=start_spec,
                time_limit_s=time_limit,
                reduce=not no_reduce,
                search="optimal" if optimal else "satisficing",
            )
        if not goal and not as_json:
            console.print(f"[bold green]goal:[/] {escape(goal_text)}", highlight=False)
        if pddl_dir is not None and outcome.problem is not None:
            outcome.problem.write_pddl(pddl_dir)
        if as_json:
            sys.stdout.write(json.dumps(outcome.to_dict(), indent=2) + "\n")
        else:
            console.print(outcome.render(), highlight=False, markup=False)
        if not outcome.solved:
            raise typer.Exit(2)


def _check_start(store: Any, start: Any) -> None:
    """Fail (naming --start) unless the plan has somewhere to start: an Agent node when --start is not
    given, an existing node for a symbol; positions are checked by the planner."""
    from scenerag.graph import ontology as ont

    if start is None:
        counts = store.schema().node_counts
        if not counts.get(ont.AGENT):
            _fail(
                "the graph has no Agent node to start from: pass --start with a place symbol (e.g. the "
                "robot's current place) or a position x,y,z"
            )
        return
    if isinstance(start, str):
        rows = store.query(
            "MATCH (n) WHERE toLower(n.nodeSymbol) = toLower($s) RETURN n.nodeSymbol AS s LIMIT 1",
            {"s": start},
        ).rows
        if not rows:
            _fail(f"--start {start!r} is not a node of the graph: pass a place or Agent symbol, or x,y,z")


#: exit status of an `update` that ran out of its --timeout (as coreutils' timeout)
UPDATE_TIMEOUT_EXIT = 124


@app.command()
def update(
    instruction: Annotated[str, typer.Argument(help='A correction, e.g. "the bicycle is actually a bag".')],
    db: DbOption,
    llm: LlmOption = None,
    allow_write: Annotated[
        bool, typer.Option("--allow-write", help="Apply the write (otherwise only show it).")
    ] = False,
    cypher_script: Annotated[
        str | None, typer.Option("--cypher", help="Apply this Cypher write instead of asking the LLM.")
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Total time limit in seconds for finding the write (model loading included); past it the "
            "command stops with status 124 and changes nothing.",
        ),
    ] = 60.0,
    quiet: QuietOption = False,
) -> None:
    """Update the scene graph from natural language: the agent links the words to nodes, the LLM writes the
    Cypher, it is checked against the graph and runs only with --allow-write; the diff is shown, and
    `scenerag undo` reverts it."""
    _check_limits(timeout)
    with _errors():
        from scenerag.agents.scene_update import split_statements
        from scenerag.store.journal import UndoJournal, diff, snapshot

        deadline = time.monotonic() + timeout
        with _stages(quiet or cypher_script is not None) as progress:
            progress.stage("opening the database", db)
            store = _open(db, create=False)
            try:
                if cypher_script is not None:
                    script = cypher_script
                else:
                    script = _model_write(instruction, store, llm, progress, deadline, timeout)
            except BaseException:
                store.close()
                raise
        try:
            statements = split_statements(script)
            console.print("[bold]write:[/]\n" + escape(";\n".join(statements)), highlight=False)
            if not allow_write:
                console.print("[yellow]not applied[/]: re-run with --allow-write to change the graph")
                return
            before = snapshot(store)
            for statement in statements:
                store.query(statement, read_only=False)
            changes = diff(before, snapshot(store))
            if changes.empty:
                console.print("the write changed nothing")
                return
            entry = UndoJournal.for_target(db).push(changes, instruction, statements)
            for line in changes.lines():
                console.print(line, highlight=False, markup=False)
            console.print(f"[dim]applied; undo with: scenerag undo --db {db}  (journal {entry.name})[/]")
        finally:
            store.close()


def _model_write(
    instruction: str, store: Any, llm: str | None, progress: Any, deadline: float, timeout: float
) -> str:
    """The write the update agent finds for ``instruction`` by ``deadline`` (model loading included).
    Past the deadline: one line, and the process ends at once with status 124 (the model may still be
    generating on a worker thread; nothing was written)."""
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as FutureTimeout

    from scenerag.agents.scene_update import SceneUpdateAgent

    def out_of_time() -> None:
        _fail(
            f"update: no write found within the {timeout:g} s limit (--timeout); nothing was changed. "
            "Raise --timeout, use a faster --llm, or give the write yourself with --cypher",
            UPDATE_TIMEOUT_EXIT,
        )

    pool = ThreadPoolExecutor(1, thread_name_prefix="scenerag-model")
    try:
        loading = pool.submit(_chat_model, llm, progress)
        try:
            model = loading.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            _exit_now(out_of_time)
        agent = SceneUpdateAgent(model, store, progress=progress)
        left = deadline - time.monotonic()
        if left <= 0:
            _exit_now(out_of_time)
        result = agent.run_update(instruction, timeout_s=left)
    finally:
        pool.shutdown(wait=False)
    if result.context.get("timed_out"):
        _exit_now(out_of_time)
    return _accepted(result, "write", "the model did not produce a valid write")


def _exit_now(report: Callable[[], None]) -> None:
    """Print ``report``'s line and end the process at once: a model still generating on a worker thread
    cannot be stopped, and interpreter shutdown would wait for it (the database was only read)."""
    try:
        report()
    except typer.Exit as exc:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exc.exit_code)


@app.command()
def undo(db: DbOption) -> None:
    """Revert the latest `scenerag update` on this database."""
    with _errors():
        from scenerag.store.journal import UndoJournal

        store = _open(db, create=False)
        try:
            entry = UndoJournal.for_target(db).pop(store)
        finally:
            store.close()
        console.print(f"reverted: {entry['description']}", highlight=False, markup=False)


@app.command()
def export(
    db: DbOption,
    out: Annotated[Path, typer.Argument(help="Output file (scenerag JSON).")],
) -> None:
    """Write the graph held by the database (with any edits) as a scenerag JSON scene-graph file."""
    with _errors():
        from scenerag.graph.io import write_scene_graph
        from scenerag.store.export import export_graph

        store = _open(db, create=False)
        try:
            graph = export_graph(store)
        finally:
            store.close()
        write_scene_graph(graph, out)
        console.print(f"wrote {graph.summary()} to {out}")


def _vectors_home(db: str) -> Path:
    from scenerag.retrieval.entity_store import vectors_home

    return vectors_home(db)


EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="minilm (offline default: all-MiniLM-L6-v2 in numpy), minilm-st (the same through torch), "
        "st:/path/to/model, openai:MODEL.",
    ),
]


@app.command()
def index(db: DbOption, embedder: EmbedderOption = "minilm") -> None:
    """Build or update the entity vector index of the database's graph (only changed nodes are embedded;
    when nothing was written to the database since the last run, it says so without opening it)."""
    with _errors():
        from scenerag.retrieval.entity_store import (
            database_fingerprint,
            read_source_record,
            vectors_dir,
            write_source_record,
        )

        start = time.perf_counter()
        home = vectors_dir(_vectors_home(db))
        fingerprint = database_fingerprint(db)
        record = read_source_record(home)
        if (
            fingerprint is not None
            and record.get("fingerprint") == fingerprint
            and record.get("embedder") == embedder
        ):
            console.print(
                f"up to date: {record.get('nodes')} nodes indexed, nothing written to {db} since "
                f"({time.perf_counter() - start:.2f} s) -> {home}",
                highlight=False,
            )
            return
        from scenerag.retrieval import EntityStore, make_embedder
        from scenerag.store.export import export_graph

        store = _open(db, create=False)
        try:
            graph = export_graph(store)
        finally:
            store.close()
        entities = EntityStore.open(_vectors_home(db), make_embedder(embedder))
        with _progress() as update:
            report = entities.sync(graph, progress=update)
        path = entities.save()
        fingerprint = database_fingerprint(db)  # after the store closed: what a later run will see
        if fingerprint is not None:
            write_source_record(path, fingerprint=fingerprint, embedder=embedder, nodes=len(entities))
        console.print(f"{report.summary()} -> {path}", highlight=False)


@app.command()
def search(
    text: Annotated[str, typer.Argument(help="What to look for, in words (open vocabulary).")],
    db: DbOption,
    k: Annotated[int, typer.Option("-k", help="How many entities.")] = 10,
    label: Annotated[list[str] | None, typer.Option("--label", help="Only nodes with this label.")] = None,
    embedder: EmbedderOption = "minilm",
) -> None:
    """Semantic entity search over the index built by `scenerag index` (the database is not opened)."""
    with _errors():
        from scenerag.retrieval import EntityStore, make_embedder
        from scenerag.retrieval.entity_store import vectors_dir
        from scenerag.retrieval.vector_index import META_FILE

        if k < 1:
            _fail(f"-k must be at least 1 (got {k})")
        if not (vectors_dir(_vectors_home(db)) / META_FILE).exists():
            _fail(f"no entity index for {db}: build it with `scenerag index --db {db}`")
        entities = EntityStore.open(_vectors_home(db), make_embedder(embedder))
        if len(entities) == 0:
            _fail(f"no entity index for {db}: build it with `scenerag index --db {db}`")
        table = Table()
        for col in ("symbol", "score", "matched", "label", "class"):
            table.add_column(col)
        for hit in entities.search(text, k, labels=label or None):
            meta = hit.metadata or {}
            table.add_row(
                hit.symbol,
                f"{hit.score:.3f}",
                _cell(hit.matched_text),
                _cell(meta.get("label")),
                _cell(meta.get("class")),
            )
        console.print(table)


@app.command()
def render(
    out: Annotated[Path, typer.Argument(help="Output folder for the posed RGB-D sequence.")],
    layout: Annotated[str, typer.Option("--layout", help="replica, scannet, hm3d or generic.")] = "replica",
    floors: Annotated[int, typer.Option("--floors", help="Number of floors.")] = 2,
    rooms_per_floor: Annotated[
        int, typer.Option("--rooms-per-floor", help="Rooms beside each corridor.")
    ] = 6,
    frames: Annotated[int, typer.Option("--frames", help="Frames along the robot's trajectory.")] = 1500,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same building).")] = 0,
) -> None:
    """Generate a synthetic multi-floor building and render a posed RGB-D sequence through every room, with
    ground truth (instance/class images, the scene graph) — input for `scenerag build`."""
    with _errors():
        from scenerag.sim.building import BuildingConfig, generate_building
        from scenerag.sim.render import rich_progress, write_sequence

        building = generate_building(
            BuildingConfig(n_floors=floors, rooms_per_floor=rooms_per_floor, seed=seed)
        )
        with rich_progress() as update:
            write_sequence(building, out, layout=layout, n_frames=frames, progress=update)
        gt = building.to_scene_graph()
        console.print(f"wrote {frames} frames ({layout} layout) of a building with {gt.summary()} to {out}")


@app.command()
def build(
    sequence: Annotated[
        Path, typer.Argument(help="Posed RGB-D folder (Replica, ScanNet, HM3D or generic layout).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Output folder (stage caches, graph, report).")],
    config: Annotated[Path | None, typer.Option("--config", help="Build config (JSON or YAML).")] = None,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Template room/floor summaries (fast, no LLM).")
    ] = False,
    llm: LlmOption = None,
    db: Annotated[
        str | None, typer.Option("--db", help="Also load the built graph into this database.")
    ] = None,
    layout: Annotated[
        str, typer.Option("--layout", help="Sequence layout (auto-detected by default).")
    ] = "auto",
    force: Annotated[bool, typer.Option("--force", help="Ignore cached stages.")] = False,
    evaluate: Annotated[
        bool, typer.Option("--evaluate", help="Compare with the sequence's ground truth.")
    ] = False,
    segmenter: Annotated[
        str | None,
        typer.Option(
            "--segmenter",
            help="Keyframe perception: oracle (a synthetic sequence's ground truth), geometric "
            "(class-agnostic objects from the depth map, no model), vision_endpoint or grounded_sam "
            "(their options in --config).",
        ),
    ] = None,
) -> None:
    """Build a hierarchical KeySG scene graph (building → floors → rooms → objects → functional elements,
    keyframes) from posed RGB-D. Stages are cached in --out and resumed."""
    with _errors():
        from scenerag.build import BuildConfig, evaluate_build, run_build
        from scenerag.sim.render import rich_progress

        cfg = BuildConfig.from_file(config) if config is not None else BuildConfig()
        overrides: dict[str, Any] = {}
        if no_llm:
            overrides.setdefault("description", {})["summarizer"] = "template"
        if llm is not None:
            overrides.setdefault("description", {})["llm"] = llm
        if db is not None:
            overrides["store"] = db
        if segmenter is not None:
            overrides["segmentation"] = {"segmenter": segmenter}
        if overrides:
            cfg = cfg.with_overrides(overrides)
        with rich_progress("building") as update:
            report = run_build(sequence, out, cfg, progress=update, layout=layout, force=force)
        console.print(report.to_text(), highlight=False, markup=False)
        if evaluate:
            console.print(
                evaluate_build(report.artifacts, config=cfg).to_text(), highlight=False, markup=False
            )


@app.command()
def serve(
    db: DbOption,
    host: Annotated[
        str, typer.Option("--host", help="Bind address; off loopback a --token is required.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8765,
    token: Annotated[
        str | None, typer.Option("--token", help="Bearer token clients must send (env SCENERAG_TOKEN).")
    ] = None,
    llm: LlmOption = None,
    allow_write: Annotated[
        bool, typer.Option("--allow-write", help="Let /cypher requests that ask for it write.")
    ] = False,
    embedder: Annotated[
        str | None,
        typer.Option("--embedder", help="Semantic retrieve_subgraph with this embedder (e.g. minilm)."),
    ] = None,
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve MCP over stdin/stdout instead of HTTP.")
    ] = False,
) -> None:
    """HTTP API + MCP server exposing cypher_query (read-only), schema, ask, ground, plan, retrieve_subgraph.
    The model (--llm, default local; none: no model) loads in the background; /health says when it is ready.
    Other scenerag commands on the same --db go through the server while it runs."""
    with _errors():
        from scenerag.serve import serve as serve_http
        from scenerag.serve import serve_mcp_stdio

        spec = llm if llm is not None else os.environ.get("SCENERAG_LLM") or "local"
        if stdio:
            serve_mcp_stdio(db, llm=spec, embedder=embedder)
        else:
            serve_http(db, host, port, token, llm=spec, allow_write=allow_write, embedder=embedder)


@app.command()
def view(
    db: DbOption,
    host: Annotated[
        str, typer.Option("--host", help="Bind address (loopback only: viser has no auth).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8080,
    llm: LlmOption = None,
    png: Annotated[Path | None, typer.Option("--png", help="Write a static PNG instead of serving.")] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML page instead.")
    ] = None,
    highlight: Annotated[
        list[str] | None,
        typer.Option("--highlight", help="Node symbols to highlight, comma-separated or repeated: O3,R1."),
    ] = None,
) -> None:
    """3D web viewer: the hierarchy as layered nodes and edges, ask questions and see the answer's nodes
    highlighted with the Cypher that found them. --png / --html export a static view for reports."""
    marked = _symbols(highlight)
    with _errors():
        if png is not None or html is not None:
            from scenerag.store.export import export_graph
            from scenerag.viz import export_html, export_png

            store = _open(db, create=False)
            try:
                graph = export_graph(store)
            finally:
                store.close()
            if png is not None:
                export_png(graph, png, highlight=marked)
                console.print(f"wrote {png}")
            if html is not None:
                export_html(graph, html, highlight=marked)
                console.print(f"wrote {html}")
            return
        from scenerag.store.arcade import use_server_jvm
        from scenerag.viz import run_viewer

        # the viewer serves the database (to browsers and, through its share, to other commands) for as
        # long as it runs: the JVM it starts gets a server's heap settings, as `scenerag serve`'s does
        use_server_jvm()
        model = llm or os.environ.get("SCENERAG_LLM") or "local"  # the default of every --llm
        run_viewer(db, host, port, None if model.lower() == "none" else model, highlight=marked)


def _symbols(values: list[str] | None) -> list[str]:
    """Symbols from repeated and comma-separated option values (``O3,R1`` ``--highlight P5``)."""
    return list(dict.fromkeys(s.strip() for v in values or () for s in v.split(",") if s.strip()))


def _demo_data_dirs() -> list[Path]:
    dirs = [Path(os.environ["SCENERAG_DATA"])] if os.environ.get("SCENERAG_DATA") else []
    return [*dirs, Path.cwd() / "shared" / "data", Path.cwd().parent / "shared" / "data"]


def _demo_file(file: Path | None) -> Path:
    """``--file``, else the Hydra example from the first data folder that holds it."""
    if file is not None:
        return file
    for folder in _demo_data_dirs():
        if (folder / DEMO_GRAPH_NAME).is_file():
            return folder / DEMO_GRAPH_NAME
    looked = ", ".join(str(d) for d in _demo_data_dirs())
    _fail(f"no scene graph given and {DEMO_GRAPH_NAME} not found (looked in {looked}): pass --file FILE")
    raise AssertionError  # unreachable: _fail exits


def _demo_queries(store: Any, graph: Any) -> list[tuple[str, str]]:
    """Example questions and their Cypher; the room and the place they name are picked from the loaded graph."""
    from scenerag.graph import ontology as ont

    queries = [
        (
            "Which rooms are there?",
            "MATCH (r:Room) RETURN r.nodeSymbol AS room, r.class AS class ORDER BY room",
        )
    ]
    rows = store.query(
        "MATCH (r:Room)-[:CONTAINS*]->(o:Object) RETURN r.nodeSymbol AS room, count(DISTINCT o) AS n "
        "ORDER BY n DESC, room LIMIT 1"
    ).rows
    if rows:
        room = rows[0]["room"]
        queries.append(
            (
                f"What objects are in room {room} (through its places)?",
                f"MATCH (r:Room {{nodeSymbol:'{room}'}})-[:CONTAINS*]->(o:Object) "
                "RETURN o.class AS class, count(DISTINCT o) AS n ORDER BY n DESC, class",
            )
        )
    queries.append(
        (
            "Which three objects are closest to the origin?",
            "MATCH (o:Object) RETURN o.nodeSymbol AS object, o.class AS class, "
            "round(point.distance(o.center, point({x: 0.0, y: 0.0, z: 0.0})) * 100) / 100 AS metres "
            "ORDER BY metres LIMIT 3",
        )
    )
    counts = graph.label_counts()
    label = ont.MESH_PLACE if counts.get(ont.MESH_PLACE) else ont.PLACE
    edge = ont.sibling_edge_type(label)
    places = list(graph.nodes(label))
    if places:
        place = max(places, key=lambda p: len(graph.neighbors(p.symbol, edge))).symbol
        noun = "mesh places" if label == ont.MESH_PLACE else "places"
        queries.append(
            (
                f"How many {noun} are within 5 hops of place {place}?",
                f"MATCH (p:{label} {{nodeSymbol:'{place}'}})-[:{edge}*1..5]-(q:{label}) "
                "RETURN count(DISTINCT q) AS places",
            )
        )
    queries.append(
        (
            "Average height and spread of each object class",
            "MATCH (o:Object) RETURN o.class AS class, count(*) AS n, round(avg(o.center.z) * 100) / 100 AS mean_z, "
            "round(stDev(o.center.x) * 100) / 100 AS sd_x ORDER BY n DESC LIMIT 5",
        )
    )
    return queries


@app.command()
def demo(
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            help=f"Scene graph to load (default: {DEMO_GRAPH_NAME} from $SCENERAG_DATA, ./shared/data or "
            "../shared/data).",
        ),
    ] = None,
    db: Annotated[str, typer.Option("--db", help="Database directory for the demo.")] = ".scenerag/demo-db",
    llm: LlmOption = None,
    use_llm: Annotated[
        bool, typer.Option("--llm-questions/--no-llm", help="Also let the LLM agent answer.")
    ] = True,
) -> None:
    """Load a scene graph (the Hydra example by default) into the embedded database, answer questions with
    Cypher, then let the LLM agent (the offline local model by default) answer a question and ground an
    instruction by writing Cypher; the answers expected of it are computed from the loaded graph."""
    with _errors():
        file = _demo_file(file)
        graph = _read(file, "auto")
        console.print(f"[bold]Scene graph[/] {file.name}: {graph.summary()}")
        store = _open(db, create=True)
        try:
            start = time.perf_counter()
            with _progress() as update:
                store.load(graph, progress=update)
            console.print(f"loaded into {db} (embedded ArcadeDB) in {time.perf_counter() - start:.2f} s\n")
            console.print("[bold]Schema the LLM sees:[/]")
            console.print(store.schema_text(), highlight=False, markup=False)
            for question, query in _demo_queries(store, graph):
                result = store.query(query)
                console.print(
                    f"\n[bold cyan]Q:[/] {escape(question)}\n[dim]{escape(query)}[/]", highlight=False
                )
                table = Table()
                for col in result.columns:
                    table.add_column(col)
                for row in result.rows:
                    table.add_row(*(_cell(row.get(c)) for c in result.columns))
                console.print(table)
            try:
                store.query("MATCH (o:Object) SET o.class = 'bag'")
            except SceneRagError as exc:
                console.print(
                    f"\n[bold]A write in read-only mode is refused:[/] {escape(str(exc).splitlines()[0])}"
                )
            expected = _demo_expected(store)
            if use_llm:
                _demo_agent(store, llm, expected)
        finally:
            store.close()


# What the LLM agent is asked: (task, text, Cypher computing the expected answers from the loaded graph as
# column ``answer``, format of one expected answer). Several rows: any of them is correct; none: nothing in
# the graph fits, and no answer is expected.
DEMO_AGENT_TASKS: list[tuple[str, str, str, str]] = [
    ("qa", "How many rooms are there?", "MATCH (r:Room) RETURN count(r) AS answer", "{}"),
    (
        "pddl",
        "Pick up the bicycle.",
        "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS answer ORDER BY answer",
        "(holding {})",
    ),
]


def _demo_expected(store: Any) -> list[tuple[str, str, list[str]]]:
    """Each agent task with its expected answers, computed from the loaded graph (and printed)."""
    console.print("\n[bold]Expected answers for the LLM agent[/], computed from this graph with Cypher:")
    out = []
    for task, text, query, template in DEMO_AGENT_TASKS:
        solutions = [template.format(row["answer"]) for row in store.query(query).rows]
        shown = " or ".join(solutions) if solutions else "none (nothing in this graph fits)"
        console.print(
            f"  expected: {escape(text)} -> {escape(shown)}\n  [dim]{escape(query)}[/]",
            highlight=False,
            soft_wrap=True,
        )
        out.append((task, text, solutions))
    return out


def _demo_agent(store: Any, llm: str | None, expected: list[tuple[str, str, list[str]]]) -> None:
    from scenerag.agents import CypherAgent, CypherAgentConfig
    from scenerag.eval.questions import Question
    from scenerag.llm import make_chat_model
    from scenerag.progress import ProgressChatModel

    with _stages(False) as progress:
        progress.stage("loading the model", llm or os.environ.get("SCENERAG_LLM") or "local")
        model = make_chat_model(llm)
    console.print(
        f"\n[bold]LLM agent[/] ({model.name}) writes read-only Cypher to answer; this takes a while on a CPU."
    )
    for task, text, solutions in expected:
        console.print(f"\n[bold cyan]{'Q' if task == 'qa' else 'Instruction'}:[/] {escape(text)}")
        with _stages(False) as progress:
            agent = CypherAgent(
                ProgressChatModel(model, progress),
                store,
                CypherAgentConfig(max_tool_calls=3),
                progress=progress,
            )
            result = agent.run(text, task=task)  # type: ignore[arg-type]
        _print_run(result, False, "answer" if task == "qa" else "goal")
        comparator = "SLDP" if task == "qa" else "PDDL"
        if solutions:
            correct = any(
                Question(uid=task, question=text, solution=s, comparator=comparator).is_correct(result.answer)
                for s in solutions
            )
        else:
            correct = result.answer is None or bool(result.error)
        want = " or ".join(solutions) or "no answer"
        console.print(f"  {'[green]correct[/]' if correct else f'[red]expected {want}[/]'}")


def _register_subcommands() -> None:
    from scenerag.cli_bench import bench_app

    app.add_typer(bench_app, name="bench")


_register_subcommands()


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
