"""Execution-guided choice among candidate queries: each candidate is run and graded, and the answers of the
best grade vote.

A grade says how far a candidate's execution can be trusted, from evidence that needs no reading of the
question's wording:

* ``FAILED`` (0): no query, a query the static check rejects, or one the database refuses;
* ``DOUBTFUL`` (1): it runs, but ignores something the question names, filters on something it never
  names, answers with nodes of another layer than the one asked for or with the one node named, or gives
  rows of the wrong kind for the answer type (numbers where nodes are asked for);
* ``EMPTY`` (2): it uses what the question names and nothing else, and matches nothing (no rows, or a
  count of 0, although every value it names exists) — a wrong pattern, or a true "none": it outranks a
  doubtful answer (asked "any boxes in R2?", a query for the boxes of every hallway is no better for
  returning one);
* ``OK`` (3).

:func:`vote` keeps the candidates of the best grade and returns the answer most of them give (ties: the
earliest, i.e. the greedy reply). Answers are compared in normal form (SLDP, sets order-free).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from scenerag.store.base import QueryResult

__all__ = ["Grade", "Outcome", "normal_answer", "vote"]


class Grade(IntEnum):
    FAILED = 0
    DOUBTFUL = 1
    EMPTY = 2
    OK = 3


@dataclass
class Outcome:
    """One candidate: the reply, the query that ran, its rows, the formatted answer and its grade.

    ``problem`` is what goes back to the model when this candidate is the one corrected (None for ``OK``).
    """

    reply: str
    cypher: str = ""
    ran: str | None = None
    result: QueryResult | None = None
    answer: str | None = None
    grade: Grade = Grade.FAILED
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    #: the way it fails says the query's shape is wrong (an error, nothing matched, another layer or the
    #: named node answered), not a filter too many or too few: a plan in steps may help
    structural: bool = True

    @property
    def ok(self) -> bool:
        return self.grade == Grade.OK


def normal_answer(answer: str | None) -> str | None:
    """``answer`` in a normal form (sets sorted, case folded), so equal answers count as one vote."""
    if answer is None:
        return None
    from scenerag.lang.sldp import SldpParseError, parse_sldp

    try:
        return _canon(parse_sldp(answer))
    except SldpParseError:
        return " ".join(answer.split()).casefold()


def _canon(value: object) -> str:
    from scenerag.lang.sldp import SldpDict, SldpList, SldpNumber, SldpPoint, SldpSet, SldpString

    if isinstance(value, SldpSet):
        return "<" + ",".join(sorted(_canon(v) for v in value.items)) + ">"
    if isinstance(value, SldpList):
        return "[" + ",".join(_canon(v) for v in value.items) + "]"
    if isinstance(value, SldpDict):
        return "{" + ",".join(sorted(f"{_canon(k)}:{_canon(v)}" for k, v in value.items)) + "}"
    if isinstance(value, SldpNumber):
        return f"{float(value.value):.2f}"
    if isinstance(value, SldpPoint):
        return "POINT(" + " ".join(f"{float(c):.2f}" for c in value.coords) + ")"
    if isinstance(value, SldpString):
        return value.value.casefold()
    return str(value).casefold()


def vote(outcomes: Sequence[Outcome]) -> Outcome | None:
    """The candidate whose answer most candidates of the best grade share (the earliest of that answer);
    None when there are none."""
    if not outcomes:
        return None
    best = max(o.grade for o in outcomes)
    top = [o for o in outcomes if o.grade == best]
    counts = Counter(normal_answer(o.answer) for o in top)
    winner = max(counts.values())
    for o in top:  # earliest of the most shared answer
        if counts[normal_answer(o.answer)] == winner:
            return o
    return top[0]
