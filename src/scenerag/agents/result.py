"""What an agent run produces: the answer, every query it ran, token usage and time."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from scenerag.llm.base import Usage

Task = Literal["qa", "pddl"]


@dataclass
class ToolRecord:
    """One tool call of a run: the query/code, whether it ran, and how big its result was."""

    tool: str
    input: str
    ok: bool
    rows: int = 0
    truncated: bool = False
    error: str | None = None
    elapsed_ms: float = 0.0
    result_tokens: int = 0
    #: node symbols found in the result (for highlighting answers in a viewer)
    symbols: list[str] = field(default_factory=list)
    #: what actually ran when the input was auto-corrected (None when it ran as written)
    ran: str | None = None


@dataclass
class AgentResult:
    """The outcome of one question or instruction.

    ``answer`` is the final answer text (SLDP for ``qa``, a PDDL goal for ``pddl``) or None when the agent
    gave up; ``usage`` is provider-reported over every LLM call; ``tool_tokens`` counts the tokens of tool
    results fed back to the model (a part of ``usage.input_tokens``).
    """

    method: str
    question: str
    task: Task
    answer: str | None
    raw_answer: str = ""
    tools: list[ToolRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    tool_tokens: int = 0
    llm_calls: int = 0
    wall_s: float = 0.0
    error: str | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    #: what the agent worked from: linked entities, retrieved examples, query rewrites, "not_found"
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def tool_calls(self) -> int:
        return len(self.tools)

    @property
    def valid_tool_rate(self) -> float | None:
        """Fraction of tool calls that ran without error (None when there were none)."""
        return sum(t.ok for t in self.tools) / len(self.tools) if self.tools else None

    @property
    def symbols(self) -> list[str]:
        """Node symbols the run touched, in first-seen order (answer first, then tool results)."""
        import re

        seen: dict[str, None] = {}
        for s in re.findall(r"\b[A-Za-z]\d+\b", self.answer or ""):
            seen.setdefault(s, None)
        for t in self.tools:
            for s in t.symbols:
                seen.setdefault(s, None)
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["usage"] = {"input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens}
        out["tool_calls"] = self.tool_calls
        out["valid_tool_rate"] = self.valid_tool_rate
        return out
