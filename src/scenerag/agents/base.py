"""The ``SceneAgent`` protocol shared by the Cypher agent and its baselines, and the answer checks they
share: an SLDP answer must parse; a PDDL goal must parse and ground in the scene graph.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from scenerag.agents.result import AgentResult, Task
from scenerag.lang.sldp import SldpParseError, extract_sldp, parse_sldp
from scenerag.llm.base import Message, Usage

ProblemsFn = Callable[[str], list[str]]
"""Returns what is wrong with a candidate final answer (empty when it is acceptable)."""


@runtime_checkable
class SceneAgent(Protocol):
    """Answers a question (``task="qa"``) or grounds an instruction (``task="pddl"``) over one scene graph."""

    name: str

    def run(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        """``answer_type`` (set, list, dict, point, number, string) is an optional hint for the SLDP form."""
        ...


def extract_goal(text: str) -> str:
    """The first balanced ``( ... )`` expression of ``text`` (the PDDL goal inside an LLM reply)."""
    text = text.strip().strip("`")
    start = text.find("(")
    if start < 0:
        return text.strip()
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:].strip()


def normalize_answer(raw: str, task: Task) -> str:
    """The answer inside an LLM reply: SLDP text for ``qa``, the goal s-expression for ``pddl``."""
    if task == "pddl":
        return extract_goal(raw)
    try:
        text = extract_sldp(raw)
    except SldpParseError:
        text = raw.strip()
    if not sldp_problems(text) and (_STRUCTURE_START.match(text) or not _STRUCTURE_START.search(text)):
        return text
    # Prose around a structured value ("The rooms are <R1, R2>."): take the first value that parses.
    for match in _STRUCTURE_START.finditer(raw):
        try:
            candidate = extract_sldp(raw[match.start() :])
        except SldpParseError:
            continue
        if not sldp_problems(candidate):
            return candidate
    return text


def sldp_problems(answer: str) -> list[str]:
    """Why ``answer`` is not valid SLDP (empty when it parses)."""
    try:
        parse_sldp(answer)
    except SldpParseError as exc:
        return [f"the answer is not valid SLDP: {exc}"]
    return []


class RunState:
    """Bookkeeping of one run: messages, usage, tool records, the transcript."""

    def __init__(self, result: AgentResult) -> None:
        self.result = result
        self.messages: list[Message] = []
        #: what an agent learnt of the question for its own repairs (not reported)
        self.hints: dict[str, Any] = {}

    def add_usage(self, usage: Usage) -> None:
        self.result.usage = self.result.usage + usage
        self.result.llm_calls += 1

    def finish(self) -> AgentResult:
        self.result.transcript = [m.to_dict() for m in self.messages]
        self.result.tool_tokens = sum(t.result_tokens for t in self.result.tools)
        return self.result


_STRUCTURE_START = re.compile(r"[<\[{]|POINT\(", re.IGNORECASE)
