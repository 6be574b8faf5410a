"""The pass-through check: a model that writes each item's reference query must get the item right through
the whole agent — plans, repairs, checks, grading, retries and formatting — so no stage may break a correct
query (a stronger model writes the reference query more often; rules that rewrite it would cost it answers).

:class:`ReferenceModel` answers a plan prompt with ``one step``, a query prompt with the reference Cypher, and
an instruction prompt with ``Goal: <reference goal>``. :func:`pass_through` runs a question set through a
:class:`~scenerag.agents.CypherAgent` with it and reports each item (also whether the reference's own rows,
formatted directly, give the solution: an item whose reference disagrees with its solution is reported, not
blamed on the agent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scenerag.eval.questions import Question
from scenerag.llm.base import ChatResponse, LLMError, Message, ToolSpec, Usage, estimate_tokens

__all__ = ["PassThroughItem", "ReferenceModel", "pass_through"]


class ReferenceModel:
    """A stand-in model that writes the reference: ``cypher`` to query prompts, ``goal`` to goal prompts,
    ``one step`` to plan prompts. Anything else (an answer written from rows) is an error: the agent should
    not need it for a reference query."""

    name = "reference"
    supports_tools = False
    context_window = 1 << 20

    def __init__(self, cypher: str = "", goal: str = "") -> None:
        from scenerag.agents.compare_form import NONE_COMPARE
        from scenerag.agents.cypher_agent import PDDL_SYSTEM_START, QA_SYSTEM_START
        from scenerag.agents.measure_form import NONE_FORM
        from scenerag.agents.words import load_words

        self.cypher = " ".join(cypher.split())
        self.goal = goal
        self.calls = 0
        self._qa, self._pddl = QA_SYSTEM_START, PDDL_SYSTEM_START
        words = load_words()
        self._plan = words.plan_intro[:60]
        self._form, self._no_form = words.measure_intro[:60], NONE_FORM
        self._compare, self._no_compare = words.compare_intro[:60], NONE_COMPARE

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int | None = 0,
        stop: Sequence[str] | None = None,
        grammar: str | None = None,
    ) -> ChatResponse:
        self.calls += 1
        system = messages[0].content if messages and messages[0].role == "system" else ""
        if self._plan and system.startswith(self._plan):
            text = "one step"
        elif self._form and system.startswith(self._form):
            text = self._no_form  # the reference query is the answer; the form is for a model that missed it
        elif self._compare and system.startswith(self._compare):
            text = self._no_compare  # likewise: the model's own comparison stands
        elif system.startswith(self._qa):
            text = self.cypher
        elif system.startswith(self._pddl):
            text = f"Goal: {self.goal}" if self.goal else self.cypher
        else:
            raise LLMError(
                "bad_request", f"reference model: no reference reply for a prompt starting {system[:60]!r}"
            )
        return ChatResponse(Message.assistant(text), Usage(0, estimate_tokens(text)), self.name, "stop", 0.0)


@dataclass
class PassThroughItem:
    uid: str
    solution: str
    answer: str | None
    correct: bool
    #: the reference query's own rows, formatted directly, give the solution
    reference_correct: bool
    error: str | None = None


def pass_through(agent: Any, questions: Sequence[Question]) -> list[PassThroughItem]:
    """Each item of ``questions`` with a reference (``cypher`` for QA, the solution goal for PDDL) run through
    ``agent`` (a :class:`~scenerag.agents.CypherAgent`; its model is replaced per item)."""
    from scenerag.agents.answer_format import format_rows

    out: list[PassThroughItem] = []
    for q in questions:
        if q.task == "qa" and not q.cypher:
            continue
        agent.model = ReferenceModel(q.cypher, q.solution if q.task == "pddl" else "")
        hint = q.answer_type()
        result = agent.run(q.question, task=q.task, answer_type=hint)
        reference_ok = True
        if q.task == "qa":
            rows = agent.store.query(q.cypher, max_rows=agent.config.max_rows)
            direct = format_rows(
                rows.columns, rows.rows, query=q.cypher, question=q.question, answer_type=hint
            )
            reference_ok = q.is_correct(direct)
        out.append(
            PassThroughItem(
                q.uid, q.solution, result.answer, q.is_correct(result.answer), reference_ok, result.error
            )
        )
    return out
