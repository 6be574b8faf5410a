"""Experiment runner: a YAML of questions × a YAML of configurations (method × model × schema × tool-call
budget) -> one record per (configuration, question) and a results table in the shape of the seeds'
Tables I–IV (success rate, valid-query rate, input / tool / output tokens, tool calls, wall time).

Config file::

    graph: ../shared/data/hydra_small_indoor_dsg.json      # or  graph: {outdoor: {n_places: 15944}}
    questions: [hydra_qa.yaml, hydra_pddl.yaml]            # relative to the config file
    runs:
      - {method: cypher, mode: agentic, schema: [true, false], max_tool_calls: 5, model: local}
      - {method: context, model: local}
      - {method: codegen, mode: [feedforward, agentic], model: openai:gpt-4.1-mini}

List values expand to every combination.
"""

from __future__ import annotations

import csv
import itertools
import json
import statistics
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scenerag.errors import SceneRagError
from scenerag.eval.questions import Question, load_questions
from scenerag.graph.model import SceneGraph

if TYPE_CHECKING:
    from scenerag.agents.result import AgentResult

Method = Literal["cypher", "cypher-tools", "context", "codegen"]


class ExperimentError(SceneRagError):
    """An experiment file that cannot be used: names the file and field."""


class RunConfig(BaseModel):
    """One configuration (after list expansion)."""

    model_config = ConfigDict(extra="forbid")
    method: Method = "cypher"
    mode: Literal["agentic", "feedforward"] = "agentic"
    schema_: bool = Field(True, alias="schema")
    max_tool_calls: int = 5
    model: str = "local"

    @property
    def label(self) -> str:
        parts = [self.method, self.mode]
        if self.method == "cypher":
            parts.append("schema" if self.schema_ else "noschema")
        if self.mode == "agentic" and self.method != "context":
            parts.append(f"M={self.max_tool_calls}")
        return "-".join(parts)


class ExperimentFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    graph: str | dict[str, dict[str, Any]]
    questions: list[str] = Field(default_factory=list)
    db: str | None = None
    runs: list[dict[str, Any]]


def expand_runs(entries: list[dict[str, Any]]) -> list[RunConfig]:
    """Every combination of the list-valued fields of each entry."""
    out: list[RunConfig] = []
    for entry in entries:
        keys = list(entry)
        values = [v if isinstance(v, list) else [v] for v in entry.values()]
        for combo in itertools.product(*values):
            out.append(RunConfig.model_validate(dict(zip(keys, combo, strict=True))))
    return out


@dataclass
class Experiment:
    """A parsed experiment: the graph to load, questions and configurations."""

    graph: SceneGraph
    questions: list[Question]
    runs: list[RunConfig]
    db: str | None = None
    source: str = "<memory>"


def load_experiment(path: str | Path, *, extra_questions: list[str] | None = None) -> Experiment:
    """Read an experiment YAML (see module docstring); paths are relative to the file."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
        spec = ExperimentFile.model_validate(data)
    except FileNotFoundError:
        raise ExperimentError(f"{path}: file not found") from None
    except yaml.YAMLError as exc:
        raise ExperimentError(f"{path}: not valid YAML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ExperimentError(f"{path}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    base = path.parent
    graph = _load_graph(spec.graph, base, str(path))
    questions: list[Question] = []
    for q in [*spec.questions, *(extra_questions or [])]:
        qp = Path(q) if Path(q).is_absolute() or Path(q).exists() else base / q
        questions.extend(load_questions(qp))
    if not questions:
        raise ExperimentError(f"{path}: no questions (give 'questions:' or --questions)")
    try:
        runs = expand_runs(spec.runs)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ExperimentError(
            f"{path}: runs: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        ) from None
    return Experiment(graph, questions, runs, spec.db, str(path))


def _load_graph(spec: str | dict[str, dict[str, Any]], base: Path, source: str) -> SceneGraph:
    if isinstance(spec, str):
        from scenerag.graph.io import read_scene_graph

        p = Path(spec)
        return read_scene_graph(p if p.is_absolute() or p.exists() else base / p)
    if set(spec) == {"outdoor"}:
        from scenerag.sim.outdoor import generate_outdoor_graph

        return generate_outdoor_graph(**spec["outdoor"])
    raise ExperimentError(f"{source}: graph: give a file path or {{outdoor: {{...}}}}")


@dataclass
class Record:
    """One (configuration, question) outcome."""

    config: str
    model: str
    uid: str
    tags: list[str]
    correct: bool
    answer: str | None
    solution: str
    input_tokens: int
    tool_tokens: int
    output_tokens: int
    tool_calls: int
    valid_tool_rate: float | None
    llm_calls: int
    wall_s: float
    error: str | None = None
    queries: list[str] = field(default_factory=list)

    @classmethod
    def from_result(cls, config: str, model: str, question: Question, result: AgentResult) -> Record:
        """The record of ``result``, the agent's run on ``question``, checked against its solution."""
        return cls(
            config=config,
            model=model,
            uid=question.uid,
            tags=list(question.tags),
            correct=question.is_correct(result.answer),
            answer=result.answer,
            solution=question.solution,
            input_tokens=result.usage.input_tokens,
            tool_tokens=result.tool_tokens,
            output_tokens=result.usage.output_tokens,
            tool_calls=result.tool_calls,
            valid_tool_rate=result.valid_tool_rate,
            llm_calls=result.llm_calls,
            wall_s=result.wall_s,
            error=result.error,
            queries=[t.input for t in result.tools],
        )


def _make_agent(run: RunConfig, model: Any, store: Any, graph: SceneGraph) -> Any:
    from scenerag.agents import CypherAgent, CypherAgentConfig, PddlGrounder
    from scenerag.agents.baselines import CodeGenAgent, CodeGenConfig, ContextWindowAgent, ContextWindowConfig

    if run.method == "cypher":
        cfg = CypherAgentConfig(mode=run.mode, with_schema=run.schema_, max_tool_calls=run.max_tool_calls)
        return CypherAgent(model, store, cfg)
    if run.method == "cypher-tools":  # the seed papers' tool-calling loop, for comparison
        from scenerag.agents import ToolCallingCypherAgent, ToolCallingCypherConfig

        tcfg = ToolCallingCypherConfig(
            mode=run.mode, with_schema=run.schema_, max_tool_calls=run.max_tool_calls
        )
        return ToolCallingCypherAgent(model, store, tcfg)
    grounder = PddlGrounder(store)
    if run.method == "context":
        return ContextWindowAgent(model, graph, ContextWindowConfig(mode=run.mode), grounder=grounder)
    return CodeGenAgent(
        model, graph, CodeGenConfig(mode=run.mode, max_tool_calls=run.max_tool_calls), grounder=grounder
    )


def run_experiment(
    experiment: Experiment,
    *,
    model_factory: Callable[[str], Any] | None = None,
    store: Any = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Iterator[Record]:
    """Run every configuration on every question, yielding records as they finish.

    The graph is loaded once into ``store`` (default: the embedded database at ``experiment.db`` or a
    temporary directory). Models are built once per spec by ``model_factory`` (default ``make_chat_model``).
    """
    from scenerag.llm import make_chat_model
    from scenerag.store import open_store

    factory = model_factory or make_chat_model
    models: dict[str, Any] = {}
    own_store = store is None
    tmp = None
    if own_store:
        if experiment.db:
            store = open_store(experiment.db)
        else:
            tmp = tempfile.TemporaryDirectory(prefix="scenerag-eval-")
            store = open_store(Path(tmp.name) / "db")
        store.load(experiment.graph)
    total = len(experiment.runs) * len(experiment.questions)
    done = 0
    try:
        for run in experiment.runs:
            if run.model not in models:
                models[run.model] = factory(run.model)
            agent = _make_agent(run, models[run.model], store, experiment.graph)
            for q in experiment.questions:
                result = agent.run(q.question, task=q.task, answer_type=q.answer_type())
                done += 1
                if progress:
                    progress(run.label, done, total)
                yield Record.from_result(run.label, run.model, q, result)
    finally:
        if own_store:
            store.close()
        if tmp is not None:
            tmp.cleanup()


SUMMARY_COLUMNS = (
    "config",
    "model",
    "questions",
    "success",
    "success_rate",
    "valid_query_rate",
    "input_tokens",
    "tool_tokens",
    "output_tokens",
    "tool_calls",
    "wall_s",
)


def summarize(records: list[Record]) -> list[dict[str, Any]]:
    """One row per (config, model): success rate, valid-query rate and per-question means."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        groups.setdefault((r.config, r.model), []).append(r)
    rows = []
    for (config, model), rs in groups.items():
        rates = [r.valid_tool_rate for r in rs if r.valid_tool_rate is not None]
        rows.append(
            {
                "config": config,
                "model": model,
                "questions": len(rs),
                "success": sum(r.correct for r in rs),
                "success_rate": sum(r.correct for r in rs) / len(rs),
                "valid_query_rate": statistics.fmean(rates) if rates else None,
                "input_tokens": statistics.fmean(r.input_tokens for r in rs),
                "tool_tokens": statistics.fmean(r.tool_tokens for r in rs),
                "output_tokens": statistics.fmean(r.output_tokens for r in rs),
                "tool_calls": statistics.fmean(r.tool_calls for r in rs),
                "wall_s": statistics.fmean(r.wall_s for r in rs),
            }
        )
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The summary as a Markdown table."""
    head = (
        "| config | model | success | valid queries | in tok | tool tok | out tok | tool calls | s/question |"
    )
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        vq = "–" if r["valid_query_rate"] is None else f"{r['valid_query_rate']:.0%}"
        lines.append(
            f"| {r['config']} | {r['model']} | {r['success']}/{r['questions']} ({r['success_rate']:.0%}) | {vq} | "
            f"{r['input_tokens']:.0f} | {r['tool_tokens']:.0f} | {r['output_tokens']:.0f} | {r['tool_calls']:.1f} | "
            f"{r['wall_s']:.1f} |"
        )
    return "\n".join(lines)


def write_results(out_dir: str | Path, records: list[Record]) -> list[dict[str, Any]]:
    """Write ``records.jsonl``, ``summary.csv`` and ``summary.md`` under ``out_dir``; return the summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "records.jsonl").open("w") as fh:
        for r in records:
            fh.write(json.dumps(r.__dict__, default=str) + "\n")
    rows = summarize(records)
    with (out / "summary.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(SUMMARY_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    (out / "summary.md").write_text(markdown_table(rows) + "\n")
    return rows
