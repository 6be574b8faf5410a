"""Episodes and the EmbodiedRAG benchmark: agents × tasks × distractor settings, and per-agent summaries.

Contract: ``run_benchmark(config)`` plays one episode per (task, distractor setting, agent) on a fresh
``HouseholdEnv`` and returns a :class:`BenchmarkReport`; each task's pre-retrieval runs once and is reused
by every retrieving agent (its tokens are still charged to each episode). ``summarize`` gives, per agent and
distractor setting, success rate (easy/hard), mean time per planning step, cumulative planner tokens per
episode (provider usage), full-graph requests and retrieval recall. ``measure_replayed_tokens`` counts, with
a real tokenizer, the exact prompts each agent would send along the oracle solver's trajectory (no model
decisions), for token comparisons where full episodes with a slow model are out of reach.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scenerag.agents.embodied.decisions import CHATML_OVERHEAD_TOKENS, ReplayDecider
from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.agents.embodied.household import HOUSEHOLD, HouseholdEpisode
from scenerag.agents.embodied.planner import AgentKind, EmbodiedPlanner, PlannerConfig, parse_agent_kind
from scenerag.agents.embodied.pre_retrieval import EntitySpec, PreRetrieval, PreRetriever
from scenerag.agents.embodied.records import EpisodeResult, StepRecord
from scenerag.llm.base import ChatModel
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.subgraph import SubgraphConfig
from scenerag.sim.household.env import HouseholdEnv
from scenerag.sim.household.layouts import DISTRACTOR_SETTINGS, LAYOUT_STYLES
from scenerag.sim.household.solver import solve
from scenerag.sim.household.tasks import TASKS, Task, get_task

ProgressFn = Callable[[str], None]
ALL_AGENTS: tuple[AgentKind, ...] = tuple(AgentKind)


def select_tasks(spec: str | Iterable[str] | None) -> list[Task]:
    """Tasks by ``"all"``/``None``, ``"easy"``, ``"hard"``, or ids (a comma-separated string or a list);
    ``"easy:3"`` takes the first three easy tasks."""
    if spec is None:
        return list(TASKS)
    items = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else [str(s).strip() for s in spec]
    out: dict[str, Task] = {}
    for item in items:
        if not item:
            continue
        group, _, count = item.partition(":")
        if group in ("all", "easy", "hard"):
            chosen = [t for t in TASKS if group == "all" or t.difficulty == group]
            if count:
                if not count.isdigit():
                    raise EmbodiedConfigError(f"bad task selection {item!r}", hint="use e.g. easy:3")
                chosen = chosen[: int(count)]
            out.update((t.task_id, t) for t in chosen)
        else:
            task = get_task(item)
            out[task.task_id] = task
    if not out:
        raise EmbodiedConfigError(f"no tasks selected by {spec!r}", hint="use all, easy, hard, easy:3 or ids")
    return list(out.values())


@dataclass
class BenchmarkConfig:
    """What to run: agents, tasks (see ``select_tasks``), distractor settings, the kitchen layout, and the
    planner / subgraph settings. ``style=None`` cycles the five layout styles over the tasks.
    ``count_along``: agents whose live episodes are replayed by ``count_agent`` (Full-Mem) to count, with
    the model's tokenizer, the prompts it would have built along the same trajectory (its token cost where
    it cannot run: its prompts exceed the context)."""

    agents: Sequence[AgentKind | str] = ALL_AGENTS
    tasks: str | Sequence[str] | None = "easy:3"
    distractors: Sequence[int] = (DISTRACTOR_SETTINGS[-1],)
    style: str | None = "l_shape"
    seed: int = 0
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    subgraph: SubgraphConfig | None = None
    count_along: Sequence[AgentKind | str] = ()
    count_agent: AgentKind | str = AgentKind.FULL_MEM

    def agent_kinds(self) -> list[AgentKind]:
        return [parse_agent_kind(a) for a in self.agents]

    def layout_for(self, task: Task) -> str:
        """The layout of ``task``'s kitchen: ``style``, or the styles cycled by the task's place in ``TASKS``
        (so a task gets the same kitchen whichever tasks run beside it)."""
        return self.style if self.style is not None else cycled_style(task)


def cycled_style(task: Task) -> str:
    """The layout style of ``task`` when the five styles are cycled over the 40 tasks."""
    return LAYOUT_STYLES[TASKS.index(task) % len(LAYOUT_STYLES)]


@dataclass
class CountedAlong:
    """The tokens ``counted_agent`` would have spent on the trajectory a live episode of ``agent`` took:
    its prompts rebuilt at every step of that trajectory and counted with the model's tokenizer, replies
    counted as the text action; ``over_context``: those prompts longer than the model's context;
    ``live_static_tokens`` / ``counted_static_tokens``: the tokens of each agent's static prefix (its system
    prompt as the chat template wraps it, the same at every call, kept by a local model as saved state), so
    that the ratio can also be read on the tokens beyond it (None in records made before they were
    counted)."""

    task_id: str
    difficulty: str
    n_distractors: int
    agent: str
    counted_agent: str
    steps: int
    live_planner_tokens: int
    counted_planner_tokens: int
    max_prompt: int
    over_context: int
    live_steps: int | None = None
    live_static_tokens: int | None = None
    counted_static_tokens: int | None = None

    @property
    def ratio(self) -> float | None:
        return self.counted_planner_tokens / self.live_planner_tokens if self.live_planner_tokens else None

    @property
    def live_beyond_static(self) -> int | None:
        """Live planner tokens minus the static prefix of every call."""
        if self.live_static_tokens is None or self.live_steps is None:
            return None
        return self.live_planner_tokens - self.live_static_tokens * self.live_steps

    @property
    def counted_beyond_static(self) -> int | None:
        if self.counted_static_tokens is None:
            return None
        return self.counted_planner_tokens - self.counted_static_tokens * self.steps

    @property
    def ratio_beyond_static(self) -> float | None:
        """The ratio on the tokens beyond each agent's static prefix."""
        live, counted = self.live_beyond_static, self.counted_beyond_static
        return counted / live if live and counted is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "ratio": self.ratio, "ratio_beyond_static": self.ratio_beyond_static}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CountedAlong:
        return cls(**{k: v for k, v in data.items() if k not in ("ratio", "ratio_beyond_static")})


@dataclass
class BenchmarkReport:
    """Every episode of a run, the pre-retrieval of each task instruction, and the token counts of
    ``BenchmarkConfig.count_along``."""

    episodes: list[EpisodeResult]
    pre_retrievals: dict[str, dict[str, Any]] = field(default_factory=dict)
    counted: list[CountedAlong] = field(default_factory=list)

    def to_dict(self, *, trajectories: bool = False) -> dict[str, Any]:
        return {
            "episodes": [e.to_dict(trajectory=trajectories) for e in self.episodes],
            "pre_retrievals": self.pre_retrievals,
            "summary": [row.to_dict() for row in summarize(self.episodes)],
            "counted_along": [c.to_dict() for c in self.counted],
            "counted_ratios": counted_ratios(self.counted),
        }


def counted_ratios(counted: Sequence[CountedAlong]) -> dict[str, dict[str, Any]]:
    """Per (agent, distractor setting): median, min and max of counted / live planner tokens, the pooled
    ratio (sums), and how many of the counted prompts exceeded the context."""
    groups: dict[tuple[str, str, int], list[CountedAlong]] = {}
    for c in counted:
        groups.setdefault((c.counted_agent, c.agent, c.n_distractors), []).append(c)
    out: dict[str, dict[str, Any]] = {}
    for (counted_agent, agent, n), group in sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0][1])):
        ratios = [c.ratio for c in group if c.ratio is not None]
        live = sum(c.live_planner_tokens for c in group)
        out[f"{counted_agent}/{agent}@{n}"] = {
            "counted_agent": counted_agent,
            "agent": agent,
            "n_distractors": n,
            "episodes": len(group),
            "median": statistics.median(ratios) if ratios else None,
            "min": min(ratios) if ratios else None,
            "max": max(ratios) if ratios else None,
            "pooled": sum(c.counted_planner_tokens for c in group) / live if live else None,
            "median_counted_tokens": statistics.median(c.counted_planner_tokens for c in group),
            "median_live_tokens": statistics.median(c.live_planner_tokens for c in group),
            "prompts_over_context": sum(c.over_context for c in group),
            "steps": sum(c.steps for c in group),
            **_beyond_static(group),
        }
    return out


def _beyond_static(group: Sequence[CountedAlong]) -> dict[str, Any]:
    """Median and pooled ratio on the tokens beyond each agent's static prefix, and the prefixes' sizes
    (None where a record did not count them)."""
    known = [c for c in group if c.ratio_beyond_static is not None]
    if len(known) < len(group) or not known:
        return {"median_beyond_static": None, "pooled_beyond_static": None}
    live = sum(c.live_beyond_static or 0 for c in known)
    return {
        "median_beyond_static": statistics.median(c.ratio_beyond_static or 0.0 for c in known),
        "pooled_beyond_static": sum(c.counted_beyond_static or 0 for c in known) / live if live else None,
        "live_static_tokens": statistics.median(c.live_static_tokens or 0 for c in known),
        "counted_static_tokens": statistics.median(c.counted_static_tokens or 0 for c in known),
    }


def format_counted(counted: Sequence[CountedAlong]) -> list[str]:
    """One line per (agent, distractor setting) of :func:`counted_ratios`."""
    lines = []
    for row in counted_ratios(counted).values():
        lines.append(
            f"distractors {row['n_distractors']:4d}: {row['counted_agent']} prompts counted along "
            f"{row['agent']}'s live trajectories / its live planner tokens: median {_fmt(row['median'], '.1f')}x "
            f"(min {_fmt(row['min'], '.1f')}x, max {_fmt(row['max'], '.1f')}x, pooled {_fmt(row['pooled'], '.1f')}x, "
            f"{row['episodes']} episodes; median {row['median_counted_tokens']:.0f} vs "
            f"{row['median_live_tokens']:.0f} tokens; {row['prompts_over_context']} of {row['steps']} counted "
            f"prompts over the context)"
        )
        if row.get("median_beyond_static") is not None:
            lines.append(
                f"  beyond the static prefix ({row['live_static_tokens']:.0f} / {row['counted_static_tokens']:.0f} "
                f"tokens a call, system prompt): median {row['median_beyond_static']:.1f}x, pooled "
                f"{_fmt(row['pooled_beyond_static'], '.1f')}x"
            )
    return lines


def _replaying_agent(
    model: ChatModel,
    kind: AgentKind | str,
    plan: Sequence[tuple[str, dict[str, str]]],
    counter: Callable[[str], int],
    embedder: Embedder | None,
    config: PlannerConfig,
    subgraph: SubgraphConfig | None,
    replies: Sequence[tuple[str, Sequence[str]]] | None = None,
) -> EmbodiedPlanner:
    """An agent of ``kind`` on the household whose decisions replay ``plan`` (with the recorded
    ``replies``' thoughts and objects, if given) and whose usage is ``counter`` of the prompts it builds."""
    return EmbodiedPlanner(
        model,
        kind,
        HOUSEHOLD,
        embedder=embedder,
        config=config,
        subgraph_config=subgraph,
        decider=ReplayDecider(plan, counter, replies=replies),
    )


_NOT_SENT = ("invalid_reply", "refused_repeat", "full_graph_refused")


def _executed(episode: EpisodeResult) -> list[StepRecord]:
    """The steps of ``episode`` whose call reached the environment (or was ``done``)."""
    return [s for s in episode.trajectory if s.action and s.cause not in _NOT_SENT]


def _replay_config(base: PlannerConfig | None, steps: int) -> PlannerConfig:
    """``base``'s prompt settings for a replay of ``steps`` calls."""
    base = base or PlannerConfig()
    return PlannerConfig(
        max_steps=max(1, steps),
        history_steps=base.history_steps,
        observation_chars=base.observation_chars,
        thought_chars=base.thought_chars,
        max_reply_tokens=base.max_reply_tokens,
        list_calls=base.list_calls,
        walkthrough=base.walkthrough,
        refuse_undo=base.refuse_undo,
        task_words=base.task_words,
        refuse_known_answers=base.refuse_known_answers,
        hand_in_thought=base.hand_in_thought,
    )


def count_along(
    model: ChatModel,
    kind: AgentKind | str,
    episode: EpisodeResult,
    task: Task,
    *,
    style: str,
    seed: int = 0,
    embedder: Embedder | None = None,
    pre_retrieval: PreRetrieval | None = None,
    count_tokens: Callable[[str], int] | None = None,
    planner: PlannerConfig | None = None,
    subgraph: SubgraphConfig | None = None,
) -> CountedAlong:
    """What agent ``kind`` would have spent on ``episode``'s trajectory: the actions that reached the
    environment are replayed in order on the same kitchen (so every observation is the same), and each
    prompt ``kind`` builds on the way is counted with ``count_tokens`` (default ``model.count_tokens``)."""
    plan = [(s.action, dict(s.arguments)) for s in _executed(episode)]
    counter = count_tokens or model.count_tokens
    config = _replay_config(planner, len(plan))
    agent = _replaying_agent(model, kind, plan, counter, embedder, config, subgraph)
    replay = agent.run(
        HouseholdEpisode.create(style, seed, episode.n_distractors), task, pre_retrieval=pre_retrieval
    )
    live_agent = parse_agent_kind(episode.agent)
    live_static = None
    if embedder is not None or not live_agent.retrieves:
        live = _replaying_agent(model, live_agent, [], counter, embedder, config, subgraph)
        live_static = static_prompt_tokens(live, counter)
    return _counted_along(
        model,
        episode,
        replay,
        agent.kind.value,
        (episode.planner_tokens, episode.steps, live_static),
        static_prompt_tokens(agent, counter),
    )


def _counted_along(
    model: ChatModel,
    episode: EpisodeResult,
    counted: EpisodeResult,
    counted_agent: str,
    live: tuple[int, int, int | None],
    counted_static: int,
) -> CountedAlong:
    """The :class:`CountedAlong` row of ``episode`` for ``counted``, the replay by ``counted_agent``; ``live``:
    the live side's planner tokens, steps and static prefix tokens."""
    window = getattr(model, "context_window", None)
    prompts = [s.input_tokens for s in counted.trajectory]
    return CountedAlong(
        task_id=episode.task_id,
        difficulty=episode.difficulty,
        n_distractors=episode.n_distractors,
        agent=episode.agent,
        counted_agent=counted_agent,
        steps=counted.steps,
        live_planner_tokens=live[0],
        counted_planner_tokens=counted.planner_tokens,
        max_prompt=max(prompts, default=0),
        over_context=sum(window is not None and p > window for p in prompts),
        live_steps=live[1],
        live_static_tokens=live[2],
        counted_static_tokens=counted_static,
    )


def recount_episode(
    model: ChatModel,
    episode: EpisodeResult,
    task: Task,
    *,
    style: str,
    seed: int = 0,
    embedder: Embedder | None = None,
    count_tokens: Callable[[str], int] | None = None,
    planner: PlannerConfig | None = None,
    subgraph: SubgraphConfig | None = None,
    counted_agent: AgentKind | str = AgentKind.FULL_MEM,
) -> CountedAlong:
    """``episode``'s tokens recounted under the current code, offline: the calls that reached the
    environment are replayed in order on the same kitchen with their recorded thoughts and ``Objects``
    lines (so a self-querying agent retrieves what it retrieved live) by the live agent, whose prompts are
    counted as its planner tokens, and by ``counted_agent`` (Full-Mem), counted as in :func:`count_along`.
    Replies that never reached the environment (refused, invalid) are not replayed, so an episode with
    them counts fewer live steps than it took. ``episode.pre_retrieval`` is reused (no model call)."""
    executed = _executed(episode)
    plan = [(s.action, dict(s.arguments)) for s in executed]
    replies = [(s.thought, list(s.objects)) for s in executed]
    counter = count_tokens or model.count_tokens
    config = _replay_config(planner, len(plan))
    data = episode.pre_retrieval or {}
    pre = PreRetrieval(
        str(data.get("instruction", task.instruction)),
        [EntitySpec(e["name"], tuple(e.get("attributes", ()))) for e in data.get("entities", [])],
    )
    runs: dict[str, tuple[EpisodeResult, int]] = {}
    for kind in (parse_agent_kind(episode.agent), parse_agent_kind(counted_agent)):
        agent = _replaying_agent(model, kind, plan, counter, embedder, config, subgraph, replies)
        replay = agent.run(
            HouseholdEpisode.create(style, seed, episode.n_distractors), task, pre_retrieval=pre
        )
        runs[kind.value] = (replay, static_prompt_tokens(agent, counter))
    live, live_static = runs[parse_agent_kind(episode.agent).value]
    counted, counted_static = runs[parse_agent_kind(counted_agent).value]
    return _counted_along(
        model,
        episode,
        counted,
        parse_agent_kind(counted_agent).value,
        (live.planner_tokens, live.steps, live_static),
        counted_static,
    )


def static_prompt_tokens(agent: EmbodiedPlanner, count_tokens: Callable[[str], int]) -> int:
    """The tokens of ``agent``'s static prefix: its system prompt as the chat template wraps it (the part of
    every planner call that never changes)."""
    return count_tokens(agent.system_prompt()) + CHATML_OVERHEAD_TOKENS


def run_episode(
    model: ChatModel,
    kind: AgentKind | str,
    task: Task,
    *,
    style: str = "l_shape",
    seed: int = 0,
    n_distractors: int = 0,
    embedder: Embedder | None = None,
    planner: PlannerConfig | None = None,
    subgraph: SubgraphConfig | None = None,
    pre_retrieval: PreRetrieval | None = None,
    retrieval_model: ChatModel | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
) -> EpisodeResult:
    """One episode of ``task`` on a fresh kitchen ``(style, seed, n_distractors)``."""
    agent = EmbodiedPlanner(
        model,
        kind,
        HOUSEHOLD,
        embedder=embedder,
        config=planner,
        subgraph_config=subgraph,
        retrieval_model=retrieval_model,
    )
    return agent.run(
        HouseholdEpisode.create(style, seed, n_distractors),
        task,
        pre_retrieval=pre_retrieval,
        on_step=on_step,
    )


def run_benchmark(
    config: BenchmarkConfig,
    model: ChatModel,
    embedder: Embedder | None = None,
    *,
    retrieval_model: ChatModel | None = None,
    progress: ProgressFn | None = None,
    on_episode: Callable[[EpisodeResult], None] | None = None,
) -> BenchmarkReport:
    """Play every (task, distractor setting, agent) episode of ``config`` with ``model`` (pre-retrieval and
    self-query with ``retrieval_model``, default ``model``); ``on_episode`` sees each finished episode."""
    kinds = config.agent_kinds()
    if any(k.retrieves for k in kinds) and embedder is None:
        raise EmbodiedConfigError(
            "retrieving agents need an embedder", hint='pass make_embedder("minilm", threads=1)'
        )
    tasks = select_tasks(config.tasks)
    pre_retriever = PreRetriever(retrieval_model or model, HOUSEHOLD.attribute_names)
    cache: dict[str, PreRetrieval] = {}
    episodes: list[EpisodeResult] = []
    along = {parse_agent_kind(a) for a in config.count_along}
    counted: list[CountedAlong] = []
    for task in tasks:
        style = config.layout_for(task)
        for n_distractors in config.distractors:
            for kind in kinds:
                pre = None
                if kind.retrieves:
                    if task.instruction not in cache:
                        cache[task.instruction] = pre_retriever.run(task.instruction)
                        if progress is not None:
                            names = ", ".join(e.name for e in cache[task.instruction].entities)
                            progress(f"pre-retrieval {task.task_id}: {names}")
                    pre = cache[task.instruction]
                episode = run_episode(
                    model,
                    kind,
                    task,
                    style=style,
                    seed=config.seed,
                    n_distractors=n_distractors,
                    embedder=embedder,
                    planner=config.planner,
                    subgraph=config.subgraph,
                    pre_retrieval=pre,
                    retrieval_model=retrieval_model,
                    on_step=None if progress is None else _step_reporter(progress, task, kind),
                )
                episodes.append(episode)
                if kind in along:
                    counted.append(
                        count_along(
                            model,
                            config.count_agent,
                            episode,
                            task,
                            style=style,
                            seed=config.seed,
                            embedder=embedder,
                            pre_retrieval=pre,
                            planner=config.planner,
                            subgraph=config.subgraph,
                        )
                    )
                    episode.counted_along = counted[-1].to_dict()
                if on_episode is not None:
                    on_episode(episode)
                if progress is not None:
                    progress(episode_line(episode))
    return BenchmarkReport(episodes, {k: v.to_dict() for k, v in cache.items()}, counted)


def _step_reporter(progress: ProgressFn, task: Task, kind: AgentKind) -> Callable[[StepRecord], None]:
    def report(record: StepRecord) -> None:
        call = (
            f"{record.action}({', '.join(record.arguments.values())})" if record.action else "(invalid reply)"
        )
        split = ""
        if record.prompt_eval_s is not None and record.generation_s is not None:
            split = (
                f" (eval {record.evaluated_tokens} tok {record.prompt_eval_s:.1f} s, "
                f"gen {record.generated_tokens} tok {record.generation_s:.1f} s)"
            )
        status = "ok" if record.ok else f"failed: {record.cause}"
        progress(
            f"  {task.task_id} {kind.value} step {record.step + 1}: {call} {status}; "
            f"{record.input_tokens} prompt tokens, planner {record.planner_s:.1f} s{split}, "
            f"step {record.step_s:.1f} s"
        )

    return report


def episode_line(e: EpisodeResult) -> str:
    """One line per episode for progress output."""
    recall = "" if e.recall_first is None else f" recall {e.recall_first:.2f}->{e.recall_after_feedback:.2f}"
    per_step = f"{e.mean_planner_s:.1f}" if e.mean_planner_s is not None else "-"
    error = f" error: {e.error[:80]}" if e.error else ""
    if e.overflow_prompt_tokens is not None:
        error += f" (prompt of {e.overflow_prompt_tokens} tokens counted, not sent)"
    return (
        f"{e.task_id} d={e.n_distractors} {e.agent:21s} {'OK  ' if e.success else 'FAIL'} steps {e.steps:2d} "
        f"planner tokens {e.planner_tokens:7d} (+{e.retrieval_usage.total_tokens} retrieval) "
        f"{per_step} s/step full-graph {e.full_graph_requests}{recall}{error}"
    )


# -- summaries ----------------------------------------------------------------------------------------------
def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


@dataclass
class AgentSummary:
    """Aggregates of one agent at one distractor setting.

    Per step: planner tokens (prompt + reply, provider usage), the planner call's seconds split into prompt
    evaluation and generation (local models), the prompt tokens it actually evaluated (the rest came from
    the model's cache), and the whole step (retrieval, self-query, planner, environment, index update).
    ``end_causes``: episodes per outcome (``success``, ``step_limit``, ``context_overflow``,
    ``model_error``); ``step_failures``: failed steps per cause (the environment's error codes,
    ``invalid_reply``, ``refused_repeat``, ``not_complete``, ...)."""

    agent: str
    n_distractors: int
    episodes: int
    success_easy: float | None
    success_hard: float | None
    success_all: float
    mean_steps: float
    mean_planner_s_per_step: float | None
    median_planner_s: float | None
    mean_prompt_eval_s: float | None
    mean_generation_s: float | None
    mean_evaluated_tokens: float | None
    mean_generated_tokens: float | None
    mean_step_s: float | None
    median_step_s: float | None
    planner_tokens_per_step: float | None
    mean_planner_tokens: float
    median_planner_tokens: float
    mean_total_tokens: float
    mean_full_graph_requests: float
    recall_first: float | None
    recall_after_feedback: float | None
    errors: int
    context_overflows: int
    mean_overflow_prompt_tokens: float | None
    end_causes: dict[str, int] = field(default_factory=dict)
    step_failures: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _counts(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def summarize(episodes: Sequence[EpisodeResult]) -> list[AgentSummary]:
    """Per (agent, distractor setting) aggregates, in first-seen order."""
    groups: dict[tuple[str, int], list[EpisodeResult]] = {}
    for e in episodes:
        groups.setdefault((e.agent, e.n_distractors), []).append(e)
    rows: list[AgentSummary] = []
    for (agent, n_distractors), group in groups.items():
        easy = [e.success for e in group if e.difficulty == "easy"]
        hard = [e.success for e in group if e.difficulty == "hard"]
        steps = [s for e in group for s in e.trajectory]
        rows.append(
            AgentSummary(
                agent=agent,
                n_distractors=n_distractors,
                episodes=len(group),
                success_easy=sum(easy) / len(easy) if easy else None,
                success_hard=sum(hard) / len(hard) if hard else None,
                success_all=sum(e.success for e in group) / len(group),
                mean_steps=statistics.fmean(e.steps for e in group),
                mean_planner_s_per_step=_mean(s.planner_s for s in steps),
                median_planner_s=_median(s.planner_s for s in steps),
                mean_prompt_eval_s=_mean(s.prompt_eval_s for s in steps),
                mean_generation_s=_mean(s.generation_s for s in steps),
                mean_evaluated_tokens=_mean(
                    None if s.evaluated_tokens is None else float(s.evaluated_tokens) for s in steps
                ),
                mean_generated_tokens=_mean(
                    None if s.generated_tokens is None else float(s.generated_tokens) for s in steps
                ),
                mean_step_s=_mean(s.step_s for s in steps),
                median_step_s=_median(s.step_s for s in steps),
                planner_tokens_per_step=_mean(float(s.input_tokens + s.output_tokens) for s in steps),
                mean_planner_tokens=statistics.fmean(e.planner_tokens for e in group),
                median_planner_tokens=statistics.median(e.planner_tokens for e in group),
                mean_total_tokens=statistics.fmean(e.total_tokens for e in group),
                mean_full_graph_requests=statistics.fmean(e.full_graph_requests for e in group),
                recall_first=_mean(e.recall_first for e in group),
                recall_after_feedback=_mean(e.recall_after_feedback for e in group),
                errors=sum(e.error is not None for e in group),
                context_overflows=sum(e.overflow_prompt_tokens is not None for e in group),
                mean_overflow_prompt_tokens=_mean(
                    None if e.overflow_prompt_tokens is None else float(e.overflow_prompt_tokens)
                    for e in group
                ),
                end_causes=_counts(e.end_cause for e in group),
                step_failures=_counts(s.cause for s in steps if s.cause is not None),
            )
        )
    return rows


def episode_token_ratios(
    episodes: Sequence[EpisodeResult], numerator: str = "full-mem", denominator: str = "embodiedrag-strict"
) -> dict[int, list[float]]:
    """Per distractor setting, ``numerator / denominator`` cumulative planner tokens (provider usage) of each
    (task, layout) played by both agents."""
    by_key = {(e.task_id, e.layout, e.n_distractors, e.agent): e for e in episodes}
    out: dict[int, list[float]] = {}
    for (task_id, layout, n, agent), episode in by_key.items():
        other = by_key.get((task_id, layout, n, denominator))
        if agent == numerator and other is not None and other.planner_tokens > 0:
            out.setdefault(n, []).append(episode.planner_tokens / other.planner_tokens)
    return dict(sorted(out.items()))


def format_ratios(ratios: dict[int, list[float]], what: str) -> list[str]:
    """One line per distractor setting: median (min, max) of ``ratios``."""
    return [
        f"distractors {n:4d}: {what}: median {statistics.median(v):.1f}x "
        f"(min {min(v):.1f}x, max {max(v):.1f}x, {len(v)} tasks)"
        for n, v in ratios.items()
    ]


def _fmt(value: float | None, spec: str) -> str:
    """``value`` formatted by ``spec``; ``-`` (right-aligned to the spec's width) when it is None."""
    if value is not None:
        return format(value, spec)
    width = spec.split(".")[0]
    return format("-", f">{width}") if width.isdigit() else "-"


def format_summary(rows: Sequence[AgentSummary]) -> str:
    """A fixed-width table of ``summarize`` rows, then per row the episode outcomes and failed steps by
    cause. Columns: success (easy / hard / all), mean steps, planner tokens per step and per episode, the
    planner call's median seconds and its mean split into prompt evaluation and generation (with the prompt
    tokens evaluated and tokens generated), the median whole step, full-graph requests, recall, overflows
    (episodes ended because a prompt exceeded the model's context, with the mean size of that prompt)."""
    header = (
        f"{'agent':21s} {'distr':>5s} {'n':>3s} {'easy':>5s} {'hard':>5s} {'all':>5s} {'steps':>5s} "
        f"{'tok/step':>8s} {'tok/ep':>7s} {'s/call':>6s} {'eval s':>6s} {'gen s':>6s} {'eval tok':>8s} "
        f"{'gen tok':>7s} {'s/step':>6s} {'full-graph':>10s} {'recall@1':>8s} {'recall fb':>9s} "
        f"{'overflows (prompt tok)':>22s}"
    )
    lines = [header]
    for r in rows:
        lines.append(
            f"{r.agent:21s} {r.n_distractors:5d} {r.episodes:3d} {_fmt(r.success_easy, '5.2f')} "
            f"{_fmt(r.success_hard, '5.2f')} {r.success_all:5.2f} {r.mean_steps:5.1f} "
            f"{_fmt(r.planner_tokens_per_step, '8.0f')} {r.mean_planner_tokens:7.0f} "
            f"{_fmt(r.median_planner_s, '6.1f')} {_fmt(r.mean_prompt_eval_s, '6.1f')} "
            f"{_fmt(r.mean_generation_s, '6.1f')} {_fmt(r.mean_evaluated_tokens, '8.0f')} "
            f"{_fmt(r.mean_generated_tokens, '7.0f')} {_fmt(r.median_step_s, '6.1f')} "
            f"{r.mean_full_graph_requests:10.2f} {_fmt(r.recall_first, '8.2f')} "
            f"{_fmt(r.recall_after_feedback, '9.2f')} "
            f"{r.context_overflows:9d} ({_fmt(r.mean_overflow_prompt_tokens, '.0f'):>9s})"
        )
    for r in rows:
        ends = ", ".join(f"{k} {v}" for k, v in r.end_causes.items())
        fails = ", ".join(f"{k} {v}" for k, v in r.step_failures.items()) or "none"
        lines.append(f"{r.agent} d={r.n_distractors}: episodes: {ends}; failed steps: {fails}")
    return "\n".join(lines)


# -- token measurement on a replayed trajectory ---------------------------------------------------------------
def required_types_pre_retrieval(task: Task) -> PreRetrieval:
    """An oracle pre-retrieval (for ablations, no model call): one entity per required object type, named by
    its readable label, with the attributes the task's requirements test on objects of that type."""
    from scenerag.retrieval.documents import label_text

    entities: list[EntitySpec] = []
    for object_type in task.required_types:
        attributes: dict[str, None] = {}
        for requirement in task.requirements:
            if object_type in requirement.types:
                attributes.update(dict.fromkeys([*requirement.state, *requirement.where]))
            if object_type in requirement.inside:
                attributes.update(dict.fromkeys(requirement.receptacle_state))
        entities.append(EntitySpec(label_text(object_type), tuple(attributes)))
    return PreRetrieval(task.instruction, entities, raw="(required types of the task)")


def measure_replayed_tokens(
    model: ChatModel,
    task: Task,
    kinds: Sequence[AgentKind | str],
    *,
    embedder: Embedder | None,
    pre_retrieval: PreRetrieval | None = None,
    style: str = "l_shape",
    seed: int = 0,
    n_distractors: int = 0,
    count_tokens: Callable[[str], int] | None = None,
    planner: PlannerConfig | None = None,
    subgraph: SubgraphConfig | None = None,
) -> dict[str, EpisodeResult]:
    """Per agent, an episode that follows the oracle solver's plan on ``(style, seed, n_distractors)`` and
    whose usage is ``count_tokens`` (default ``model.count_tokens``) of the exact prompts the agent builds at
    each step and of the JSON replies standing for the oracle actions. ``embodiedrag-feedback`` is refused:
    its self-queries need the planner's own thoughts."""
    plan = solve(HouseholdEnv(style, seed, n_distractors), task)
    counter = count_tokens or model.count_tokens
    config = planner or PlannerConfig(max_steps=len(plan) + 1)
    out: dict[str, EpisodeResult] = {}
    for kind in (parse_agent_kind(k) for k in kinds):
        if kind.self_queries:
            raise EmbodiedConfigError(
                f"{kind.value} cannot be replayed: its self-queries need the planner's own thoughts"
            )
        steps = [(p.name, dict(p.arguments)) for p in plan]
        agent = _replaying_agent(model, kind, steps, counter, embedder, config, subgraph)
        pre = pre_retrieval if kind.retrieves else None
        if kind.retrieves and pre is None:
            pre = agent.pre_retriever.run(task.instruction)
        out[kind.value] = agent.run(
            HouseholdEpisode.create(style, seed, n_distractors), task, pre_retrieval=pre
        )
    return out


REPLAY_AGENTS: tuple[AgentKind, ...] = (AgentKind.FULL_MEM, AgentKind.EMBODIED_RAG, AgentKind.STRICT)


@dataclass
class ReplayRow:
    """One agent's replayed episode of one task at one distractor setting (tokens under the model's
    tokenizer; ``over_context``: prompts longer than the model's context window)."""

    task_id: str
    difficulty: str
    layout: str
    n_distractors: int
    agent: str
    steps: int
    success: bool
    input_tokens: int
    output_tokens: int
    max_prompt: int
    over_context: int
    recall_first: float | None
    recall_after_feedback: float | None
    pre_retrieval_tokens: int
    #: recall at the first step among the required types already discovered then (None: none discovered)
    recall_first_discovered: float | None = None

    @property
    def planner_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "planner_tokens": self.planner_tokens}


@dataclass
class ReplayReport:
    """Rows of ``replay_benchmark`` with the counting model's name, context window and how the
    pre-retrieval was obtained (``llm`` or ``required-types``)."""

    rows: list[ReplayRow]
    model: str
    context_window: int | None
    pre_retrieval: str
    pre_retrievals: dict[str, dict[str, Any]] = field(default_factory=dict)

    def ratios(
        self, numerator: str = "full-mem", denominator: str = "embodiedrag-strict"
    ) -> dict[int, list[float]]:
        """Per distractor setting, ``numerator / denominator`` cumulative planner tokens of each task where
        both agents were replayed."""
        by_key = {(r.task_id, r.n_distractors, r.agent): r for r in self.rows}
        out: dict[int, list[float]] = {}
        for (task_id, n, agent), row in by_key.items():
            if agent != numerator:
                continue
            other = by_key.get((task_id, n, denominator))
            if other is not None and other.planner_tokens > 0:
                out.setdefault(n, []).append(row.planner_tokens / other.planner_tokens)
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        ratios = self.ratios()
        return {
            "model": self.model,
            "context_window": self.context_window,
            "pre_retrieval": self.pre_retrieval,
            "pre_retrievals": self.pre_retrievals,
            "rows": [r.to_dict() for r in self.rows],
            "full_mem_over_strict": {
                str(n): {
                    "median": statistics.median(v),
                    "min": min(v),
                    "max": max(v),
                    "tasks": len(v),
                    "pooled": _pooled_ratio(self.rows, n),
                }
                for n, v in ratios.items()
            },
        }


def _pooled_ratio(rows: Sequence[ReplayRow], n: int) -> float | None:
    """Sum of Full-Mem planner tokens over the sum of strict ones at distractor setting ``n``."""
    tasks = {r.task_id for r in rows if r.n_distractors == n and r.agent == AgentKind.STRICT.value} & {
        r.task_id for r in rows if r.n_distractors == n and r.agent == AgentKind.FULL_MEM.value
    }
    full = sum(
        r.planner_tokens
        for r in rows
        if r.n_distractors == n and r.agent == "full-mem" and r.task_id in tasks
    )
    strict = sum(
        r.planner_tokens
        for r in rows
        if r.n_distractors == n and r.agent == "embodiedrag-strict" and r.task_id in tasks
    )
    return full / strict if strict else None


def replay_benchmark(
    model: ChatModel,
    tasks: str | Sequence[str] | None,
    *,
    embedder: Embedder,
    agents: Sequence[AgentKind | str] = REPLAY_AGENTS,
    distractors: Sequence[int] = (DISTRACTOR_SETTINGS[-1],),
    pre_retrieval: str = "llm",
    retrieval_model: ChatModel | None = None,
    style: str | None = "l_shape",
    seed: int = 0,
    count_tokens: Callable[[str], int] | None = None,
    progress: ProgressFn | None = None,
) -> ReplayReport:
    """``measure_replayed_tokens`` over tasks × distractor settings: every agent follows the oracle plan and
    the exact prompts it builds are counted with ``count_tokens`` (default: ``model``'s tokenizer).
    ``pre_retrieval``: ``llm`` asks ``retrieval_model`` (default ``model``) once per task; ``required-types``
    uses :func:`required_types_pre_retrieval` (no model call). ``style=None`` cycles the layout styles."""
    if pre_retrieval not in ("llm", "required-types"):
        raise EmbodiedConfigError(
            f"unknown pre-retrieval {pre_retrieval!r}", hint="use llm or required-types"
        )
    kinds = [parse_agent_kind(a) for a in agents]
    pre_retriever = PreRetriever(retrieval_model or model, HOUSEHOLD.attribute_names)
    window = getattr(model, "context_window", None)
    report = ReplayReport([], model.name, window, pre_retrieval)
    for task in select_tasks(tasks):
        pre = (
            pre_retriever.run(task.instruction)
            if pre_retrieval == "llm"
            else required_types_pre_retrieval(task)
        )
        report.pre_retrievals[task.task_id] = pre.to_dict()
        if progress is not None:
            names = ", ".join(e.name for e in pre.entities)
            progress(f"{task.task_id} pre-retrieval ({pre_retrieval}, {pre.seconds:.0f} s): {names}")
        style_name = style if style is not None else cycled_style(task)
        for n in distractors:
            results = measure_replayed_tokens(
                model,
                task,
                kinds,
                embedder=embedder,
                pre_retrieval=pre,
                style=style_name,
                seed=seed,
                n_distractors=n,
                count_tokens=count_tokens,
            )
            for agent, episode in results.items():
                prompts = [s.input_tokens for s in episode.trajectory]
                row = ReplayRow(
                    task_id=task.task_id,
                    difficulty=task.difficulty,
                    layout=style_name,
                    n_distractors=n,
                    agent=agent,
                    steps=episode.steps,
                    success=episode.success,
                    input_tokens=episode.planner_usage.input_tokens,
                    output_tokens=episode.planner_usage.output_tokens,
                    max_prompt=max(prompts, default=0),
                    over_context=sum(window is not None and p > window for p in prompts),
                    recall_first=episode.recall_first,
                    recall_after_feedback=episode.recall_after_feedback,
                    pre_retrieval_tokens=episode.retrieval_usage.total_tokens,
                    recall_first_discovered=episode.recall_first_discovered,
                )
                report.rows.append(row)
                if progress is not None:
                    recall = (
                        ""
                        if row.recall_first is None
                        else f" recall {row.recall_first:.2f} -> {row.recall_after_feedback:.2f}"
                    )
                    progress(
                        f"  d={n:4d} {agent:19s} steps {row.steps:2d} planner tokens {row.planner_tokens:8d} "
                        f"max prompt {row.max_prompt:6d} over context: {row.over_context:2d}{recall}"
                    )
    return report


def format_replay(report: ReplayReport) -> str:
    """Per agent and distractor setting: median cumulative planner tokens, median largest prompt, prompts
    over the context window, recall; then the Full-Mem / strict ratios (median, range, pooled)."""
    groups: dict[tuple[str, int], list[ReplayRow]] = {}
    for row in report.rows:
        groups.setdefault((row.agent, row.n_distractors), []).append(row)
    lines = [
        f"{'agent':19s} {'distr':>5s} {'tasks':>5s} {'median planner tok':>18s} {'median max prompt':>17s} "
        f"{'prompts > ctx':>13s} {'recall@1':>8s} {'recall end':>10s}"
    ]
    for (agent, n), rows in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lines.append(
            f"{agent:19s} {n:5d} {len(rows):5d} {statistics.median(r.planner_tokens for r in rows):18.0f} "
            f"{statistics.median(r.max_prompt for r in rows):17.0f} {sum(r.over_context for r in rows):13d} "
            f"{_fmt(_mean(r.recall_first for r in rows), '8.2f')} "
            f"{_fmt(_mean(r.recall_after_feedback for r in rows), '10.2f')}"
        )
    for n, values in report.ratios().items():
        pooled = _pooled_ratio(report.rows, n)
        lines.append(
            f"distractors {n:4d}: full-mem / embodiedrag-strict cumulative planner tokens: median "
            f"{statistics.median(values):.1f}x (min {min(values):.1f}x, max {max(values):.1f}x, pooled "
            f"{_fmt(pooled, '.1f')}x, {len(values)} tasks; counted with {report.model}'s tokenizer)"
        )
    return "\n".join(lines)


# -- entry points for scripts and the CLI -------------------------------------------------------------------
RETRIEVAL_N_CTX = 4096


def bench_models(spec: str | None = None, **options: Any) -> tuple[ChatModel, ChatModel]:
    """The planner model named by ``spec`` (see ``make_chat_model``) and the model for pre-retrieval and
    self-query: for a local GGUF a second instance of the same weights (own context, so each keeps its
    prompt cache warm), else the same object. A local planner keeps the longest cached prefix of its
    prompts (``cache_reuse="longest"``): each step's prompt extends the previous one."""
    import os

    from scenerag.llm.factory import make_chat_model

    text = spec if spec is not None else os.environ.get("SCENERAG_LLM") or "local"
    if text.strip().lower().startswith("local"):
        options.setdefault("cache_reuse", "longest")
    planner = make_chat_model(spec, **options)
    if planner.name.startswith("local:"):
        from scenerag.llm.local import LocalChatModel

        assert isinstance(planner, LocalChatModel)
        return planner, LocalChatModel(planner.model_path, n_ctx=RETRIEVAL_N_CTX, n_threads=planner.n_threads)
    return planner, planner


def run_embodied_bench(
    config: BenchmarkConfig,
    *,
    model_spec: str | None = None,
    embedder_spec: str = "minilm-numpy",
    progress: ProgressFn | None = None,
    on_episode: Callable[[EpisodeResult], None] | None = None,
) -> BenchmarkReport:
    """``scenerag bench embodied``: build the models and a one-thread embedder, then ``run_benchmark``."""
    from scenerag.retrieval.embeddings import make_embedder

    planner, retrieval = bench_models(model_spec)
    needs_embedder = any(k.retrieves for k in config.agent_kinds())
    options: dict[str, Any] = {} if embedder_spec.startswith("openai:") else {"threads": 1}
    embedder = make_embedder(embedder_spec, **options) if needs_embedder else None
    return run_benchmark(
        config, planner, embedder, retrieval_model=retrieval, progress=progress, on_episode=on_episode
    )


def run_replay_bench(
    tasks: str | Sequence[str] | None,
    *,
    model_spec: str | None = None,
    agents: Sequence[AgentKind | str] = REPLAY_AGENTS,
    distractors: Sequence[int] = (DISTRACTOR_SETTINGS[-1],),
    pre_retrieval: str = "llm",
    style: str | None = "l_shape",
    seed: int = 0,
    embedder_spec: str = "minilm-numpy",
    progress: ProgressFn | None = None,
) -> ReplayReport:
    """``scenerag bench embodied --mode replay``: the model named by ``model_spec`` (its tokenizer counts
    the prompts; it also pre-retrieves unless ``pre_retrieval="required-types"``), a one-thread embedder,
    then ``replay_benchmark``."""
    from scenerag.llm.factory import make_chat_model
    from scenerag.retrieval.embeddings import make_embedder

    if pre_retrieval == "llm":
        planner, retrieval = bench_models(model_spec)
    else:
        planner = retrieval = make_chat_model(model_spec)
    options: dict[str, Any] = {} if embedder_spec.startswith("openai:") else {"threads": 1}
    return replay_benchmark(
        planner,
        tasks,
        embedder=make_embedder(embedder_spec, **options),
        agents=agents,
        distractors=distractors,
        pre_retrieval=pre_retrieval,
        retrieval_model=retrieval,
        style=style,
        seed=seed,
        progress=progress,
    )
