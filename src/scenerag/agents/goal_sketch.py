"""Goal sketches: PDDL goals whose arguments may still name *what* rather than *which*.

A small model is good at the goal's skeleton and bad at copying a dozen symbols; so it writes a sketch and
the symbols are filled in from the database:

* ``O43``, ``R2``: a node symbol (checked to exist);
* ``[bicycle]``: every node whose ``class`` is that value (of the kind the predicate expects: an object
  for ``holding``, a room for ``visited-room``; synonyms go through the entity linker);
* ``?x``: the values of column ``x`` of the sketch's Cypher query.

An atom whose argument has several values expands to ``(or ...)`` (any one will do: "grab a wastebin"),
to ``(and ...)`` inside ``(all ...)`` or when the instruction names the class in the plural ("visit the
hallways"), and under ``not`` to ``(and (not ...) ...)`` (avoid every one). Problems (an unknown class, a query with no rows) are reported, not guessed around.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from scenerag.lang.gbnf import Grammar, Node
from scenerag.lang.pddl_goal import GoalDomain

__all__ = ["SketchError", "SketchResult", "resolve_sketch", "sketch_grammar"]

_TOKEN = re.compile(r"\(|\)|\[[^\]]*\]|[^\s()\[\]]+")


class SketchError(ValueError):
    """A sketch that cannot be resolved; the message is phrased for the model to fix."""


@dataclass
class SketchResult:
    goal: str
    notes: list[str] = field(default_factory=list)


Resolver = Callable[[str, str], list[str]]
"""``(class text, node kind)`` -> the symbols of nodes of that kind with that class (empty: none)."""


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
) -> SketchResult:
    """The concrete PDDL goal of ``sketch``; raises :class:`SketchError` with a fixable message."""
    tree = _parse(sketch.strip())
    bindings = bindings or {}
    notes: list[str] = []

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
            found = classes(name, kind)
            if not found:
                raise SketchError(f"[{name}] names no {kind} of the graph")
            if len(found) > 1:
                notes.append(f"[{name}] is {', '.join(found)}")
            return found
        return [arg]

    def expand(node: object, mode: str) -> str:
        if not isinstance(node, list) or not node:
            raise SketchError(f"expected a parenthesised expression, got {node!r}")
        head = str(node[0]).lower()
        if head in ("and", "or"):
            parts = [expand(c, mode) for c in node[1:]]
            if head == "and":
                parts = _drop_implied(parts)
            return parts[0] if len(parts) == 1 else f"({head} " + " ".join(parts) + ")"
        if head == "not":
            if len(node) != 2:
                raise SketchError("(not ...) takes one expression")
            return expand(node[1], "not")
        if head in ("all", "every", "forall"):
            return (
                " ".join(expand(c, "all") for c in node[1:])
                if len(node) == 2
                else "(and " + " ".join(expand(c, "all") for c in node[1:]) + ")"
            )
        if head in ("any", "some", "exists"):
            return (
                " ".join(expand(c, "any") for c in node[1:])
                if len(node) == 2
                else "(or " + " ".join(expand(c, "any") for c in node[1:]) + ")"
            )
        kinds = domain.predicates.get(head)
        if kinds is None:
            raise SketchError(f"unknown predicate {head}; use one of {', '.join(sorted(domain.predicates))}")
        args = [str(a) for a in node[1:]]
        if len(args) != len(kinds):
            raise SketchError(f"({head} ...) takes {len(kinds)} argument(s), got {len(args)}")
        options = [values(a, k) for a, k in zip(args, kinds, strict=True)]
        if mode == "any" and plural is not None and any(a.startswith("[") and plural(a[1:-1]) for a in args):
            mode = "all"  # "visit the hallways": every one of them
        atoms = [f"({head} {' '.join(combo)})" for combo in _product(options)]
        if mode == "not":
            atoms = [f"(not {a})" for a in atoms]
            return atoms[0] if len(atoms) == 1 else "(and " + " ".join(atoms) + ")"
        if len(atoms) == 1:
            return atoms[0]
        return ("(and " if mode == "all" else "(or ") + " ".join(atoms) + ")"

    return SketchResult(expand(tree, "any"), notes)


_IMPLIED = {"at-place": "visited-place", "at-object": "visited-object", "in-room": "visited-room"}


def _drop_implied(parts: list[str]) -> list[str]:
    """In a conjunction, ``(visited-place P)`` is implied by ``(at-place P)`` (ending somewhere visits it)."""
    implied = set()
    for p in parts:
        m = re.fullmatch(r"\(([\w-]+) (\S+)\)", p)
        if m and m.group(1) in _IMPLIED:
            implied.add(f"({_IMPLIED[m.group(1)]} {m.group(2)})")
    return [p for p in parts if p not in implied] or parts


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
    from scenerag.lang.gbnf import Chars, Ref, alt, one_of, opt, plus, seq

    symbols = symbols or {}
    sp = Ref("sp")
    rules: dict[str, Node] = {
        "sp": Chars(" "),
        "phrase": seq("[", plus(Chars("^\\]\\n[")), "]"),
        "var": seq("?", plus(Chars("a-z_0-9"))),
        "goal": alt(
            Ref("atom"),
            seq("(", alt("and", "or", "all", "any"), plus(seq(sp, Ref("goal"))), ")"),
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
