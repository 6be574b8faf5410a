"""Goal sketches: PDDL goals whose arguments may still name *what* rather than *which*.

A small model is good at the goal's skeleton and bad at copying a dozen symbols; so it writes a sketch and
the symbols are filled in from the database:

* ``O43``, ``R2``: a node symbol (checked to exist);
* ``[bicycle]``: every node whose ``class`` is that value (of the kind the predicate expects: an object
  for ``holding``, a room for ``visited-room``; synonyms go through the entity linker);
* ``?x``: the values of column ``x`` of the sketch's Cypher query.

An atom whose argument has several values expands to ``(or ...)`` (any one will do: "grab a wastebin"),
to ``(and ...)`` inside ``(all ...)`` or when the instruction names the class in the plural ("visit the
hallways"), and under ``not`` to ``(and (not ...) ...)`` (avoid every one). Problems (an unknown class, a
query with no rows) are reported, not guessed around.

The graph types the goal: a predicate of a domain family takes the member for its argument's kind, a
wrong-kind argument of another predicate takes the nodes of its kind that hold it, and a conjunct the
others imply through containment drops out (:func:`resolve_sketch`). :func:`verb_problems` judges which
predicate families an instruction asks for by the words of its language (data, not code).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from scenerag.agents.words import Words
from scenerag.graph import ontology as ont
from scenerag.lang.gbnf import Grammar, Node
from scenerag.lang.pddl_goal import Constant, GoalDomain, goals_equivalent, parse_goal

__all__ = [
    "Named",
    "SketchError",
    "SketchResult",
    "align_to_verbs",
    "complete_parts",
    "end_where_said",
    "join_to_relation",
    "offer_alternatives",
    "only_negations",
    "polarity_where_said",
    "resolve_sketch",
    "said_alone",
    "scope_to_named_class",
    "sequence_as_and",
    "sketch_grammar",
    "verb_problems",
    "widen_to_descriptions",
    "widen_to_layer_heads",
]

MAX_PARTS = 8
"""Parts of one (and ...) / (or ...) in a grammar-decoded sketch (a class stays one part: [trash])."""
_TOKEN = re.compile(r"\(|\)|\[[^\]]*\]|[^\s()\[\]]+")
_WORD = re.compile(r"[\w']+")
_SYMBOL = ont.SYMBOL_IN_TEXT


class SketchError(ValueError):
    """A sketch that cannot be resolved; the message is phrased for the model to fix."""


@dataclass
class SketchResult:
    goal: str
    notes: list[str] = field(default_factory=list)


Resolver = Callable[[str, str], list[str]]
"""``(class text, node kind)`` -> the symbols of the nodes it names, preferably of that kind (empty: none)."""
Holders = Callable[[list[str], str], list[str]]
"""``(symbols, kind)`` -> the nodes of ``kind`` that hold them (along containment)."""


def _parsed(sketch: str) -> list | None:
    """The tree of ``sketch``; None when it does not parse (the checks that read it then say nothing)."""
    try:
        return _parse(sketch.strip())
    except SketchError:
        return None


def _parse(text: str) -> list:
    tokens = _TOKEN.findall(text)
    pos = 0

    def read() -> object:
        nonlocal pos
        if pos >= len(tokens):
            raise SketchError("the goal ends early: a parenthesis is not closed")
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            out = []
            while pos < len(tokens) and tokens[pos] != ")":
                out.append(read())
            if pos >= len(tokens):
                raise SketchError("a parenthesis is not closed")
            pos += 1
            return out
        if tok == ")":
            raise SketchError("unexpected ')'")
        return tok

    if not tokens:
        raise SketchError("the goal is empty")
    value = read()
    if not isinstance(value, list):
        raise SketchError(f"a goal is a parenthesised expression, got {text!r}")
    return value


def resolve_sketch(
    sketch: str,
    domain: GoalDomain,
    *,
    classes: Resolver,
    bindings: dict[str, list[str]] | None = None,
    plural: Callable[[str], bool] | None = None,
    holders: Holders | None = None,
    members: Holders | None = None,
    contents: Holders | None = None,
    asked: Callable[[str], bool] = lambda _: False,
) -> SketchResult:
    """The concrete PDDL goal of ``sketch``; raises :class:`SketchError` with a fixable message.

    Arguments are typed by the graph, not by the predicate the model chose: a predicate of a family
    (``visited-room`` given a place) becomes the member for the argument's kind (``visited-place``); another
    predicate given a node of the wrong kind takes the nodes of its kind that hold it (``holders``: the place
    that holds an object, for "put X where Y is"), and an argument of a predicate over several nodes given a
    node above its kind takes the nodes of its kind that node holds (``members``: "leave X somewhere in R3" is
    any place of R3). A phrase of a one-argument predicate that finds a node above its kind takes the nodes
    of its kind that node holds (``contents``: "inspect every object in hallway R4" found R4). Avoiding
    every member of a class the graph lacks asks for nothing and drops out of a conjunction (noted). A
    conjunct implied by containment stays when the instruction asks for its argument on its own (``asked``:
    "visit the lounge, then wait by the bag")."""
    tree = _parse(sketch.strip())
    bindings = bindings or {}
    notes: list[str] = []
    own: set[str] = set()  # atoms of arguments the instruction asks for on their own

    def values(arg: str, kind: str) -> list[str]:
        if arg.startswith("?"):
            name = arg[1:]
            if name not in bindings:
                raise SketchError(
                    f"{arg} is not a column of the query's result (columns: {', '.join(bindings) or 'none'})"
                )
            if not bindings[name]:
                raise SketchError(f"the query returned no rows for {arg}")
            return bindings[name]
        if arg.startswith("["):
            name = arg[1:-1].strip()
            if ont.has_symbol_shape(name) and domain.kind_of_symbol(name):
                return [name]  # [P754]: a symbol written as a phrase
            found = classes(name, kind)
            if not found:
                raise _Nothing(f"[{name}] names no {kind} of the graph")
            if len(found) > 1:
                notes.append(f"[{name}] is {', '.join(found)}")
            return found
        return [arg]

    def kind_of(symbol: str, expected: str) -> str:
        return (domain.kind_of_symbol(symbol) if ont.has_symbol_shape(symbol) else None) or expected

    def typed(
        head: str, arg: str, kind: str, symbols: list[str], *, down: Holders | None = None
    ) -> list[tuple[str, list[str]]]:
        """``(predicate, symbols)`` groups: the family member per kind found, or ``symbols`` moved to
        the ``kind`` nodes that hold them (``down``: else to those they hold, by that function)."""
        by_kind: dict[str, list[str]] = {}
        for sym in symbols:
            by_kind.setdefault(kind_of(sym, kind), []).append(sym)
        out: list[tuple[str, list[str]]] = []
        for found, syms in by_kind.items():
            if found == kind:
                out.append((head, syms))
                continue
            member = domain.family_member(head, found)
            if member is not None:
                notes.append(f"({head} {arg}) is a {found}: {member}")
                out.append((member, syms))
                continue
            moved = holders(syms, kind) if holders is not None else []
            if moved:
                notes.append(f"{arg} is a {found}: the {kind} {', '.join(moved)} that holds it")
            elif down is not None and (moved := down(syms, kind)):
                notes.append(f"{arg} is a {found}: any {kind} it holds ({', '.join(moved)})")
            else:
                raise SketchError(f"{arg} is a {found} ({', '.join(syms)}), but {head} needs a {kind}")
            out.append((head, moved))
        return out

    def expand(node: object, mode: str) -> str | None:
        """The goal of ``node``; None for a vacuous conjunct (avoiding members of an empty class)."""
        if not isinstance(node, list) or not node:
            raise SketchError(f"expected a parenthesised expression, got {node!r}")
        head = str(node[0]).lower()
        if head in ("and", "or"):
            parts = [expand(c, mode) for c in node[1:]]
            if head == "or" and None in parts:
                raise SketchError("an (or ...) branch asks for nothing")
            kept = list(dict.fromkeys(p for p in parts if p is not None))
            if head == "and":
                kept = _drop_implied(kept, domain)
                if holders is not None:
                    kept = _drop_contained(kept, domain, holders, own)
            if not kept:
                return None
            return kept[0] if len(kept) == 1 else f"({head} " + " ".join(kept) + ")"
        if head == "not":
            if len(node) != 2:
                raise SketchError("(not ...) takes one expression")
            return expand(node[1], "not")
        if head in ("all", "every", "forall", "any", "some", "exists"):
            inner = "all" if head in ("all", "every", "forall") else "any"
            return expand(["and" if inner == "all" else "or", *node[1:]], inner)
        kinds = domain.predicates.get(head)
        if kinds is None:
            raise SketchError(f"unknown predicate {head}; use one of {', '.join(sorted(domain.predicates))}")
        args = [str(a) for a in node[1:]]
        if len(args) != len(kinds):
            raise SketchError(f"({head} ...) takes {len(kinds)} argument(s), got {len(args)}")
        try:
            options = [values(a, k) for a, k in zip(args, kinds, strict=True)]
        except _Nothing as exc:
            if mode == "not":
                notes.append(f"{exc}: nothing to avoid")
                return None
            raise SketchError(str(exc)) from None
        if mode == "any" and plural is not None and any(a.startswith("[") and plural(a[1:-1]) for a in args):
            mode = "all"  # "visit the hallways": every one of them
        if len(args) == 1:
            # a phrase that finds a node above the kind ("[object in hallway R4]" -> R4) means what it holds
            down = contents if args[0].startswith("[") else None
            groups = [(p, [syms]) for p, syms in typed(head, args[0], kinds[0], options[0], down=down)]
        else:  # families are unary: each argument keeps the predicate and may move to its holders
            for i, (a, k) in enumerate(zip(args, kinds, strict=True)):
                moved = typed(head, a, k, options[i], down=members)
                options[i] = list(dict.fromkeys(s for _, syms in moved for s in syms))
            groups = [(head, options)]
        atoms = [f"({p} {' '.join(combo)})" for p, opts in groups for combo in _product(opts)]
        atoms = list(dict.fromkeys(atoms))
        if len(args) == 1 and asked(args[0]):
            own.update(atoms)
        if mode == "not":
            atoms = [f"(not {a})" for a in atoms]
            return atoms[0] if len(atoms) == 1 else "(and " + " ".join(atoms) + ")"
        if len(atoms) == 1:
            return atoms[0]
        return ("(and " if mode == "all" else "(or ") + " ".join(atoms) + ")"

    goal = expand(tree, "any")
    if goal is None:
        raise SketchError("the goal asks for nothing: every part avoids things the graph lacks")
    if goals_equivalent(parse_goal(goal, domain), Constant(False)):
        raise SketchError("no state meets the goal: it asks for something and for its negation")
    return SketchResult(goal, notes)


_ATOM = re.compile(r"\(([\w-]+) ([^\s()]+)\)")
"""A unary atom, ``(visited-room R5)``: its predicate and its argument."""


class _Nothing(SketchError):
    """A phrase that names no node (vacuous under ``not``)."""


def _drop_implied(parts: list[str], domain: GoalDomain) -> list[str]:
    """In a conjunction, ``(visited-place P)`` is implied by ``(at-place P)`` (the domain's ``implies``), and
    ``(visited-object O)`` by ``(safe O)`` (``reached_at``: inspecting O needs the robot at O); ``(holding
    O)``, or a choice of such, goes beside ``(object-in-place O P)`` (``step_towards``: O is picked up to be
    put there)."""
    implied = set()
    for p in parts:
        m = _ATOM.fullmatch(p)
        if m and m.group(1) in domain.implies:
            implied.add(f"({domain.implies[m.group(1)]} {m.group(2)})")
        if m and m.group(1) in domain.reached_at:
            implied.add(f"({domain.reached_at[m.group(1)]} {m.group(2)})")
    related = {
        (rel, m.group(2))
        for p in parts
        for m in re.finditer(r"\(([\w-]+) ([^\s()]+) [^\s()]+\)", p)
        for rel in [m.group(1)]
    }

    def a_step(part: str) -> bool:  # (holding O) or (or (holding O1) (holding O2)), each O then put somewhere
        tree = _parsed(part)
        atoms = tree[1:] if tree and str(tree[0]).lower() == "or" else [tree]
        return all(
            isinstance(a, list)
            and len(a) == 2
            and not isinstance(a[1], list)
            and (domain.step_towards.get(str(a[0])), str(a[1])) in related
            for a in atoms
        )

    kept = [p for p in parts if p not in implied and not a_step(p)]
    return kept or parts


def verb_problems(sketch: str, instruction: str, domain: GoalDomain, words: Words) -> list[str]:
    """Predicate families ``sketch`` uses that nothing in ``instruction`` asks for, judged only when the
    instruction says words of some family (the language's ``goal_words``): "pick up any X" asks for holding,
    not for ``(or (holding X) (visited-object X))``."""
    table = words.goal_words
    tree = _parsed(sketch)
    if tree is None:
        return []
    used = _keys(tree, domain)
    said = words.said_keys(instruction, table)

    def named(key: str) -> str:
        return "(not ...)" if key == "not" else "/".join(domain.families.get(key, {}).values()) or key

    wanted = ", ".join(named(k) for k in sorted(said))
    return [
        f"nothing in the instruction asks for {named(key)} (its words ask for {wanted})"
        for key in sorted(used - said)
        if key in table and said - {key}
    ]


def offer_alternatives(goal: str, offered: tuple[str, str]) -> tuple[str, list[str]]:
    """``goal`` taking both nodes the instruction offers as alternatives (two symbols of one layer, by their
    letters) where it names only one: "finish up in either the lounge or R3": ``(in-room R1)`` -> ``(or
    (in-room R1) (in-room R3))``; a negated one avoids both. Unchanged when it names both or neither, or it
    does not parse; ``(goal, notes)``."""
    tree = _parsed(goal)
    a, b = offered
    letters = {re.sub(r"\d+$", "", s).upper() for s in offered}
    if tree is None or len(letters) != 1:
        return goal, []
    named = set(_SYMBOL.findall(goal))
    if (a in named) == (b in named):
        return goal, []
    have, other = (a, b) if a in named else (b, a)

    def atom_with(node: object) -> bool:
        return isinstance(node, list) and bool(node) and not isinstance(node[0], list) and have in node[1:]

    def alt(node: list) -> list:
        return [other if x == have else x for x in node]

    def swap(node: object) -> object:
        if not isinstance(node, list) or not node:
            return node
        if str(node[0]).lower() == "not" and len(node) == 2 and atom_with(node[1]):
            return ["and", node, ["not", alt(node[1])]]
        if atom_with(node) and str(node[0]).lower() not in ("and", "or", "all", "any"):
            return ["or", node, alt(node)]
        return [node[0], *(swap(c) for c in node[1:])]

    fixed = _unparse(swap(tree))
    if fixed == goal.strip():
        return goal, []
    return fixed, [f"{have} -> {have} or {other}: the instruction offers both"]


def _unparse(node: object) -> str:
    return "(" + " ".join(_unparse(c) for c in node) + ")" if isinstance(node, list) else str(node)


def _keys(node: object, domain: GoalDomain) -> set[str]:
    """The goal-word keys a sketch part uses: a family or predicate for positive atoms, ``not`` for a
    negation (what it negates says nothing of the verbs)."""
    if not isinstance(node, list) or not node:
        return set()
    head = str(node[0]).lower()
    if head == "not":
        return {"not"}
    if head in domain.predicates:
        return {domain.family_of(head) or head}
    return set().union(*(_keys(c, domain) for c in node[1:]))


def _unary_predicates(keys: set[str], kind: str, domain: GoalDomain) -> set[str]:
    """The predicates over one ``kind`` argument that goal-word ``keys`` (families or predicates) name."""
    return {
        p
        for key in keys
        for p in [domain.families[key].get(kind) if key in domain.families else key]
        if p is not None and domain.predicates.get(p) == (kind,)
    }


def sequence_as_and(sketch: str, instruction: str, words: Words) -> tuple[str, list[str]]:
    """``sketch`` with a top-level ``or`` made an ``and`` when the instruction asks for things in turn (the
    language's ``sequence_words``: "first stop by the food, then end up at the bike") and offers no choice
    (no ``choice_words`` or ``alternative_words``): a sequence asks for every part, the PDDL goal for all of
    them. An ``or`` with a part that only avoids is an ``and`` whatever the words: the avoidance alone holds
    before the robot moves, so the choice would ask for nothing. Unchanged otherwise, with a note when
    changed."""
    tree = _parsed(sketch)
    if not isinstance(tree, list) or len(tree) < 3 or str(tree[0]).lower() != "or":
        return sketch, []
    if any(isinstance(part, list) and not _has_positive(part) for part in tree[1:]):
        # (or (holding X) (not (visited-object Y))) holds before the robot moves: the avoidance is a condition
        out = _unparse(["and", *tree[1:]])
        return out, [f"{sketch} -> {out}: a choice with an avoidance holds before the robot moves"]
    if not words.says(instruction, words.sequence_words):
        return sketch, []
    if words.says_choice(instruction) or words.says(instruction, words.alternative_words):
        return sketch, []
    out = _unparse(["and", *tree[1:]])
    return out, [f"{sketch} -> {out}: the instruction asks for these in turn, not for one of them"]


def instruction_parts(instruction: str, words: Words) -> list[tuple[int, int]]:
    """The parts of an instruction, ``(start, end)`` each: the text between punctuation and the language's
    ``part_words`` ("inspect the bike, *then* wait in the lounge")."""
    edges = sorted(
        [(m.start(), m.end()) for m in _BREAK.finditer(instruction)]
        + words.said_spans(instruction, words.part_words)
    )
    cuts = [0, *[c for span in edges for c in span], len(instruction)]
    return [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2) if cuts[i] < cuts[i + 1]]


def choice_as_any(sketch: str, instruction: str, words: Words) -> tuple[str, list[str]]:
    """``sketch`` with each ``(all ...)`` made ``(any ...)`` when the instruction offers a choice of one
    (the language's ``choice_words``: "grab a decoration from the lounge, either one is fine") and says none
    of its ``every_words`` outside a part that avoids ("keep out of all the hallways"): every member is not
    asked for. An ``(all A B)`` of several parts still asks for each part (``(and (any A) (any B))``), and an
    avoidance of every member stays one. Unchanged otherwise, with a note when changed."""
    avoiding = words.goal_words.get("not", ())
    # "every" said in a part that avoids ("keep out of *all* the hallways") asks nothing of the choice
    every = [
        (a, b)
        for a, b in instruction_parts(instruction, words)
        if words.says(instruction[a:b], words.every_words) and not words.says(instruction[a:b], avoiding)
    ]
    if not words.says_choice(instruction) or every:
        return sketch, []
    tree = _parsed(sketch)
    if tree is None:
        return sketch, []

    def swap(node: object) -> object:
        if not isinstance(node, list) or not node:
            return node
        head = str(node[0]).lower()
        if head not in ("all", "every", "forall") or not _has_positive(node):
            return [node[0], *(swap(c) for c in node[1:])]  # avoiding every member stays every member
        if len(node) > 2:  # "(all A B)" asks for A and for B: the choice is among each one's members
            return ["and", *(["any", swap(c)] if _has_positive(c) else c for c in node[1:])]
        return ["any", swap(node[1])]

    out = _unparse(swap(tree))
    if out == _unparse(tree):
        return sketch, []
    return out, [f"{sketch} -> {out}: the instruction offers a choice of one, not every one"]


def end_where_said(
    sketch: str,
    instruction: str,
    domain: GoalDomain,
    words: Words,
    mentions: Callable[[str], Sequence[str]] = lambda _: (),
) -> tuple[str, list[str]]:
    """A sketch that only visits where the instruction also says where to end ("go by the bed first, then
    end up next to the bike" sketched two ``visited-object`` atoms): the visit of the first thing named
    after the last word that asks to end (the language's ``goal_words`` of the ``ends-at`` family, not inside
    a longer phrase of another family: "stay out of") becomes the family's predicate for it (``(at-object
    [bicycle])``); with nothing named after it, the visit named last before it ("go to R5 and stay there").
    Unchanged when the sketch already ends somewhere or says no visit; a note when changed."""
    table = words.goal_words
    ends, visits = "ends-at", "visited"
    if ends not in domain.families or visits not in domain.families or ends not in table:
        return sketch, []
    tree = _parsed(sketch)
    if tree is None or ends in _keys_positive(tree, domain):
        return sketch, []
    said = _end_spans(instruction, words)  # "stay out of": no end
    if not said:
        return sketch, []
    after = said[-1][1]
    best: tuple[int, list] | None = None
    last_before: tuple[int, list] | None = None  # "go to R5 and stay there": the thing named last before

    def walk(node: object) -> None:
        nonlocal best, last_before
        if not isinstance(node, list) or not node:
            return
        head = str(node[0]).lower()
        if head == "not":
            return
        if domain.family_of(head) == visits and len(node) == 2:
            spans = _arg_spans(instruction, str(node[1]), mentions, words)
            starts = [a for a, _ in spans if a >= after]
            if starts and (best is None or min(starts) < best[0]):
                best = (min(starts), node)
            before = [a for a, _ in spans if a < said[-1][0]]
            if before and (last_before is None or max(before) > last_before[0]):
                last_before = (max(before), node)
            return
        for child in node[1:]:
            walk(child)

    walk(tree)
    chosen = best or last_before
    if chosen is None:
        return sketch, []
    atom = chosen[1]
    kind = domain.predicates[str(atom[0]).lower()][0]
    ended = domain.families[ends].get(kind)
    member = ended
    if best is not None:  # "then pick up the food": the verb said right before the thing asks for its own
        member = _own_verb(instruction, after, best[0], kind, domain, words) or ended
    if member is None:
        return sketch, []
    before = _unparse(atom)
    atom[0] = member
    why = (
        "the instruction says to end there"
        if member == ended
        else "the goal word said right before it asks for that"
    )
    return _unparse(tree), [f"{before} -> {_unparse(atom)}: {why}"]


def _own_verb(instruction: str, lo: int, at: int, kind: str, domain: GoalDomain, words: Words) -> str | None:
    """The one unary predicate over ``kind`` that the goal word said last between ``lo`` and ``at`` asks
    for, other than a visit or an end ("then *pick up* the food": holding); None when that word asks for a
    visit, an end, a negation or more than one such predicate, or no goal word is said there."""
    said = [
        (a, key)
        for key, ws in words.goal_words.items()
        for a, _ in words.said_spans(instruction, ws)
        if lo <= a < at
    ]
    if not said:
        return None
    last = max(a for a, _ in said)
    keys = {key for a, key in said if a == last}
    if keys & {"visited", "ends-at", "not"}:
        return None
    asked = {
        p
        for key in keys
        for p in ([domain.families[key].get(kind)] if key in domain.families else [key])
        if p is not None and domain.predicates.get(p) == (kind,)
    }
    return asked.pop() if len(asked) == 1 else None


def _end_spans(instruction: str, words: Words) -> list[tuple[int, int]]:
    """Where the instruction says a word of the ``ends-at`` family, not inside a longer phrase of another
    family ("stay out of" says no end)."""
    table = words.goal_words
    others = [
        span for key, ws in table.items() if key != "ends-at" for span in words.said_spans(instruction, ws)
    ]
    return [
        (s, e)
        for s, e in words.said_spans(instruction, table.get("ends-at", ()))
        if not any(a <= s and e <= b and b - a > e - s for a, b in others)
        and not _goal_participle(instruction[s:e], words)  # "where the bike is *parked*" describes
    ]


def one_end(
    sketch: str,
    instruction: str,
    domain: GoalDomain,
    words: Words,
    mentions: Callable[[str], Sequence[str]] = lambda _: (),
) -> tuple[str, list[str]]:
    """A sketch that asks to end at two things at once (``(and (at-object [food]) (at-object [bicycle]))`` for
    "drop by the food first, then go wait next to the bicycle"): the robot ends in one place, so only the
    thing named first after the last word that asks to end keeps the ``ends-at`` predicate; the others are
    visits (the family's ``visited`` predicate). Only atoms of one predicate, parts of one conjunction;
    unchanged when no word asks to end or none is named after it; a note per change."""
    ends, visits = "ends-at", "visited"
    if ends not in domain.families or visits not in domain.families:
        return sketch, []
    tree = _parsed(sketch)
    said = _end_spans(instruction, words)
    if tree is None or not said:
        return sketch, []
    notes: list[str] = []

    def walk(node: object) -> None:
        if not isinstance(node, list) or not node:
            return
        head = str(node[0]).lower()
        if head not in ("and", "all"):
            if head in ("or", "any"):
                for child in node[1:]:
                    walk(child)
            return
        parts = [c for c in node[1:] if isinstance(c, list) and len(c) == 2]
        by_predicate: dict[str, list[list]] = {}
        for part in parts:
            head_p = str(part[0]).lower()
            if domain.family_of(head_p) == ends:
                by_predicate.setdefault(head_p, []).append(part)
        for atoms in by_predicate.values():
            if len({_unparse(a) for a in atoms}) < 2:
                continue
            after = said[-1][1]
            named = []
            for atom in atoms:
                starts = [a for a, _ in _arg_spans(instruction, str(atom[1]), mentions, words) if a >= after]
                named.append(min(starts) if starts else None)
            if sum(n is not None for n in named) == 0:
                continue
            keep = min((n, i) for i, n in enumerate(named) if n is not None)[1]
            for i, atom in enumerate(atoms):
                if i == keep:
                    continue
                member = domain.families[visits].get(domain.predicates[str(atom[0]).lower()][0])
                if member is None:
                    continue
                before = _unparse(atom)
                atom[0] = member
                notes.append(
                    f"{before} -> {_unparse(atom)}: the robot ends in one place, the instruction says "
                    f"to end at {_unparse(atoms[keep][1])}"
                )
        for child in node[1:]:
            walk(child)

    walk(tree)
    return (_unparse(tree), notes) if notes else (sketch, [])


def never_entered(
    sketch: str,
    instruction: str,
    domain: GoalDomain,
    words: Words,
    mentions: Callable[[str], Sequence[str]] = lambda _: (),
) -> tuple[str, list[str]]:
    """``(not (in-room [lounge]))`` for "never set foot in the lounge": a negated ``ends-at`` atom only keeps
    the robot from ending there; where no word asks to end in the part that says it (the whole instruction,
    where it is said nowhere; :func:`instruction_parts`), the avoidance is of going there at all (the
    ``visited`` family's predicate, ``(not (visited-room [lounge]))``: "park at an appliance, but never enter
    the lounge"). Unchanged when its part says to end ("don't finish in the lounge"); a note per change."""
    ends, visits = "ends-at", "visited"
    if ends not in domain.families or visits not in domain.families:
        return sketch, []
    tree = _parsed(sketch)
    if tree is None:
        return sketch, []
    notes: list[str] = []
    said_ends = [s for s, _ in _end_spans(instruction, words)]
    parts = instruction_parts(instruction, words)

    def ends_there(arg: str) -> bool:
        """Whether a word asks to end in a part that says ``arg`` (anywhere, where ``arg`` is not said)."""
        spans = _arg_spans(instruction, arg, mentions, words)
        if not spans:
            return bool(said_ends)
        return any(a <= e < b for s, _ in spans for a, b in parts if a <= s < b for e in said_ends)

    def walk(node: object, negated: bool) -> None:
        if not isinstance(node, list) or not node:
            return
        head = str(node[0]).lower()
        if negated and len(node) == 2 and domain.family_of(head) == ends and not ends_there(str(node[1])):
            member = domain.families[visits].get(domain.predicates[head][0])
            if member is not None:
                before = _unparse(node)
                node[0] = member
                notes.append(
                    f"(not {before}) -> (not {_unparse(node)}): nothing asks where to end, so the "
                    "instruction avoids going there at all"
                )
            return
        for child in node[1:]:
            walk(child, negated or head == "not")

    walk(tree, False)
    return (_unparse(tree), notes) if notes else (sketch, [])


def polarity_where_said(
    sketch: str,
    instruction: str,
    domain: GoalDomain,
    words: Words,
    mentions: Callable[[str], Sequence[str]] = lambda _: (),
) -> tuple[str, list[str]]:
    """A conjunction that asks for a thing and avoids it at once (``(and (visited-object [bicycle]) (not
    (visited-object [bicycle])) ...)`` for "drive to the bike, but do not go through R2"): the instruction
    says which one it means. An atom whose argument is said only with the other polarity (avoided: after a
    word of the ``not`` family in its part, :func:`instruction_parts`) drops out, when another atom of the
    conjunction, of the polarity said, is about the same words; so does a negation of a thing said only
    where it is asked for while the instruction avoids something (what to avoid is said there; what is
    asked for, :func:`complete_parts` then adds). Unchanged otherwise (a thing said both to do and to
    avoid, or said nowhere), with a note per dropped atom."""
    tree = _parsed(sketch)
    avoiding = words.goal_words.get("not", ())
    if tree is None or not avoiding:
        return sketch, []
    parts = instruction_parts(instruction, words)
    negations = [s for s, _ in words.said_spans(instruction, avoiding)]
    notes: list[str] = []

    def avoided(at: int) -> bool:
        """Whether a word of the ``not`` family comes before ``at`` in its part ("visit every hallway
        *except* the one with the bike": the hallway is asked for, the one with the bike avoided)."""
        return any(a <= n < at for a, b in parts if a <= at < b for n in negations)

    def said(atom: list) -> tuple[list[tuple[int, int]], set[bool]]:
        """Where ``atom``'s argument is said, and whether each saying is avoided."""
        spans = _arg_spans(instruction, str(atom[1]), mentions, words)
        return spans, {avoided(s) for s, _ in spans}

    def walk(node: object) -> None:
        if not isinstance(node, list) or not node:
            return
        if str(node[0]).lower() in ("and", "all"):
            atoms: list[tuple[list, bool, list[tuple[int, int]], set[bool]]] = []
            for child in node[1:]:
                negated = isinstance(child, list) and len(child) == 2 and str(child[0]).lower() == "not"
                atom = child[1] if negated else child
                if isinstance(atom, list) and len(atom) == 2 and str(atom[0]).lower() in domain.predicates:
                    atoms.append((child, negated, *said(atom)))
            drop = []
            for child, negated, spans, polarity in atoms:
                if polarity != {not negated}:
                    continue  # said where it is meant so, said both ways, or not said
                if negated and negations:
                    drop.append(child)  # what to avoid is said in another part
                elif any(
                    other_negated == (not negated)
                    and other_polarity == {not negated}
                    and any(a < d and c < b for a, b in spans for c, d in other_spans)
                    for other, other_negated, other_spans, other_polarity in atoms
                    if other is not child
                ):
                    drop.append(child)
            for child in drop:
                node.remove(child)
                where = (
                    "only where it is asked for"
                    if str(child[0]).lower() == "not"
                    else "only where it is avoided"
                )
                notes.append(f"{_unparse(child)} dropped: the instruction says it {where}")
        for child in node[1:]:
            walk(child)

    walk(tree)
    if not notes:
        return sketch, []
    if isinstance(tree, list) and len(tree) == 2 and str(tree[0]).lower() in ("and", "all"):
        tree = tree[1]
    return _unparse(tree), notes


def said_alone(
    sketch: str, instruction: str, words: Words, mentions: Callable[[str], Sequence[str]] = lambda _: ()
) -> set[str]:
    """The arguments of ``sketch`` the instruction says in a part of their own: no other argument of the
    sketch is said in that part, outside their own phrase ("visit the lounge first, then the hallway where
    the bicycle is": both; "visit the signs in R5": neither)."""
    args = list(dict.fromkeys(t for t in _TOKEN.findall(sketch) if t not in "()" and not t.startswith("?")))
    spans = {a: _arg_spans(instruction, a, mentions, words) for a in args}
    out: set[str] = set()
    for a in args:
        for start, end in instruction_parts(instruction, words):
            mine = [(s, e) for s, e in spans[a] if start <= s < end]
            if mine and not any(
                start <= s < end and not any(ms <= s and e <= me for ms, me in mine)
                for other in args
                if other != a
                for s, e in spans[other]
            ):
                out.add(a)
    return out


@dataclass(frozen=True)
class Named:
    """One thing an instruction names, for :func:`complete_parts`: how it is said (``mentions``), the sketch
    argument that means it (a symbol, or ``[class]``), its argument kind, and the nodes it names."""

    mentions: tuple[str, ...]
    argument: str
    kind: str
    symbols: tuple[str, ...] = ()


def complete_parts(
    sketch: str,
    instruction: str,
    named: Sequence[Named],
    domain: GoalDomain,
    words: Words,
    *,
    canonical: Callable[[str], Collection[str]] = lambda _: (),
    holds: Callable[[list[str], list[str]], bool] = lambda _a, _b: False,
) -> tuple[str, list[str]]:
    """``sketch`` joined with what it leaves out of the instruction: a part of the instruction (between the
    language's ``part_words`` or punctuation) that says a goal word and names something, none of which the
    sketch covers, adds that thing under the word's predicate ("inspect the bike, then wait in the lounge"
    sketched ``(safe [bicycle])``: ``(in-room [lounge])`` joins it; a part saying a ``not`` word adds a
    negation). A thing is covered when the sketch has its symbol, a symbol that holds it (``holds(sketch
    symbols, its symbols)``), or a bracket that says it (``canonical``: a bracket's text -> the class values it
    names). Unchanged, with no note, when the sketch offers a choice (a top-level ``or``, or the instruction
    says ``alternative_words``), binds ``?x`` from a query or names a node that nothing of
    the instruction accounts for (a node the model found: which part it serves is unknown)."""
    tree = _parsed(sketch)
    if tree is None or "?" in sketch or not named:
        return sketch, []
    # a choice (a top-level or, or alternatives said) takes no positive part: which option it serves is unknown
    choice = str(tree[0]).lower() == "or" or bool(words.says(instruction, words.alternative_words))
    tokens = [t for t in _TOKEN.findall(sketch) if t not in "()"]
    symbols = [t for t in tokens if ont.has_symbol_shape(t)]
    brackets = [t[1:-1].strip().lower() for t in tokens if t.startswith("[")]

    seen: dict[Named, bool] = {}

    def covered(thing: Named) -> bool:  # one answer a thing (a part may name one that another part did)
        if thing not in seen:
            seen[thing] = _covers(thing)
        return seen[thing]

    def _covers(thing: Named) -> bool:
        if thing.argument in symbols or set(thing.symbols) & set(symbols):
            return True
        said = [m.lower() for m in thing.mentions] + [thing.argument.strip("[]").lower()]
        for text in brackets:
            # what a bracket describes by ("the trash can closest to *the bike*") is not what it names
            opened = min((a for a, _ in words.said_spans(text, words.description_openers)), default=len(text))
            values = {v.lower() for v in canonical(text[:opened].strip() or text)}
            if thing.argument.strip("[]").lower() in values or any(
                a < opened for m in said if m for a, _ in words.said_spans(text, [m])
            ):
                return True
        return bool(thing.symbols) and holds(symbols, list(thing.symbols))

    accounted = {s for t in named for s in (t.argument, *t.symbols)}
    loose = [s for s in symbols if s not in accounted and not any(holds([s], list(t.symbols)) for t in named)]
    if loose:
        return sketch, []
    table = words.goal_words
    parts = instruction_parts(instruction, words)
    added: list[list] = []
    notes: list[str] = []
    for start, end in parts:
        text = instruction[start:end]
        here = sorted(
            (s, thing) for thing in named for s, _ in words.said_spans(text, [m for m in thing.mentions if m])
        )
        if not here or any(covered(thing) for _, thing in here):
            continue
        at, thing = here[0]
        said = [
            (s, key)
            for key in words.said_keys(text, table)
            for s, _ in words.said_spans(text, table[key])
            if s < at
        ]
        keys = {key for _, key in said}
        verbs = sorted(said, key=lambda x: x[0])
        if verbs and words.said_spans(text[verbs[-1][0] : at], words.antecedent_pronouns):
            continue  # "park *there* until further notice": the verb's argument is a node said before
        between = text[verbs[-1][0] if verbs else 0 : at]
        if any(
            between[end:].split()
            for _, end in words.said_spans(
                between, (*words.distance_superlatives, *words.distance_comparatives)
            )
        ):
            continue  # "go to whichever one is closer to *the bicycle*": what the target is measured from
        if choice and ("not" not in keys or words.says(text, words.alternative_words)):
            continue  # beside a choice only an avoidance said apart joins ("..., just keep out of the lounge")
        positive = [key for _, key in verbs if key != "not"]
        key = positive[-1] if positive else ("visited" if "not" in keys else None)
        if key is None:
            continue
        member = domain.families[key].get(thing.kind) if key in domain.families else key
        if member is None or domain.predicates.get(member) != (thing.kind,):
            continue
        atom: list = [member, _described(thing, text, at, words)]
        if "not" in keys:
            atom = ["not", atom]
        added.append(atom)
        notes.append(f"{_unparse(atom)} added: the instruction asks for it ({text.strip()!r})")
    if not added:
        return sketch, []
    body = tree[1:] if str(tree[0]).lower() == "and" else [tree]
    return _unparse(["and", *body, *added]), notes


def _described(thing: Named, text: str, at: int, words: Words) -> str:
    """The argument for ``thing`` said at ``at`` in the part ``text``: a class with the description the part
    goes on to give ("never go into the hallway *with the lamp*" -> ``[hallway with the lamp]``), so that it
    is resolved as that part says, not as another part describes the same class; else its argument."""
    if not thing.argument.startswith("["):
        return thing.argument
    ends = [e for s, e in words.said_spans(text, [m for m in thing.mentions if m]) if s == at]
    if not ends:
        return thing.argument
    rest = text[max(ends) :]
    lead = len(rest) - len(rest.lstrip())
    if not any(s == lead for s, _ in words.said_spans(rest, words.description_openers)):
        return thing.argument
    said = " ".join(text[at:].split()).strip(" .,;:!?-")
    return f"[{said}]"


def _antecedent(before: str, after_opener: str, words: Words) -> str | None:
    """The node a description that is only a pronoun refers back to ("the trash cans in *it*", the language's
    ``antecedent_pronouns``): the last symbol the instruction says ``before`` it; None otherwise."""
    said = _WORD.findall(after_opener.lower())
    if len(said) != 1 or said[0] not in words.antecedent_pronouns:
        return None
    symbols = [t for t in _SYMBOL.findall(before) if ont.has_symbol_shape(t)]
    return symbols[-1] if symbols else None


def refer_back(sketch: str, instruction: str, words: Words, names: Sequence[str]) -> tuple[str, list[str]]:
    """``sketch`` with each ``[description]`` that measures from one of the language's ``antecedent_pronouns``
    ("[sign nearest to it]": its head, then only a distance or nearness word and stop words, then the
    pronoun) pointing at what the instruction names last before that description ("first inspect the
    bicycle, then head to the sign nearest to it": ``[sign nearest to the bicycle]``): a symbol, or one of
    ``names`` (how the instruction names nodes: the links' mentions). A description that says more ("the
    hallway that has a light in it": the pronoun is the hallway) or no measure ("the bins in it") is left
    alone. ``(sketch, notes)``; unchanged where the description is not said as written or nothing is named
    before it."""
    measures = [*words.distance_superlatives, *words.distance_comparatives, *words.nearness_words]
    heads = sorted((n.lower() for n in names if n), key=len, reverse=True)
    notes: list[str] = []
    out = sketch
    for token in dict.fromkeys(t for t in _TOKEN.findall(sketch) if t.startswith("[")):
        inner = " ".join(token[1:-1].split())
        said = _WORD.findall(inner.lower())
        if len(said) < 3 or said[-1] not in words.antecedent_pronouns:
            continue
        stem = inner[: inner.lower().rindex(said[-1])].rstrip()
        head = next((h for h in heads if stem.lower().startswith(h + " ")), said[0])
        gap = stem[len(head) :]
        measured = words.said_spans(gap, measures)
        rest = {
            w.group() for w in _WORD.finditer(gap.lower()) if not any(a <= w.start() < b for a, b in measured)
        }
        if not measured or not rest <= set(words.stop):
            continue
        at = words.said_spans(instruction, [stem])
        if not at:
            continue
        before = instruction[: at[0][0]]
        spans = words.said_spans(before, heads)
        spans += [(m.start(), m.end()) for m in _SYMBOL.finditer(before) if ont.has_symbol_shape(m.group())]
        if not spans:
            continue
        start, end = max(spans, key=lambda span: (span[1], -span[0]))  # the last, the longest of it
        named = before[start:end]
        new = f"[{stem} {named if ont.has_symbol_shape(named) else 'the ' + named}]"
        out = out.replace(token, new)
        notes.append(f"{token} -> {new}: '{said[-1]}' is the {named} named before it")
    return out, notes


def _goal_participle(word: str, words: Words) -> bool:
    """Whether ``word`` is a goal word said as a participle ("inspected", "checked"): a verb asking for the
    goal, not a word of a description."""
    low = word.strip(".,;:!?'\"").lower()
    if not low.endswith("d"):
        return False
    said = [w for key, family in words.goal_words.items() if key != "not" for w in family if " " not in w]
    return any(words.said_spans(low, [w]) and low != w for w in said)


def _names_of(arg: str, mentions: Callable[[str], Sequence[str]]) -> list[str]:
    """How an instruction may say a sketch argument (``[bike]``, ``R5``): its text, with spaces for
    underscores, and the words ``mentions`` gives for it (lower-cased, once each)."""
    inner = arg[1:-1].strip() if arg.startswith("[") else arg
    return list(dict.fromkeys(m.lower() for m in (inner, inner.replace("_", " "), *mentions(inner)) if m))


def _arg_spans(
    instruction: str, arg: str, mentions: Callable[[str], Sequence[str]], words: Words
) -> list[tuple[int, int]]:
    """Where the instruction says a sketch argument: its phrase as said, where a phrase of several words is
    ("[mesh_place containing the food]" is there, not at another "mesh place"), else any of its names."""
    inner = arg[1:-1].strip().replace("_", " ") if arg.startswith("[") else arg
    if len(inner.split()) > 1 and (exact := words.said_spans(instruction, [inner.lower()])):
        return exact
    return words.said_spans(instruction, _names_of(arg, mentions))


def _keys_positive(node: object, domain: GoalDomain) -> set[str]:
    """The families or predicates of ``node``'s atoms not under ``not``."""
    return _keys(node, domain) - {"not"}


def join_to_relation(
    sketch: str, instruction: str, domain: GoalDomain, words: Words
) -> tuple[str, list[str]]:
    """A sketch that splits a relation the instruction asks for into unary atoms ("take the bag and leave it
    where the bike is" sketched ``(or (holding [bag]) (at-object [bicycle]))``) joined into the relation's
    atom (``(object-in-place [bag] [bicycle])``; the graph then types its arguments).

    Only when the instruction says a word that asks for exactly one predicate over two nodes and for no
    unary one (the language's ``goal_words``: "leave", "put", not "take", which also asks for holding, nor
    a layer's name: "place"), the sketch has no atom of that predicate, and its positive atoms are exactly
    two unary ones, one of a predicate said with the relation's words (holding: "take", "carry") over the
    relation's first kind; negations are kept. Unchanged otherwise, with a note when changed."""
    table = words.goal_words
    relations = [p for p, kinds in domain.predicates.items() if len(kinds) == 2 and p in table]
    unary = {w for key, ws in table.items() if key not in relations for w in ws} | set(words.layer_words)
    asked = [p for p in relations if words.says(instruction, [w for w in table[p] if w not in unary])]
    tree = _parsed(sketch)
    if len(asked) != 1 or tree is None or asked[0] in _TOKEN.findall(sketch):
        return sketch, []
    relation = asked[0]
    atoms: list[list] = []
    negations: list[object] = []

    def walk(node: object) -> bool:
        if not isinstance(node, list) or not node:
            return False
        head = str(node[0]).lower()
        if head == "not":
            negations.append(node)
            return True
        if head in domain.predicates:
            atoms.append(node)
            return len(node) == 2
        return head in ("and", "or", "all", "any") and all(walk(c) for c in node[1:])

    if not walk(tree) or len(atoms) != 2:
        return sketch, []
    # the thing moved is the argument of a predicate said with the relation's own words ("take": holding)
    kin = {p for p, ws in table.items() if p != relation and set(ws) & set(table[relation])}
    held = [a for a in atoms if str(a[0]).lower() in kin]
    if len(held) != 1 or domain.predicates[str(held[0][0]).lower()] != domain.predicates[relation][:1]:
        return sketch, []
    what = held[0]
    where = atoms[1] if what is atoms[0] else atoms[0]
    joined = [relation, what[1], where[1]]
    out = _unparse(["and", joined, *negations] if negations else joined)
    return out, [f"{sketch} -> {out}: the instruction asks for {relation}"]


def _without_descriptions(instruction: str, sketch: str) -> str:
    """``instruction`` with each run of two or more words that a ``[description]`` of the sketch also says
    blanked out: a goal word inside what the model read as a description describes a thing, it asks for
    nothing ("the sign farthest away from the bike": "away" is no avoidance; "where the bike is parked")."""
    phrases = [_WORD.findall(t[1:-1].lower()) for t in _TOKEN.findall(sketch) if t.startswith("[")]
    if not phrases:
        return instruction
    tokens = list(_WORD.finditer(instruction))
    low = [t.group().lower() for t in tokens]
    blank = [False] * len(tokens)
    for words_ in phrases:
        for i in range(len(low)):
            for j in range(len(words_)):
                n = 0
                while i + n < len(low) and j + n < len(words_) and low[i + n] == words_[j + n]:
                    n += 1
                if n >= 2:
                    blank[i : i + n] = [True] * n
    out = list(instruction)
    for t, b in zip(tokens, blank, strict=True):
        if b:
            out[t.start() : t.end()] = " " * (t.end() - t.start())
    return "".join(out)


def align_to_verbs(sketch: str, instruction: str, domain: GoalDomain, words: Words) -> tuple[str, list[str]]:
    """``sketch`` made to say what the instruction's verbs ask for (the language's ``goal_words``), with a
    note per change; unchanged when the instruction says no such words, or the sketch does not parse.

    * An atom of a family or predicate nothing in the instruction asks for becomes the one predicate the
      instruction does ask for, unused so far, that takes its argument's kind ("check on the bins":
      ``(safe X)`` -> ``(visited-object X)``; several candidates: unchanged).
    * Then a part of an ``and`` / ``or`` that asks only for what nothing in the instruction says drops out
      when another part asks for something it says ("grab the bike": ``(or (holding X) (visited-object
      X))`` -> ``(holding X)``; "go to the sign closest to the bike": its ``not`` on the bike goes), unless
      it is the only part with a symbol the instruction names."""
    table = words.goal_words
    said = words.said_keys(_without_descriptions(instruction, sketch), table) & set(table)
    if not said:
        return sketch, []
    tree = _parsed(sketch)
    if tree is None:
        return sketch, []
    notes: list[str] = []
    unused = said - _keys(tree, domain) - {"not"}
    named = {t for t in _SYMBOL.findall(instruction) if ont.has_symbol_shape(t)}
    # a family said only inside a longer phrase of another goal's ("check" in "check on") may be what is
    # meant: the model's choice between the two stands (not inside an avoidance: "stay" in "stay out of")
    spans = {key: words.said_spans(instruction, ws) for key, ws in table.items()}
    # family -> the families whose longer phrases say it ("take" of holding inside "take a look" of safe)
    inside: dict[str, set[str]] = {}
    for key, inner in spans.items():
        for s, e in inner:
            for other, outer in spans.items():
                if other not in (key, "not") and any(a <= s and e <= b and b - a > e - s for a, b in outer):
                    inside.setdefault(key, set()).add(other)
    loosely = set(inside)

    def swap(node: object, negated: bool) -> object:
        if not isinstance(node, list) or not node:
            return node
        head = str(node[0]).lower()
        if head == "not":
            return [node[0], *(swap(c, True) for c in node[1:])]
        if head not in domain.predicates:
            return [node[0], *(swap(c, negated) for c in node[1:])]
        key = domain.family_of(head) or head
        if negated or key in said or key in loosely or key not in table or len(node) != 2:
            return node
        kind = domain.predicates[head][0]
        options = _unary_predicates(unused, kind, domain)
        if len(options) != 1:
            return node
        new = options.pop()
        notes.append(f"({head} {node[1]}) -> ({new} {node[1]}): the instruction asks for {new}, not {head}")
        return [new, node[1]]

    def prune(node: object) -> object:
        if not isinstance(node, list) or not node or str(node[0]).lower() not in ("and", "or", "all", "any"):
            return node
        children = [prune(c) for c in node[1:]]
        if len(children) > 1:  # (all A B) written for (and A B): a conjunction too
            asks = [_keys(c, domain) for c in children]
            if any(k & (said - {"not"}) for k in asks):  # an avoidance said alone drops nothing asked for
                # a family said only inside a longer phrase of another's goes beside a part of that other
                # family ("take a look at the sign": safe, not safe and holding); else the model's choice stands
                everything = set().union(*asks)
                asked = said | {key for key in loosely if not inside[key] & everything}
                kept = [c for c, k in zip(children, asks, strict=True) if not k or k & asked]
                # a symbol said inside a kept part's description is held by it ("check every bin in R2")
                held = {t for c in kept for t in _SYMBOL.findall(_unparse(c))}
                for c, k in zip(children, asks, strict=True):
                    if k and not k & asked:
                        if set(_SYMBOL.findall(_unparse(c))) & (named - held):
                            kept.append(c)  # the only part with a symbol the instruction names
                        else:
                            notes.append(f"{_unparse(c)} dropped: nothing in the instruction asks for it")
                children = [c for c in children if any(c is k for k in kept)]
            if len(children) == 1 and str(node[0]).lower() in ("and", "or"):
                return children[0]
        return [node[0], *children]

    out = prune(swap(tree, False))
    if _keys(out, domain) == {"not"}:
        out = _main_goal(out, named, unused, domain, notes)
    aligned = _unparse(out)
    return (aligned, notes) if notes else (sketch, [])


def _main_goal(tree: list, named: set[str], unused: set[str], domain: GoalDomain, notes: list[str]) -> list:
    """A goal of negations only (it holds before the robot moves) joined with the main goal it left out,
    when that is clear: the one node symbol the instruction names and the sketch does not use, under the
    one predicate the instruction asks for and the sketch does not use ("go to O79 but stay out of P22249").
    """
    left = sorted(named - set(_SYMBOL.findall(_unparse(tree))))
    kind = domain.kind_of_symbol(left[0]) if len(left) == 1 else None
    if kind is None:
        return tree
    options = _unary_predicates(unused, kind, domain)
    if len(options) != 1:
        return tree
    predicate = options.pop()
    notes.append(f"({predicate} {left[0]}) added: the goal only said what to avoid")
    parts = tree[1:] if str(tree[0]).lower() == "and" else [tree]
    return ["and", [predicate, left[0]], *parts]


def scope_to_named_class(
    sketch: str,
    unused: list[str],
    domain: GoalDomain,
    named: set[str] | None = None,
    described: Collection[str] = (),
    said_in: Callable[[str], bool] = lambda _: True,
) -> tuple[str, list[str]]:
    """A sketch that names a room where the instruction names a class of objects in it ("wait by one of the
    chairs in R5" sketched ``(in-room R5)``): with exactly one object class the instruction names and the
    sketch leaves out (``unused``), and exactly one positive atom over a room, that atom is about the
    class's members in the room (``(in-room [seating in R5])``; the graph then types the predicate). A room
    given as a symbol the instruction does not name (``named``: "the hallway where the bike is" already
    found as R3) is the model's answer, not the instruction's scope, and a room phrase widened to the
    instruction's description (``described``) is no scope either, nor a room the instruction does not say
    after the class in one part (``said_in(room)``: "the trash can nearest the bike ..., and finish in the
    lounge" names the bike elsewhere): unchanged."""
    if len(unused) != 1:
        return sketch, []
    tree = _parsed(sketch)
    if tree is None:
        return sketch, []
    rooms: list[list] = []

    def walk(node: object) -> None:
        if not isinstance(node, list) or not node:
            return
        head = str(node[0]).lower()
        if head == "not":
            return
        kinds = domain.predicates.get(head)
        if kinds is not None:
            if kinds == ("room",):
                rooms.append(node)
            return
        for child in node[1:]:
            walk(child)

    walk(tree)
    if len(rooms) != 1:
        return sketch, []
    atom = rooms[0]
    if named is not None and ont.has_symbol_shape(str(atom[1])) and str(atom[1]) not in named:
        return sketch, []
    if str(atom[1]).strip("[]").strip() in described:
        return sketch, []  # a room the instruction describes ("the hallway with the bike") is no scope
    if not said_in(str(atom[1])):
        return sketch, []
    where = str(atom[1]).strip("[]")
    before = _unparse(atom)
    atom[1] = f"[{unused[0]} in {where}]"
    return _unparse(tree), [f"{before} -> {_unparse(atom)}: the instruction names the {unused[0]} in {where}"]


_BREAK = re.compile(r"[,.;:!?()]|\s[-\u2013\u2014]+(?:\s|$)")
"""Where a clause ends inside an instruction: punctuation, or a dash between words."""


def _head_gap(gap: str, words: Words) -> bool:
    """Whether ``gap`` may stand between a class's mention and its description: stop words ("the box
    *that's* nearest") and at most two other words, the rest of a compound name and an adverb ("storage
    *unit right* by"), but no clause break."""
    said = re.findall(r"[a-z]+", gap)
    if _BREAK.search(gap) or words.said_spans(gap, (*words.clause_words, *words.destination_words)):
        return False
    return sum(1 for w in said if len(w) > 1 and w not in words.stop) <= 2


def widen_to_descriptions(
    sketch: str,
    instruction: str,
    mentions: Callable[[str], Sequence[str]],
    words: Words,
    *,
    layers: Sequence[str] = (),
) -> tuple[str, list[str], dict[str, str]]:
    """``sketch`` with each ``[class]`` the instruction goes on to describe widened to the description ("the
    storage unit in the hallway that connects to the lounge": ``[storage]`` -> ``[storage unit in the hallway
    that connects to the lounge]``, which the QA pipeline then answers); a note per change, and each widened
    phrase -> the class it was.

    The description opens with one of the language's ``description_openers`` right after the class's first
    mention (``mentions``: the words that name it in the instruction) and ends at punctuation, a
    ``clause_words`` word (or a ``destination_words`` word, where the atom has a destination: "over to P12"),
    or before another argument of the same atom (a destination: "put the box in R3");
    trailing stop and ``layers`` words go then. A bracket that copies the instruction's description, or a
    description of nothing but stop words, is left as it is; one that says a description in the model's own
    words ("[storage in bed]") is widened from its head class. A bracket the instruction mentions only inside
    another's description ("the hallway that has *the light* in it") names no target: its atoms go, while
    something positive is left."""
    tree = _parsed(sketch)
    if tree is None:
        return sketch, [], {}
    atoms: list[list] = []

    def collect(node: object) -> None:
        if isinstance(node, list) and node:
            if all(not isinstance(c, list) for c in node[1:]) and len(node) > 1:
                atoms.append(node)
            for child in node[1:]:
                collect(child)

    collect(tree)
    brackets = list(dict.fromkeys(str(a) for atom in atoms for a in atom[1:] if str(a).startswith("[")))
    low = instruction.lower()

    def spans_of(token: str) -> list[tuple[int, int]]:
        if not token.startswith("["):
            return words.said_spans(instruction, [token])
        return words.said_spans(instruction, _names_of(token, mentions))

    changed: dict[str, str] = {}
    heads: dict[str, str] = {}  # token -> the bracket naming its class
    described: dict[str, tuple[int, int]] = {}  # token -> where its description lies in the instruction
    notes: list[str] = []
    for token in brackets:
        inner = token[1:-1].strip()
        if not inner or ont.has_symbol_shape(inner):
            continue
        spots = words.said_spans(inner, words.description_openers)
        if any(ont.has_symbol_shape(w) for w in inner[: spots[0][0] if spots else None].split()):
            continue  # "[hallway R5]": a symbol names the node, nothing after it can narrow it ("by way of R3")
        named = token
        if words.says(inner, words.description_openers):
            # the model's own words for a description ("[storage in bed]" for "storage unit right by the
            # bed"): its head is widened to what the instruction says; a description copied as said stays
            cut = words.said_spans(inner, words.description_openers)[0][0]
            head, said = inner[:cut].strip(), " ".join(inner[cut:].lower().split())
            if not head or said in " ".join(low.split()):
                continue  # "[seating in R5]" for "the chairs in R5": the description as said
            named = f"[{head}]"
        own = sorted(spans_of(named), key=lambda span: (span[0], -span[1]))  # the longest first mention
        if not own:
            continue
        end = own[0][1]
        rest = low[end:]
        opener = words.said_spans(rest, words.description_openers)
        if not opener or not _head_gap(rest[: opener[0][0]], words):
            continue
        stop = len(rest)
        if (m := _BREAK.search(rest)) is not None:
            stop = m.start()
        partners = {str(a) for atom in atoms if token in atom[1:] for a in atom[1:] if str(a) != token}
        ending = (*words.clause_words, *(words.destination_words if partners else ()))
        stop = min([stop, *(s for s, _ in words.said_spans(rest, ending) if s >= opener[0][1])])
        others = [s - end for t in partners for s, _ in spans_of(t) if s >= end + opener[0][1]]
        # the description as said (symbols keep their case: "hallway R4"), where lower-casing kept positions
        said_rest = instruction[end:] if len(instruction) == len(low) else rest
        if others and min(others) < stop:  # a destination follows: "the box nearest the bag over to P12"
            stop = min(others)
            tail = said_rest[:stop].split()
            drop = {*words.stop, *(w for layer in layers for w in layer.lower().split())}
            while tail and tail[-1].strip("'").lower() in drop:
                tail.pop()
        else:
            tail = said_rest[:stop].split()
        if len(tail) > 1 and _goal_participle(tail[-1], words):
            tail.pop()  # the instruction's own verb after it: "the hallway that has the box in it *inspected*"
        description = " ".join(tail)
        referent = _antecedent(instruction[: own[0][0]], said_rest[opener[0][1] : stop], words)
        if referent is not None:  # "the trash cans in it" after "head into hallway R2": in R2
            description = re.sub(r"\S+(?=\W*$)", referent, description, count=1)
        content = [w for w in re.findall(r"[a-z0-9]+", description.lower()) if w not in words.stop]
        if not content or not words.said_spans(description, words.description_openers):
            continue
        if any(start == 0 for start, _ in words.said_spans(description, words.via_words)):
            continue  # "the lounge on the way there": where it is passed, not which one
        if all(words.said_spans(w, list(words.layer_words)) for w in content):
            continue  # "every hallway on the floor": a layer's name alone describes no one node
        widened = f"[{instruction[own[0][0] : end]} {description}]"
        if widened in changed.values() or widened in brackets:
            continue  # two brackets the model kept apart stay apart ("every hallway except the one with ...")
        changed[token] = widened
        heads[token] = named
        described[token] = (end, end + stop)
        notes.append(f"{token} -> {widened}: the instruction describes which")
    if not changed:
        return sketch, [], {}
    inside = {
        token
        for token in brackets
        if (spans := spans_of(token))
        and all(any(a <= s and e <= b for t, (a, b) in described.items() if t != token) for s, e in spans)
    }

    def swap(node: object) -> object:
        if isinstance(node, list):
            return [swap(c) for c in node]
        return changed.get(str(node), node)

    def about_inside(node: object) -> bool:
        if isinstance(node, list) and node and str(node[0]).lower() == "not" and len(node) == 2:
            node = node[1]
        return isinstance(node, list) and node in atoms and any(str(a) in inside for a in node[1:])

    def prune(node: object) -> object:
        if not isinstance(node, list) or not node or str(node[0]).lower() not in ("and", "or", "all", "any"):
            return node
        kept = [prune(c) for c in node[1:] if not about_inside(c)]
        kept = [c for c in kept if c is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 and str(node[0]).lower() in ("and", "or") else [node[0], *kept]

    pruned = prune(tree) if inside else tree
    if pruned is None or not _has_positive(pruned):
        pruned = tree
    elif pruned != tree:
        notes.append(
            f"{', '.join(sorted(inside))} dropped: the instruction names {'it' if len(inside) == 1 else 'them'} "
            "only to describe something else"
        )
    return (
        _unparse(swap(pruned)),
        notes,
        {new[1:-1]: heads[old][1:-1].strip() for old, new in changed.items()},
    )


def widen_to_layer_heads(
    sketch: str,
    instruction: str,
    domain: GoalDomain,
    mentions: Callable[[str], Sequence[str]],
    words: Words,
    labels_of: Callable[[str], Collection[str]] = lambda _: (),
) -> tuple[str, list[str], dict[str, str]]:
    """``sketch`` with a ``[class]`` that the instruction names as what a node of another layer holds
    widened to that node ("wait at the mesh place the bicycle sits on": ``[bicycle]`` -> ``[mesh place the
    bicycle sits on]``, which the QA pipeline then answers): a ``layer_words`` phrase of another layer than
    the class's (``labels_of``) said before the class's first mention in its part, with at most three
    stop words or ``description_openers`` between. The phrase runs to punctuation, a ``clause_words`` word
    or the part's end; a predicate of a family takes the member for that layer's kind (``at-object`` ->
    ``at-place``). Returns the sketch, a note per change, and each widened phrase -> the class it was."""
    tree = _parsed(sketch)
    if tree is None:
        return sketch, [], {}
    brackets = list(dict.fromkeys(t for t in _TOKEN.findall(sketch) if t.startswith("[")))
    layers = sorted(words.layer_words, key=len, reverse=True)
    gap_words = {*words.stop, *(w for opener in words.description_openers for w in opener.split())}
    changed: dict[str, str] = {}
    kinds: dict[str, str | None] = {}  # token -> the domain kind of the layer that holds it
    notes: list[str] = []
    for token in brackets:
        inner = token[1:-1].strip()
        if not inner or ont.has_symbol_shape(inner) or words.said_spans(inner, layers):
            continue
        own = words.said_spans(instruction, _names_of(token, mentions))
        if not own:
            continue
        start, end = own[0]
        part = next(((a, b) for a, b in instruction_parts(instruction, words) if a <= start < b), None)
        if part is None:
            continue
        heads = words.said_spans(instruction[part[0] : start], layers)
        if not heads:
            continue
        last = max(heads, key=lambda span: (span[1], -span[0]))  # the longest of the last: "mesh place"
        head_start, head_end = part[0] + last[0], part[0] + last[1]
        head = instruction[head_start:head_end].lower()
        labels = set(words.layer_words.get(head) or words.layer_words.get(head.rstrip("s")) or ())
        gap = _WORD.findall(instruction[head_end:start].lower())
        if not labels or labels & set(labels_of(inner)) or len(gap) > 3 or not set(gap) <= gap_words:
            continue
        rest = instruction[end : part[1]]
        stop = len(rest)
        if (m := _BREAK.search(rest)) is not None:
            stop = m.start()
        stop = min([stop, *(s for s, _ in words.said_spans(rest, words.clause_words))])
        widened = "[" + " ".join(instruction[head_start : end + stop].split()) + "]"
        kinds[token] = next((k for k, spec in domain.kinds.items() if set(spec.labels) & labels), None)
        changed[token] = widened
        notes.append(f"{token} -> {widened}: the instruction names the {head} that holds it")
    if not changed:
        return sketch, [], {}

    def swap(node: object) -> object:
        if not isinstance(node, list) or not node:
            return changed.get(str(node), node)
        head = str(node[0]).lower()
        if len(node) == 2 and str(node[1]) in changed and (kind := kinds[str(node[1])]) is not None:
            member = domain.family_member(head, kind) if domain.family_of(head) else None
            return [member or node[0], changed[str(node[1])]]
        return [swap(c) for c in node]

    return _unparse(swap(tree)), notes, {w[1:-1]: t[1:-1] for t, w in changed.items()}


def _has_positive(node: object) -> bool:
    """Whether ``node`` asks for something (an atom not under ``not``)."""
    if not isinstance(node, list) or not node:
        return False
    head = str(node[0]).lower()
    if head == "not":
        return False
    if all(not isinstance(c, list) for c in node[1:]):
        return True
    return any(_has_positive(c) for c in node[1:])


def only_negations(sketch: str, domain: GoalDomain) -> bool:
    """Whether every part ``sketch`` asks for is a negation: such a goal holds before the robot moves."""
    tree = _parsed(sketch)
    return tree is not None and _keys(tree, domain) == {"not"}


def _drop_contained(
    parts: list[str], domain: GoalDomain, holders: Holders, own: Collection[str] = ()
) -> list[str]:
    """In a conjunction, ``(visited-room R)`` is implied by visiting (or reaching) something R holds, and
    ``(in-room R)`` by ending at something R holds: the robot cannot reach a node without entering what
    contains it ("visit the signs in R5" is the signs, not the signs and R5). An atom in ``own`` (asked for
    on its own: "visit the lounge, then wait by the bag") stays."""
    visits = set(domain.implies.values())
    ends = set(domain.implies)
    out = []
    for i, part in enumerate(parts):
        m = _ATOM.fullmatch(part)
        if m and (m.group(1) in visits or m.group(1) in ends) and part not in own:
            kind = domain.predicates[m.group(1)][0]

            def reaches(other: str, m: re.Match[str] = m, kind: str = kind) -> bool:
                inner = [  # only going to a node reaches what holds it (inspecting or holding it may not)
                    a.group(2)
                    for a in _ATOM.finditer(other)
                    if a.group(1) in visits | ends
                    and (m.group(1) in visits or a.group(1) in ends)
                    and domain.predicates.get(a.group(1), ())[:1] != (kind,)
                ]
                if not inner or other.startswith("(not"):
                    return False
                if other.startswith("(or"):  # every branch must lie inside
                    return all(m.group(2) in holders([a], kind) for a in inner)
                return m.group(2) in holders(inner, kind)

            if any(reaches(other) for j, other in enumerate(parts) if j != i):
                continue
        out.append(part)
    return out or parts


def _product(options: list[list[str]]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for opts in options:
        out = [[*prefix, o] for prefix in out for o in opts]
    return out


def sketch_grammar(domain: GoalDomain, symbols: dict[str, list[str]] | None = None) -> Grammar:
    """The grammar of a goal-sketch reply, ``Goal: <sketch>`` (and optionally a ``Cypher:`` line), over
    ``domain``'s predicates with their arities and argument kinds: each argument is a symbol of its kind
    (``symbols``: kind -> the graph's symbols; a symbol shape when a kind lists none), a bracketed phrase or
    a ``?variable``. A local model decoding under it always writes a sketch that parses."""
    from scenerag.lang.gbnf import Chars, Ref, Rep, alt, one_of, opt, plus, seq

    symbols = symbols or {}
    sp = Ref("sp")
    rules: dict[str, Node] = {
        "sp": Chars(" "),
        # words, not a goal: a phrase holds no parentheses ("[seating in (all ...)]" cannot be written)
        "phrase": seq("[", plus(Chars("^\\]\\n[()")), "]"),
        "var": seq("?", plus(Chars("a-z_0-9"))),
        "goal": alt(
            Ref("atom"),
            # a bounded number of parts: a small model may otherwise repeat one until the token limit
            seq("(", alt("and", "or", "all", "any"), Rep(seq(sp, Ref("goal")), 1, MAX_PARTS), ")"),
            seq("(not", sp, Ref("goal"), ")"),
        ),
        "cypher": plus(Chars("^\\n")),
        "root": seq("Goal: ", Ref("goal"), opt(seq("\n", "Cypher: ", Ref("cypher")))),
    }
    for kind, spec in domain.kinds.items():
        listed = sorted(set(symbols.get(kind, ())))
        prefixes = spec.symbol_prefixes
        shape = seq(alt(*prefixes) if prefixes else Chars("A-Za-z"), plus(Chars("0-9")))
        rules[f"arg-{kind}"] = alt(one_of(listed) if listed else shape, Ref("phrase"), Ref("var"))
    atoms = []
    for predicate, kinds in domain.predicates.items():
        atoms.append(seq("(", predicate, *(seq(sp, Ref(f"arg-{k}")) for k in kinds), ")"))
    rules["atom"] = alt(*atoms)
    return Grammar(rules)
