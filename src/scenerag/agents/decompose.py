"""Two-step questions, split into a first question whose answer (node symbols) the second one uses.

"Which room is the light closest to the bike in?" becomes "Which light is closest to the bike?" (O300)
and then "Which room is O300 in?". A small model writes one correct query for each simple question far
more often than one query for both (a 1.5B model puts the bike and the light in the same room, or measures
the distance from the room). Splitting costs one short LLM call, so it runs only on questions whose wording
says they are two steps (:func:`needs_split`): a later clause that refers back ("Find the bin nearest to
O300. Which room is *that bin* in?"), a node picked inside the question ("which room is *the light closest
to the bike* in"), or a room described by what it holds ("*the room that couch O112 is in*: how many ...").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["SPLIT_PROMPT", "Split", "needs_split", "parse_split", "split_by_form", "substitute"]

#: generic container words; a graph adds its own layer words and region classes (hallway, kitchen)
CONTAINER_WORDS = ("room", "hallway", "place", "mesh place", "floor", "level", "storey", "area", "region")

_ANAPHOR = re.compile(
    r"\b(?:that|this|those|these)\s+(?!is\b|are\b|was\b)\w+|\b(?:it|its|them|they|there)\b", re.I
)
_CLAUSE_END = re.compile(
    r"(?<=[.:;?!])\s+(?=[A-Z])|,\s+and\s+(?=(?:which|what|where|how|is|are|does|do)\b)", re.I
)
_ASKS = re.compile(r"^\s*(?:which|what|where|how|is|are|does|do|can|count|list|name|give)\b", re.I)
_PARENTHESIS = re.compile(r"\([^)]*\)")
_PICKED = r"(?:closest|nearest|farthest|furthest|highest|lowest|biggest|largest|smallest)"
#: a first clause that picks a node by more than its name: a superlative, a count, a relation, a relative clause
_SELECTS = re.compile(
    rf"\b(?:{_PICKED}|most|fewest|least|next\s+to|adjacent|connect\w*|transitions?|away\s+from)\b"
    r"|\bthe\s+\w+\s+(?:that|where|which|whose)\b",
    re.I,
)

SPLIT_PROMPT = """You split a question about a robot's map into two simpler questions when it first needs \
one thing found. Reply with two lines, 1: and 2:, where 2 says #1 for the answer of 1.

Q: Which room is the lamp closest to the door in?
1: Which lamp is closest to the door?
2: Which room is #1 in?

Q: The room that table O12 is in: how many plants does it have?
1: Which room is table O12 in?
2: How many plants does #1 have?

Q: Find the cup nearest to the sink. Which place is that cup on?
1: Which cup is nearest to the sink?
2: Which place is #1 on?

Q: Look at the rooms next to the kitchen. How many chairs are there in those rooms altogether?
1: Which rooms are next to the kitchen?
2: How many chairs are there in #1 altogether?

Q: Count the lamps in the rooms that connect to the kitchen.
1: Which rooms connect to the kitchen?
2: Count the lamps in #1.

Q: How many books are in the room with the most shelves?
1: Which room has the most shelves?
2: How many books are in #1?

Q: What's the lowest printer on the floor, and which room is it in? Just the room.
1: Which printer is the lowest on the floor?
2: Which room is #1 in?"""


@dataclass(frozen=True)
class Split:
    """A two-step question: ``first`` finds nodes, ``then`` asks about them (``#1`` stands for them)."""

    first: str
    then: str


def needs_split(question: str, containers: Iterable[str] = ()) -> bool:
    """Whether ``question``'s wording says it is two steps (cheap; no model call). ``containers``: the
    graph's words for nodes that hold others (its layer names, its room classes), added to the generic ones.
    """
    text = _PARENTHESIS.sub(" ", question).strip()
    container = _container_pattern(containers)
    clauses = [c for c in _CLAUSE_END.split(text) if c.strip()]
    if len(clauses) >= 2 and len(clauses[0].split()) >= 3 and _SELECTS.search(clauses[0]):
        # "Find the bin nearest to O300. Which room is that bin in?"
        for later in clauses[1:]:
            if _ASKS.search(later) and _ANAPHOR.search(later):
                return True
    asked = re.match(rf"^\s*(?:which|what)(?:'s|\s+is)?\s+(?:\w+\s+)?({container})\b", text, re.I)
    if asked and re.search(
        rf"\bthe\s+(?:\w+\s+){{1,2}}?{_PICKED}\s+(?:to|from)\b", text[asked.end() :], re.I
    ):
        return True  # "Which room is the light closest to the bike in?"
    # "The room that couch O112 is in: ...", "the room with the most bins" ("the rooms next to R4" is one
    # query a small model writes well)
    described = re.compile(
        rf"\bthe\s+({container})\s+(?:that|where|which|with\s+the\s+(?:most|fewest|least)|"
        rf"made\s+of\s+the\s+most)\b",
        re.I,
    )
    for m in described.finditer(text):
        if asked and m.start() < asked.end() + 5:
            continue  # "which rooms that ..." describes the answer itself
        if re.match(rf"^\s*(?:which|what)\s+{re.escape(m.group(1))}", text, re.I):
            continue
        return True
    return False


def split_by_form(question: str, containers: Iterable[str] = ()) -> Split | None:
    """The split of the one two-step form a small model splits worst, without a model call: "Which room is
    the light closest to the bike in?" -> "Which light is closest to the bike?", "Which room is #1 in?"."""
    container = _container_pattern(containers)
    m = re.match(
        rf"^\s*(?:which|what)\s+(?P<c>{container})\s+(?P<be>is|are)\s+the\s+(?P<head>(?:\w+\s+){{0,2}}?\w+?)\s+"
        rf"(?P<how>{_PICKED}\s+(?:to|from)\s+.+?)(?:\s+(?P<verb>\w+ing))?\s+(?P<prep>in|on|inside|under)\s*\?*\s*$",
        question,
        re.I,
    )
    if m is None:
        return None
    verb = f" {m.group('verb')}" if m.group("verb") else ""
    return Split(
        f"Which {m.group('head')} {m.group('be')} {m.group('how')}?",
        f"Which {m.group('c')} {m.group('be')} #1{verb} {m.group('prep')}?",
    )


_LINE = re.compile(r"^\s*([12])\s*[:.)]\s*(.+?)\s*$")
_HEAD = re.compile(r"^\s*(?:which|what)\s+(\w+)", re.I)


def parse_split(reply: str, question: str = "") -> Split | None:
    """The two questions of a split reply, or None when it is not a usable split: one line, no ``#1`` in
    the second question, ``#1`` already in the first, the first one the question itself, or both asking
    for the same kind of node ("Which room is the light closest to the bike?" then "Which room is #1 in?")."""
    lines: dict[str, str] = {}
    for raw in reply.strip().splitlines():
        m = _LINE.match(raw)
        if m and m.group(1) not in lines:
            lines[m.group(1)] = m.group(2)
    first, then = lines.get("1"), lines.get("2")
    if not first or not then or "#1" not in then or "#1" in first:
        return None
    if _plain(first) == _plain(question):
        return None
    h1, h2 = _HEAD.match(first), _HEAD.match(then)
    if h1 and h2 and h1.group(1).lower().rstrip("s") == h2.group(1).lower().rstrip("s"):
        return None
    return Split(first, then)


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9#]+", text.lower()))


def _container_pattern(containers: Iterable[str]) -> str:
    words = sorted({w.lower() for w in (*CONTAINER_WORDS, *containers) if w}, key=len, reverse=True)
    return "(?:" + "|".join(re.escape(w) for w in words) + ")e?s?"


def substitute(question: str, symbols: list[str]) -> str:
    """``question`` with ``#1`` replaced by ``symbols`` ("R3", "R3 and R5", "R2, R3 and R5")."""
    text = symbols[0] if len(symbols) == 1 else ", ".join(symbols[:-1]) + " and " + symbols[-1]
    return question.replace("#1", text)
