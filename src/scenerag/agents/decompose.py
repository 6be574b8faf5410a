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
    r"(?<=[.:;?!])\s+(?=[A-Z])|,\s+and\s+(?=(?:which|what|where|how|is|are|does|do)\b)"
    r"|,\s+(?:and\s+)?then\s+(?:tell\s+me\s+)?(?=(?:which|what|where|how)\b)",
    re.I,
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
#: a first clause that picks a node by where it is ("a light somewhere in hallway R4"); it counts only when
#: the later clause names that node again ("that light"), not the place ("that hallway", "there")
_SELECTS_IN = re.compile(r"\b(?:in|on|inside|under)\s+(?:the\s+)?(?:\w+\s+)?[A-Z]{1,2}\d+\b")
_NAMED_AGAIN = re.compile(r"\b(?:that|this|those|these)\s+(?!is\b|are\b|was\b)(\w+)", re.I)

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
    if len(clauses) >= 2 and _SELECTS_IN.search(clauses[0]):
        # "There's a light somewhere in hallway R4. Which seat is closest to that light?"
        for later in clauses[1:]:
            again = _NAMED_AGAIN.search(later)
            if _ASKS.search(later) and again and not re.fullmatch(container, again.group(1), re.I):
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
        rf"made\s+of\s+the\s+most)\b"
        rf"|\b(?:every|each|all\s+the)\s+({container})s?\s+(?:that|where|which|(?:\w+ly\s+)?"
        rf"(?:connected|adjacent|next)\s+to)\b",
        re.I,
    )
    for m in described.finditer(text):
        if asked and m.start() < asked.end() + 5:
            continue  # "which rooms that ..." describes the answer itself
        if re.match(rf"^\s*(?:which|what)\s+{re.escape(m.group(1) or m.group(2))}", text, re.I):
            continue
        return True
    # "Which room holds the cabinet that is the farthest ...", "Whatever object is the farthest from O95, what
    # room is it in?", "The appliance O10 stands in one of the hallways. How many ... that hallway?"
    return (
        _holds_picked(text, container) is not None
        or _picked_or_placed(text) is not None
        or re.search(_holding_thing(container), text, re.I) is not None
    )


def split_by_form(question: str, containers: Iterable[str] = ()) -> Split | None:
    """The split of the forms a small model splits worst, without a model call (None for any other form):

    * a node picked inside a container question: "Which room is the light closest to the bike in?" ->
      "Which light is closest to the bike?", "Which room is #1 in?";
    * a container described by its links, a named node in it or what it has most of: "Add up the objects in
      every room directly connected to hallway R3." -> "Which rooms are directly connected to hallway R3?",
      "Add up the objects in #1."; "The hallway where sign O39 hangs: how many seats are in it?" ->
      "Which hallway is sign O39 in?", "How many seats are in #1?";
    * a node introduced by where it is and named again: "There's a light in hallway R4. Which seat is
      closest to that light?" -> "Which light is in hallway R4?", "Which seat is closest to #1?".
    """
    container = _container_pattern(containers)
    text = _PARENTHESIS.sub(" ", question).strip()
    return (
        _picked_inside(text, container)
        or _holds_picked(text, container)
        or _described(text, container)
        or _found_in_named(text, container)
        or _picked_then_named(text)
        or _nearest_to_named(text)
        or _picked_or_placed(text)
    )


def _holds_picked(text: str, container: str) -> Split | None:
    """ "Which room holds the cabinet that is the farthest away from the bike?" -> "Which cabinet is the
    farthest away from the bike?", "Which room holds #1?"."""
    m = re.match(
        rf"^\s*(?:which|what)\s+(?P<c>{container})\s+(?:holds|has|contains|keeps)\s+the\s+(?P<head>.+?)\s+"
        rf"(?:that|which)\s+(?:is|lies|sits|stands|hangs)\s+(?P<how>(?:the\s+)?{_PICKED}\b[^?]+?)\s*\?*\s*$",
        text,
        re.I,
    )
    if m is None:
        return None
    return Split(f"Which {m.group('head')} is {m.group('how')}?", f"Which {m.group('c')} holds #1?")


def _picked_inside(text: str, container: str) -> Split | None:
    m = re.match(
        rf"^\s*(?:which|what)\s+(?P<c>{container})\s+(?P<be>is|are)\s+the\s+(?P<head>(?:\w+\s+){{0,2}}?\w+?)\s+"
        rf"(?P<how>{_PICKED}\s+(?:to|from)\s+.+?)(?:\s+(?P<verb>\w+ing))?\s+(?P<prep>in|on|inside|under)\s*\?*\s*$",
        text,
        re.I,
    )
    if m is None:
        return None
    verb = f" {m.group('verb')}" if m.group("verb") else ""
    return Split(
        f"Which {m.group('head')} {m.group('be')} {m.group('how')}?",
        f"Which {m.group('c')} {m.group('be')} #1{verb} {m.group('prep')}?",
    )


_UNTIL_CLAUSE_END = r"[^,.:;?!]+?(?=\s*(?:[,.:;?!]|\s+and\s+|$))"
_SYMBOL = r"\b[A-Z]{1,2}\d+\b"


def _described(text: str, container: str) -> Split | None:
    linked = _find(
        rf"\b(?:the|every|each|all\s+(?:of\s+)?the)\s+(?P<c>{container})\s+(?:that\s+|which\s+)?"
        rf"(?P<rel>(?:(?:are|is)\s+)?(?:\w+ly\s+)?(?:connect(?:s|ed)?|adjacent|next|lead(?:s|ing)?|open(?:s|ing)?)"
        rf"\s+(?:\w+ly\s+)?(?:to|into|onto|with|from)\s+{_UNTIL_CLAUSE_END})",
        text,
    )
    if linked:
        rel = re.sub(r"^(?:is|are)\s+", "", linked.group("rel"), flags=re.I)
        verb = "" if re.match(r"(?:connect|lead|open)s?\b", rel, re.I) else "are "
        return _split_at(text, linked, f"Which {_plural(linked.group('c'))} {verb}{rel}?")
    holding = _find(
        rf"\bthe\s+(?P<c>{container})\s+(?:that|which|where)\s+(?:the\s+)?(?P<s>(?:\w+\s+){{0,2}}?{_SYMBOL})"
        rf"(?:\s+(?:is|are|was|hangs|sits|stands|lies|is\s+\w+ed))?(?:\s+(?:in|on|at))?(?=\s*(?:[:,.;?!]|$))",
        text,
    )
    holding = holding or _find(_holding_thing(container), text)  # "the room where the bike is parked"
    if holding:
        held = holding.group("s")
        if re.match(r"(?:holds|contains|has|includes|carries)\b", held, re.I):  # "the place that holds O11"
            return _split_at(text, holding, f"Which {holding.group('c')} {held}?")
        return _split_at(text, holding, f"Which {holding.group('c')} is {held} in?")
    most = _find(
        rf"\bthe\s+(?P<c>{container})\s+(?P<how>with|made\s+of)\s+the\s+(?P<m>most|fewest|least)\s+"
        rf"(?P<y>{_UNTIL_CLAUSE_END})",
        text,
    )
    if most:
        verb = "has" if most.group("how").lower() == "with" else "is made of"
        return _split_at(
            text, most, f"Which {most.group('c')} {verb} the {most.group('m')} {most.group('y')}?"
        )
    return None


def _find(pattern: str, text: str) -> re.Match[str] | None:
    return re.search(pattern, text, re.I)


def _split_at(text: str, span: re.Match[str], first: str) -> Split | None:
    """The split whose first question finds what ``span`` describes: where the description is a clause of
    its own ("The hallway where sign O39 hangs: how many seats are in it?") the rest's pronoun stands for
    it, else the description itself is replaced by ``#1``."""
    head = text[span.end() :].lstrip()
    if text[: span.start()].strip() in ("", "The", "the") and head[:1] in (":", ",", "."):
        rest = head[1:].strip()
        then, n = _ANAPHOR_NODE.subn("#1", rest, count=1)
        if n == 0:
            return None
        return Split(first, then[:1].upper() + then[1:])
    return Split(first, text[: span.start()] + "#1" + text[span.end() :])


#: what stands for the first step's nodes in a later clause: "it", "there", "that hallway", "those rooms"
_ANAPHOR_NODE = re.compile(r"\b(?:(?:that|this|those|these)\s+(?!is\b|are\b)\w+|it|them|there)\b", re.I)


def _found_in_named(text: str, container: str) -> Split | None:
    clauses = [c for c in _CLAUSE_END.split(text) if c.strip()]
    if len(clauses) < 2:
        return None
    where = _SELECTS_IN.search(clauses[0])
    if where is None:
        return None
    for i, later in enumerate(clauses[1:], start=1):
        again = _NAMED_AGAIN.search(later)
        if again and _ASKS.search(later) and not re.fullmatch(container, again.group(1), re.I):
            noun = again.group(1)
            then = later[: again.start()] + "#1" + later[again.end() :]
            return Split(f"Which {noun} is {where.group(0)}?", " ".join([then, *clauses[i + 1 :]]).strip())
    return None


_PICK_FIRST = re.compile(
    rf"^\s*(?:take|find|pick|consider|get|look\s+at)\s+(?:the|whatever|a|an)\s+"
    rf"(?P<head>(?!is\b)\w+(?:\s+(?!is\b|that\b|which\b)\w+)?)\s+(?:(?:that|which)\s+)?(?:is\s+|'s\s+)?"
    rf"(?P<how>{_PICKED}\s+.+?)\s*$",
    re.I,
)


def _picked_then_named(text: str) -> Split | None:
    """ "Take the box closest to the bike. Which mesh place is that box sitting on?" -> "Which box is
    closest to the bike?", "Which mesh place is #1 sitting on?"."""
    clauses = [c for c in _CLAUSE_END.split(text) if c.strip()]
    if len(clauses) < 2:
        return None
    m = _PICK_FIRST.match(clauses[0].rstrip(".:;!"))
    if m is None:
        return None
    head = re.compile(rf"\b(?:that|this|those|these)\s+{re.escape(m.group('head'))}\b", re.I)
    for i, later in enumerate(clauses[1:], start=1):
        again = head.search(later) or _ANAPHOR_NODE.search(later)
        if again and _ASKS.search(later):
            then = later[: again.start()] + "#1" + later[again.end() :]
            return Split(
                f"Which {m.group('head')} is {m.group('how')}?", " ".join([then, *clauses[i + 1 :]]).strip()
            )
    return None


_SUPERLATIVE_HEAD = re.compile(
    r"\bthe\s+(?P<sup>nearest|closest|farthest|furthest)\s+(?P<head>\w+)(?!\s+(?:to|from)\b)", re.I
)
_NAMED_PHRASE = re.compile(rf"\b(?:the\s+)?(?:[a-z]+\s+)?{_SYMBOL}", re.I)


def _nearest_to_named(text: str) -> Split | None:
    """ "I'm at the shelf O17 and want to read the nearest sign. Which room is that sign in?" -> "Which sign
    is nearest to the shelf O17?", "Which room is #1 in?": the one named node of the first sentence is
    where "the nearest <noun>" is measured from."""
    clauses = [c for c in _CLAUSE_END.split(text) if c.strip()]
    if len(clauses) < 2:
        return None
    m = _SUPERLATIVE_HEAD.search(clauses[0])
    named = [n for n in _NAMED_PHRASE.finditer(clauses[0]) if re.search(_SYMBOL, n.group(0))]
    if m is None or len(named) != 1:
        return None
    ref = re.sub(r"^(?:the\s+)?", "the ", named[0].group(0), flags=re.I)
    head = re.compile(rf"\b(?:that|this|the)\s+{re.escape(m.group('head'))}\b", re.I)
    prep = "from" if m.group("sup").lower().startswith("f") else "to"
    for i, later in enumerate(clauses[1:], start=1):
        again = head.search(later)
        if again and _ASKS.search(later):
            then = later[: again.start()] + "#1" + later[again.end() :]
            return Split(
                f"Which {m.group('head')} is {m.group('sup').lower()} {prep} {ref}?",
                " ".join([then, *clauses[i + 1 :]]).strip(),
            )
    return None


_WHATEVER_PICKED = re.compile(
    rf"^\s*(?:whatever|whichever)\s+(?P<head>\w+(?:\s+\w+)?)\s+(?:is|lies|sits|stands)\s+"
    rf"(?P<how>(?:the\s+)?{_PICKED}\b[^,]+?),\s*(?P<then>(?:which|what|where|how)\b.*\b(?:it|its)\b.*)$",
    re.I,
)
_ONE_OF_THE = re.compile(
    rf"^\s*(?P<named>(?:the\s+)?(?:[a-z]+\s+)?{_SYMBOL})\s+(?:is|stands|sits|lies|hangs|is\s+\w+ed)\s+"
    r"(?:in|on)\s+one\s+of\s+the\s+(?P<c>\w+?)s?\s*[.;:]?\s*$",
    re.I,
)


def _picked_or_placed(text: str) -> Split | None:
    """ "Whatever object is the farthest from the sign O95, what room is it in?" -> "Which object is the
    farthest from the sign O95?", "What room is #1 in?"; "The appliance O10 stands in one of the hallways.
    How many mesh places make up that hallway?" -> "Which hallway is the appliance O10 in?", "How many mesh
    places make up #1?"."""
    m = _WHATEVER_PICKED.match(text)
    if m is not None:
        then = re.sub(r"\bits\b", "#1's", m.group("then"), count=1, flags=re.I)
        then = re.sub(r"\bit\b", "#1", then, count=1, flags=re.I) if "#1" not in then else then
        return Split(f"Which {m.group('head')} is {m.group('how')}?", then[0].upper() + then[1:])
    clauses = [c for c in _CLAUSE_END.split(text) if c.strip()]
    placed = _ONE_OF_THE.match(clauses[0]) if len(clauses) >= 2 else None
    if placed is None:
        return None
    noun = placed.group("c")
    again = re.compile(rf"\b(?:that|this|the)\s+{re.escape(noun)}\b", re.I)
    for i, later in enumerate(clauses[1:], start=1):
        found = again.search(later)
        if found and _ASKS.search(later):
            then = later[: found.start()] + "#1" + later[found.end() :]
            named = re.sub(r"^(?:the\s+)?", "the ", placed.group("named"), flags=re.I)
            return Split(f"Which {noun} is {named} in?", " ".join([then, *clauses[i + 1 :]]).strip())
    return None


def _holding_thing(container: str) -> str:
    """A container described by a thing in it named by its kind: "the room where the bike is parked"."""
    return (
        rf"\bthe\s+(?P<c>{container})\s+(?:that|which|where)\s+(?P<s>the\s+(?!(?:{container})\b)[a-z]+"
        rf"(?:\s+[a-z]+)?)\s+(?:is|was|hangs|sits|stands|lies|is\s+\w+ed)(?:\s+(?:in|on|at))?(?=\s*(?:[:,.;?!]|$))"
    )


def _plural(word: str) -> str:
    return word if word.lower().endswith("s") else word + "s"


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
    if _plain(first) == _plain(question) or re.match(r"^\s*(?:how|is|are|does|do|can)\b", first, re.I):
        return None  # the question again, or a first step that finds a number or a yes/no, not nodes
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
