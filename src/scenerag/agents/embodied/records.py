"""What an EmbodiedRAG episode records: one :class:`StepRecord` per planning step and the
:class:`EpisodeResult` with success, token usage (planner vs retrieval calls), time per planning step,
full-graph requests and retrieval recall of the task's required object types.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from scenerag.llm.base import Usage


@dataclass
class StepRecord:
    """One planning step: context size, the decision, the outcome, token usage and where the time went."""

    step: int
    thought: str
    action: str
    arguments: dict[str, str]
    ok: bool
    observation: str
    context_nodes: int
    context_chars: int
    input_tokens: int
    output_tokens: int
    planner_s: float
    retrieval_s: float
    self_query_s: float
    step_s: float
    full_graph_request: bool = False
    #: the action changed the robot's scene graph (discoveries, states, containment; not just its pose)
    graph_changed: bool = False
    index_update: dict[str, Any] | None = None
    self_queries: list[dict[str, Any]] = field(default_factory=list)
    subgraph_symbols: list[str] = field(default_factory=list)
    #: local models: the planner call's prompt evaluation and generation time, and the prompt tokens it
    #: actually evaluated (the rest came from the model's cache) and the tokens it generated
    prompt_eval_s: float | None = None
    generation_s: float | None = None
    evaluated_tokens: int | None = None
    generated_tokens: int | None = None
    #: the objects the reply said its thought is about (embodiedrag-feedback's self-query)
    objects: list[str] = field(default_factory=list)
    #: the call repeated a failure with nothing changed since and was not sent to the environment
    refused: bool = False
    #: the discovered objects the environment's answer named (they join the next step's subgraph)
    mentions: list[str] = field(default_factory=list)
    #: how many objects the action newly discovered (the history shows the count, not the list)
    discovered: int = 0
    #: why the step failed: the environment's error code (``out_of_reach``, ...), ``invalid_reply``,
    #: ``refused_repeat``, ``not_complete`` (done too early), ``full_graph_refused``; None when it worked
    cause: str | None = None


@dataclass
class EpisodeResult:
    """The outcome of one episode, with token usage (planner calls vs pre-retrieval/self-query calls), time
    per planning step, full-graph requests and, for retrieving agents, retrieval recall of required types."""

    task_id: str
    difficulty: str
    instruction: str
    agent: str
    model: str
    layout: str
    n_distractors: int
    success: bool = False
    done_declared: bool = False
    steps: int = 0
    error: str | None = None
    planner_usage: Usage = field(default_factory=Usage)
    retrieval_usage: Usage = field(default_factory=Usage)
    full_graph_requests: int = 0
    refused_full_graph_requests: int = 0
    failed_actions: int = 0
    invalid_replies: int = 0
    refused_repeats: int = 0
    wall_s: float = 0.0
    #: when the prompt did not fit the model's context: its size under the model's tokenizer (not sent)
    overflow_prompt_tokens: int | None = None
    pre_retrieval: dict[str, Any] | None = None
    required_types: list[str] = field(default_factory=list)
    #: the vocabulary words a search could take (``PlannerConfig.task_words``; None: all of them)
    task_words: list[str] | None = None
    required_retrieved_first: list[str] | None = None
    required_discovered_first: list[str] | None = None
    required_retrieved_ever: list[str] | None = None
    required_discovered_end: list[str] | None = None
    trajectory: list[StepRecord] = field(default_factory=list)
    #: another agent's prompts counted along this trajectory (``runner.count_along``), when measured
    counted_along: dict[str, Any] | None = None

    @property
    def planner_tokens(self) -> int:
        return self.planner_usage.total_tokens

    @property
    def total_tokens(self) -> int:
        return self.planner_usage.total_tokens + self.retrieval_usage.total_tokens

    @property
    def end_cause(self) -> str:
        """``success``, ``context_overflow``, ``model_error`` or ``step_limit`` (ran out of steps)."""
        if self.success:
            return "success"
        if self.overflow_prompt_tokens is not None:
            return "context_overflow"
        if self.error is not None:
            return "model_error"
        return "step_limit"

    @property
    def failure_causes(self) -> dict[str, int]:
        """Failed steps per cause (see ``StepRecord.cause``)."""
        out: dict[str, int] = {}
        for step in self.trajectory:
            if step.cause is not None:
                out[step.cause] = out.get(step.cause, 0) + 1
        return dict(sorted(out.items()))

    @property
    def mean_planner_s(self) -> float | None:
        times = [s.planner_s for s in self.trajectory]
        return sum(times) / len(times) if times else None

    @property
    def mean_step_s(self) -> float | None:
        times = [s.step_s for s in self.trajectory]
        return sum(times) / len(times) if times else None

    def _recall(self, found: list[str] | None, among: list[str] | None) -> float | None:
        if found is None or among is None or not among:
            return None
        return len(set(found) & set(among)) / len(set(among))

    @property
    def recall_first(self) -> float | None:
        """Fraction of the required types in the first step's subgraph."""
        return self._recall(self.required_retrieved_first, self.required_types)

    @property
    def recall_first_discovered(self) -> float | None:
        """The same, among the required types already discovered at the first step."""
        return self._recall(self.required_retrieved_first, self.required_discovered_first)

    @property
    def recall_after_feedback(self) -> float | None:
        """Fraction of the required types in some step's subgraph (environment + self-query feedback)."""
        return self._recall(self.required_retrieved_ever, self.required_types)

    @property
    def recall_after_feedback_discovered(self) -> float | None:
        return self._recall(self.required_retrieved_ever, self.required_discovered_end)

    def to_dict(self, *, trajectory: bool = True) -> dict[str, Any]:
        out = asdict(self)
        out["planner_usage"] = asdict(self.planner_usage)
        out["retrieval_usage"] = asdict(self.retrieval_usage)
        if not trajectory:
            out.pop("trajectory")
        for name in (
            "end_cause",
            "failure_causes",
            "planner_tokens",
            "total_tokens",
            "mean_planner_s",
            "mean_step_s",
            "recall_first",
            "recall_first_discovered",
            "recall_after_feedback",
            "recall_after_feedback_discovered",
        ):
            out[name] = getattr(self, name)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeResult:
        """Rebuild an episode from :meth:`to_dict` output (derived values are recomputed, not read)."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["planner_usage"] = Usage(**data.get("planner_usage", {}))
        values["retrieval_usage"] = Usage(**data.get("retrieval_usage", {}))
        step_names = {f.name for f in fields(StepRecord)}
        values["trajectory"] = [
            StepRecord(**{k: v for k, v in step.items() if k in step_names})
            for step in data.get("trajectory", [])
        ]
        return cls(**values)
