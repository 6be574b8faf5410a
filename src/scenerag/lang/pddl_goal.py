"""PDDL goal formulas of the Heracles domain: parse, validate, compare by logical equivalence, format.

A goal is a tree of :class:`Atom` (``(visited-place P12)``), :class:`Not`, :class:`And`, :class:`Or`,
:class:`Imply` and :class:`Constant`. Predicate names and connectives are case-insensitive (stored
lower-case); symbols keep their spelling. Two goals are equivalent when they accept exactly the same
states: :func:`goals_equivalent` Tseitin-encodes ``a XOR b`` to CNF and asks a SAT solver (python-sat's
MiniSat 2.2, or sympy's DPLL when python-sat is missing) for a state that tells them apart.
"""

from __future__ import annotations

import difflib
import importlib.util
import random
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeAlias

from scenerag.errors import SceneRagError
from scenerag.lang.sldp import caret_excerpt

if TYPE_CHECKING:
    from scenerag.graph.model import SceneGraph

MAX_NESTING = 100  # parse limit; real goals nest a handful of levels
SatBackend: TypeAlias = Literal["auto", "pysat", "sympy"]

_PREDICATE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")
_TOKEN = re.compile(r"[^\s();]+")
_UNSUPPORTED = frozenset(
    {
        "exists",
        "forall",
        "when",
        "preference",
        "always",
        "sometime",
        "within",
        "at-most-once",
        "sometime-after",
        "sometime-before",
        "always-within",
        "hold-during",
        "hold-after",
    }
)
_CONNECTIVES = ("and", "or", "not", "imply")


class GoalParseError(SceneRagError):
    """A goal that does not parse (or breaks the domain): carries the 0-based ``position`` and an excerpt."""

    def __init__(self, reason: str, text: str, position: int) -> None:
        self.reason = reason
        self.text = text
        self.position = position
        self.excerpt = caret_excerpt(text, position)
        super().__init__(f"PDDL goal error at position {position}: {reason}\n{self.excerpt}")


# ---------------------------------------------------------------------------------------------------
# Goal tree


@dataclass(frozen=True)
class Atom:
    """``(predicate arg...)``; a bare ``?name`` is a propositional variable (predicate ``?name``, no args)."""

    predicate: str
    args: tuple[str, ...] = ()
    position: int = field(default=-1, compare=False, repr=False)

    def __post_init__(self) -> None:
        valid_name = _PREDICATE_NAME.fullmatch(self.predicate) or (
            self.predicate.startswith("?") and _TOKEN.fullmatch(self.predicate) and not self.args
        )
        if not valid_name:
            raise SceneRagError(f"invalid goal predicate {self.predicate!r}", hint="e.g. visited-place")
        bad = [a for a in self.args if not isinstance(a, str) or not _TOKEN.fullmatch(a)]
        if bad:
            raise SceneRagError(
                f"invalid symbols {bad!r} in ({self.predicate} ...)",
                hint="symbols contain no spaces, parentheses or ';'",
            )

    @property
    def is_variable(self) -> bool:
        return self.predicate.startswith("?")


@dataclass(frozen=True)
class Not:
    """``(not g)``."""

    operand: Goal
    position: int = field(default=-1, compare=False, repr=False)


@dataclass(frozen=True)
class And:
    """``(and g...)``; the empty conjunction is true."""

    operands: tuple[Goal, ...]
    position: int = field(default=-1, compare=False, repr=False)


@dataclass(frozen=True)
class Or:
    """``(or g...)``; the empty disjunction is false."""

    operands: tuple[Goal, ...]
    position: int = field(default=-1, compare=False, repr=False)


@dataclass(frozen=True)
class Imply:
    """``(imply a b)``: ``(or (not a) b)``."""

    antecedent: Goal
    consequent: Goal
    position: int = field(default=-1, compare=False, repr=False)


@dataclass(frozen=True)
class Constant:
    """``true`` / ``false``."""

    value: bool
    position: int = field(default=-1, compare=False, repr=False)


Goal: TypeAlias = Atom | Not | And | Or | Imply | Constant
AtomKey: TypeAlias = tuple[str, tuple[str, ...]]


def atom_key(atom: Atom, *, case_sensitive_symbols: bool = False) -> AtomKey:
    """Identity of an atom for equivalence: predicate lower-case, symbols case-folded unless asked not to."""
    args = atom.args if case_sensitive_symbols else tuple(a.casefold() for a in atom.args)
    return (atom.predicate.lower(), args)


def _children(goal: Goal) -> tuple[Goal, ...]:
    if isinstance(goal, Not):
        return (goal.operand,)
    if isinstance(goal, And | Or):
        return goal.operands
    if isinstance(goal, Imply):
        return (goal.antecedent, goal.consequent)
    return ()


def iter_atoms(goal: Goal) -> Iterator[Atom]:
    """Every atom occurrence of ``goal``, left to right."""
    stack: list[Goal] = [goal]
    while stack:
        node = stack.pop()
        if isinstance(node, Atom):
            yield node
        else:
            stack.extend(reversed(_children(node)))


# ---------------------------------------------------------------------------------------------------
# Domain


@dataclass(frozen=True)
class ArgumentKind:
    """A parameter type of the domain and the scene-graph nodes that may fill it."""

    name: str
    labels: tuple[str, ...]
    symbol_prefixes: tuple[str, ...]

    def accepts_label(self, label: str) -> bool:
        return label in self.labels

    def looks_like(self, symbol: str) -> bool:
        """True when ``symbol`` starts with one of the kind's symbol letters (case-insensitive)."""
        return bool(symbol) and symbol[0].upper() in {p.upper() for p in self.symbol_prefixes}

    def describe(self) -> str:
        labels = " or ".join(self.labels)
        article = "an" if self.name[:1].lower() in "aeiou" else "a"
        return f"{article} {self.name} ({labels}, symbols {'/'.join(p + '…' for p in self.symbol_prefixes)})"


@dataclass(frozen=True)
class GoalDomain:
    """Goal predicates (name -> parameter kind names, in order) with the kinds' scene-graph labels."""

    name: str
    predicates: Mapping[str, tuple[str, ...]]
    kinds: Mapping[str, ArgumentKind]
    descriptions: Mapping[str, str] = field(default_factory=dict)
    families: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Predicates that say one thing of different kinds (``visited`` -> ``{place: visited-place, ...}``)."""
    implies: Mapping[str, str] = field(default_factory=dict)
    """Unary predicates whose truth implies another's of the same argument (``at-place`` -> ``visited-place``)."""
    reached_at: Mapping[str, str] = field(default_factory=dict)
    """Unary predicates only an action at a node makes true, and the visit that implies (``safe`` ->
    ``visited-object``: inspecting needs the robot at the object); a goal asking for both asks for the first."""
    step_towards: Mapping[str, str] = field(default_factory=dict)
    """Unary predicates that are a step towards a relation of their argument (``holding`` ->
    ``object-in-place``: an object is picked up to be put somewhere, and is no longer held once put); a goal
    asking for both asks for the relation."""

    def __post_init__(self) -> None:
        predicates = {p.lower(): tuple(k) for p, k in self.predicates.items()}
        for predicate, params in predicates.items():
            if not _PREDICATE_NAME.fullmatch(predicate):
                raise SceneRagError(f"domain {self.name}: invalid predicate name {predicate!r}")
            missing = [k for k in params if k not in self.kinds]
            if missing:
                raise SceneRagError(
                    f"domain {self.name}: predicate {predicate} uses undefined argument kinds {missing}",
                    hint=f"define them in kinds (known: {sorted(self.kinds)})",
                )
        object.__setattr__(self, "predicates", MappingProxyType(predicates))
        object.__setattr__(self, "kinds", MappingProxyType(dict(self.kinds)))
        descriptions = {p.lower(): d for p, d in self.descriptions.items()}
        object.__setattr__(self, "descriptions", MappingProxyType(descriptions))
        families = {
            f: MappingProxyType({k: p.lower() for k, p in m.items()}) for f, m in self.families.items()
        }
        object.__setattr__(self, "families", MappingProxyType(families))
        for family, members in families.items():
            for kind, predicate in members.items():
                if predicates.get(predicate.lower()) != (kind,):
                    raise SceneRagError(
                        f"domain {self.name}: family {family} maps {kind} to {predicate}, "
                        f"which is not a unary predicate over {kind}"
                    )
        for a, b in {**self.implies, **self.reached_at}.items():
            if predicates.get(a.lower()) is None or predicates.get(a.lower()) != predicates.get(b.lower()):
                raise SceneRagError(f"domain {self.name}: {a} implies {b}, but their parameters differ")

    def family_member(self, predicate: str, kind: str) -> str | None:
        """The predicate of ``predicate``'s family that takes ``kind`` (``visited-room`` + place ->
        ``visited-place``); None when ``predicate`` is in no family or the family has no such member."""
        family = self.family_of(predicate)
        return None if family is None else self.families[family].get(kind)

    def family_of(self, predicate: str) -> str | None:
        """The family ``predicate`` belongs to (None: none)."""
        return next(
            (f for f, members in self.families.items() if predicate.lower() in members.values()), None
        )

    def kind_of_symbol(self, symbol: str) -> str | None:
        """The kind whose symbol letters ``symbol`` starts with (None: no kind, or several)."""
        found = [k.name for k in self.kinds.values() if k.looks_like(symbol)]
        return found[0] if len(found) == 1 else None

    def arity(self, predicate: str) -> int | None:
        params = self.predicates.get(predicate.lower())
        return None if params is None else len(params)

    def parameter_kinds(self, predicate: str) -> tuple[ArgumentKind, ...]:
        return tuple(self.kinds[k] for k in self.predicates[predicate.lower()])

    def signature(self, predicate: str) -> str:
        """``(object-in-place ?o - object ?p - place)``."""
        params = self.predicates[predicate.lower()]
        parts = [f"?{k[0]}{i + 1 if params.count(k) > 1 else ''} - {k}" for i, k in enumerate(params)]
        return "(" + " ".join([predicate.lower(), *parts]) + ")"

    def kind_of_label(self, label: str) -> ArgumentKind | None:
        return next((k for k in self.kinds.values() if k.accepts_label(label)), None)

    def describe(self) -> str:
        """The domain as prompt text: one line per predicate, then the connectives."""
        lines = [f"PDDL goal predicates ({self.name}):"]
        for predicate in self.predicates:
            description = self.descriptions.get(predicate, "")
            lines.append(f"  {self.signature(predicate)}" + (f": {description}" if description else ""))
        lines.append("Combine them with (and ...), (or ...), (not ...). Arguments are scene-graph symbols:")
        lines.extend(f"  {kind.name}: {kind.describe()}" for kind in self.kinds.values())
        return "\n".join(lines)


HERACLES_KINDS: Mapping[str, ArgumentKind] = {
    "place": ArgumentKind("place", ("Place", "MeshPlace"), ("P",)),
    "object": ArgumentKind("object", ("Object",), ("O",)),
    "room": ArgumentKind("room", ("Room",), ("R",)),
}

HERACLES_DOMAIN = GoalDomain(
    name="heracles",
    predicates={
        "visited-place": ("place",),
        "at-place": ("place",),
        "visited-object": ("object",),
        "at-object": ("object",),
        "safe": ("object",),
        "visited-room": ("room",),
        "in-room": ("room",),
        "holding": ("object",),
        "object-in-place": ("object", "place"),
    },
    kinds=HERACLES_KINDS,
    descriptions={
        "visited-place": "the robot visits the place at some point",
        "at-place": "the robot ends at the place",
        "visited-object": "the robot visits the object at some point",
        "at-object": "the robot ends at the object",
        "safe": "the robot has inspected the object",
        "visited-room": "the robot visits the room at some point",
        "in-room": "the robot ends in the room",
        "holding": "the robot holds (has picked up) the object",
        "object-in-place": "the object ends located in the place (use it for moving objects)",
    },
    families={
        "visited": {"place": "visited-place", "object": "visited-object", "room": "visited-room"},
        "ends-at": {"place": "at-place", "object": "at-object", "room": "in-room"},
    },
    implies={"at-place": "visited-place", "at-object": "visited-object", "in-room": "visited-room"},
    reached_at={"safe": "visited-object", "holding": "visited-object"},
    step_towards={"holding": "object-in-place"},
)
"""The Heracles paper's goal domain (heracles_agents ``pddl_domain_description.yaml``); ``safe`` is unary."""


# ---------------------------------------------------------------------------------------------------
# Parsing


@dataclass
class _Token:
    text: str
    start: int


@dataclass
class _SList:
    items: list[_Token | _SList]
    start: int


def _read_sexpr(text: str) -> _Token | _SList:
    """One s-expression (iteratively, so nesting depth cannot overflow the stack); ``;`` starts a comment."""
    stack: list[_SList] = []
    top: list[_Token | _SList] = []
    pos, n = 0, len(text)
    while pos < n:
        ch = text[pos]
        if ch.isspace():
            pos += 1
        elif ch == ";":
            while pos < n and text[pos] != "\n":
                pos += 1
        elif ch == "(":
            stack.append(_SList([], pos))
            pos += 1
        elif ch == ")":
            if not stack:
                raise GoalParseError("unmatched ')'", text, pos)
            done = stack.pop()
            (stack[-1].items if stack else top).append(done)
            pos += 1
        else:
            start = pos
            while pos < n and not text[pos].isspace() and text[pos] not in "();":
                pos += 1
            (stack[-1].items if stack else top).append(_Token(text[start:pos], start))
        if not stack and len(top) > 1:
            if isinstance(top[0], _Token) and not top[0].text.startswith("?"):
                reason = f"expected '(' before {top[0].text!r}: atoms are written (predicate symbol...)"
                raise GoalParseError(reason, text, top[0].start)
            reason = "unexpected text after the goal: a goal is one expression"
            raise GoalParseError(reason, text, top[1].start)
    if stack:
        raise GoalParseError(
            f"unbalanced parentheses: {len(stack)} '(' never closed (the last one opened here)",
            text,
            stack[-1].start,
        )
    if not top:
        raise GoalParseError("empty goal: expected an expression such as (visited-place P1)", text, 0)
    return top[0]


class _GoalBuilder:
    """Turns the s-expression tree into a goal tree, checking connectives and (optionally) the domain."""

    def __init__(self, text: str, domain: GoalDomain | None) -> None:
        self.text = text
        self.domain = domain

    def error(self, reason: str, position: int) -> GoalParseError:
        return GoalParseError(reason, self.text, position)

    def build(self, node: _Token | _SList, depth: int = 0) -> Goal:
        if depth > MAX_NESTING:
            raise self.error(f"goal nested more than {MAX_NESTING} deep", node.start)
        if isinstance(node, _Token):
            return self.bare(node)
        if not node.items:
            raise self.error("empty '()': expected a connective or a predicate", node.start)
        head = node.items[0]
        if isinstance(head, _SList):
            raise self.error("expected a connective or a predicate name after '('", head.start)
        name = head.text.lower()
        rest = node.items[1:]
        if name == ":goal":
            if depth != 0:
                raise self.error("(:goal ...) may only wrap the whole goal", node.start)
            if len(rest) != 1:
                raise self.error(f"(:goal ...) takes one expression, found {len(rest)}", node.start)
            return self.build(rest[0], depth)
        if name in ("and", "or"):
            operands = tuple(self.build(child, depth + 1) for child in rest)
            return And(operands, node.start) if name == "and" else Or(operands, node.start)
        if name == "not":
            if len(rest) != 1:
                raise self.error(f"(not ...) takes exactly one expression, found {len(rest)}", node.start)
            return Not(self.build(rest[0], depth + 1), node.start)
        if name == "imply":
            if len(rest) != 2:
                raise self.error(f"(imply a b) takes exactly two expressions, found {len(rest)}", node.start)
            return Imply(self.build(rest[0], depth + 1), self.build(rest[1], depth + 1), node.start)
        if name in _UNSUPPORTED:
            raise self.error(
                f"'{name}' is not supported: ground the goal to concrete symbols with and/or/not", head.start
            )
        nested = next((item for item in rest if isinstance(item, _SList)), None)
        if nested is not None:
            if (self.domain or HERACLES_DOMAIN).arity(name) is not None:
                raise self.error(f"arguments of {name} must be symbols, not expressions", nested.start)
            raise self.error(
                f"unknown connective '{head.text}': combine goals with {', '.join(_CONNECTIVES)}", head.start
            )
        return self.atom(head, [item for item in rest if isinstance(item, _Token)], node.start)

    def bare(self, token: _Token) -> Goal:
        lowered = token.text.lower()
        if lowered in ("true", "false"):
            return Constant(lowered == "true", token.start)
        if token.text.startswith("?") and len(token.text) > 1:
            return Atom(token.text, (), token.start)
        raise self.error(
            f"expected '(' before {token.text!r}: atoms are written (predicate symbol...)", token.start
        )

    def atom(self, head: _Token, args: list[_Token], start: int) -> Atom:
        if not _PREDICATE_NAME.fullmatch(head.text):
            raise self.error(f"invalid predicate name {head.text!r}", head.start)
        predicate = head.text.lower()
        if self.domain is not None:
            arity = self.domain.arity(predicate)
            if arity is None:
                raise self.error(_unknown_predicate_message(predicate, self.domain), head.start)
            if arity != len(args):
                raise self.error(_arity_message(predicate, len(args), self.domain), start)
        return Atom(predicate, tuple(a.text for a in args), start)


def parse_goal(text: str, domain: GoalDomain | None = None) -> Goal:
    """Parse a goal, with or without a surrounding ``(:goal ...)``; raise :class:`GoalParseError`.

    Accepts ``and``/``or``/``not``/``imply`` (any case), atoms ``(pred sym...)``, ``true``/``false`` and
    bare ``?x`` propositional variables. With ``domain``, unknown predicates and wrong arities are errors.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_goal expects str, got {type(text).__name__}")
    return _GoalBuilder(text, domain).build(_read_sexpr(text))


def as_goal(goal: Goal | str, domain: GoalDomain | None = None) -> Goal:
    """``goal`` itself, or the parse of goal text."""
    return parse_goal(goal, domain) if isinstance(goal, str) else goal


def _unknown_predicate_message(predicate: str, domain: GoalDomain) -> str:
    close = difflib.get_close_matches(predicate, list(domain.predicates), n=2, cutoff=0.6)
    suggestion = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown predicate '{predicate}'{suggestion} (known: {', '.join(domain.predicates)})"


def _arity_message(predicate: str, found: int, domain: GoalDomain) -> str:
    arity = domain.arity(predicate)
    plural = "" if arity == 1 else "s"
    return f"{predicate} takes {arity} argument{plural} {domain.signature(predicate)}, found {found}"


# ---------------------------------------------------------------------------------------------------
# Formatting and inspection


def _format_atom(atom: Atom) -> str:
    if atom.is_variable and not atom.args:
        return atom.predicate
    return "(" + " ".join([atom.predicate.lower(), *atom.args]) + ")"


def format_goal(goal: Goal | str, *, sort_operands: bool = False) -> str:
    """Canonical PDDL text: lower-case connectives and predicates, single spaces.

    With ``sort_operands`` the operands of ``and``/``or`` are sorted by their text and repeats dropped,
    so goals that differ only by operand order or repetition format identically.
    """
    goal = as_goal(goal)
    if isinstance(goal, Atom):
        return _format_atom(goal)
    if isinstance(goal, Constant):
        return "true" if goal.value else "false"
    if isinstance(goal, Not):
        return f"(not {format_goal(goal.operand, sort_operands=sort_operands)})"
    if isinstance(goal, Imply):
        a = format_goal(goal.antecedent, sort_operands=sort_operands)
        b = format_goal(goal.consequent, sort_operands=sort_operands)
        return f"(imply {a} {b})"
    parts = [format_goal(g, sort_operands=sort_operands) for g in goal.operands]
    if sort_operands:
        parts = sorted(set(parts))
    return "(" + " ".join(["and" if isinstance(goal, And) else "or", *parts]) + ")"


def goal_atoms(goal: Goal | str, *, case_sensitive_symbols: bool = False) -> list[Atom]:
    """Distinct atoms of ``goal`` in order of first appearance."""
    seen: set[AtomKey] = set()
    out: list[Atom] = []
    for atom in iter_atoms(as_goal(goal)):
        key = atom_key(atom, case_sensitive_symbols=case_sensitive_symbols)
        if key not in seen:
            seen.add(key)
            out.append(atom)
    return out


def goal_symbols(goal: Goal | str) -> set[str]:
    """Scene-graph symbols used as atom arguments (``?variables`` excluded), as written."""
    return {arg for atom in iter_atoms(as_goal(goal)) for arg in atom.args if not arg.startswith("?")}


# ---------------------------------------------------------------------------------------------------
# Validation against the domain and the scene graph


ProblemCode: TypeAlias = Literal[
    "syntax", "unknown_predicate", "wrong_arity", "variable", "unknown_symbol", "wrong_symbol_kind"
]


@dataclass(frozen=True)
class GoalProblem:
    """One thing wrong with a goal, phrased for an LLM to fix: ``code`` is machine-readable."""

    code: ProblemCode
    message: str
    position: int = -1

    def __str__(self) -> str:
        return self.message


def symbol_labels(graph: SceneGraph) -> dict[str, str]:
    """``{symbol: label}`` of every node of ``graph``, the ``known_symbols`` of :func:`check_goal`."""
    return {node.symbol: node.label for node in graph.nodes()}


def check_goal(
    goal: Goal | str,
    domain: GoalDomain = HERACLES_DOMAIN,
    known_symbols: Mapping[str, str] | None = None,
) -> list[GoalProblem]:
    """Problems of ``goal`` against ``domain`` and the scene graph, empty when it is fine.

    ``known_symbols`` maps each scene-graph symbol to its label (``{"O12": "Object", "P3": "Place"}``);
    symbols must then exist (exact spelling; a case-only mismatch is reported with the right spelling)
    and have a label of the parameter's kind. Without it, symbols are checked by their first letter
    (place P…, object O…, room R…). Goal text that does not parse yields a single ``syntax`` problem.
    """
    try:
        parsed = as_goal(goal)
    except GoalParseError as exc:
        return [GoalProblem("syntax", str(exc), exc.position)]
    by_folded: dict[str, str] = {}
    if known_symbols is not None:
        for symbol in known_symbols:
            by_folded.setdefault(symbol.casefold(), symbol)
    problems: list[GoalProblem] = []
    seen: set[str] = set()

    def report(code: ProblemCode, message: str, position: int) -> None:
        if message not in seen:
            seen.add(message)
            problems.append(GoalProblem(code, message, position))

    for atom in iter_atoms(parsed):
        text = _format_atom(atom)
        if atom.is_variable and not atom.args:
            report(
                "variable",
                f"{text} is a variable, not a goal: use a predicate such as "
                f"{domain.signature(next(iter(domain.predicates)))}",
                atom.position,
            )
            continue
        arity = domain.arity(atom.predicate)
        if arity is None:
            report(
                "unknown_predicate",
                f"in {text}: {_unknown_predicate_message(atom.predicate, domain)}",
                atom.position,
            )
            continue
        if arity != len(atom.args):
            report(
                "wrong_arity",
                f"in {text}: {_arity_message(atom.predicate, len(atom.args), domain)}",
                atom.position,
            )
            continue
        for symbol, kind in zip(atom.args, domain.parameter_kinds(atom.predicate), strict=True):
            problem = _symbol_problem(atom, text, symbol, kind, domain, known_symbols, by_folded)
            if problem is not None:
                report(problem[0], problem[1], atom.position)
    return problems


def _symbol_problem(
    atom: Atom,
    text: str,
    symbol: str,
    kind: ArgumentKind,
    domain: GoalDomain,
    known_symbols: Mapping[str, str] | None,
    by_folded: Mapping[str, str],
) -> tuple[ProblemCode, str] | None:
    if symbol.startswith("?"):
        return ("variable", f"in {text}: {symbol} is a variable; name a concrete {kind.name} symbol instead")
    if known_symbols is None:
        if not kind.looks_like(symbol):
            return ("wrong_symbol_kind", f"in {text}: {symbol!r} does not look like {kind.describe()}")
        return None
    label = known_symbols.get(symbol)
    if label is None:
        spelled = by_folded.get(symbol.casefold())
        if spelled is not None:
            return ("unknown_symbol", f"in {text}: no node {symbol!r}; the scene graph spells it {spelled!r}")
        return (
            "unknown_symbol",
            f"in {text}: no node {symbol!r} in the scene graph (expected {kind.describe()})",
        )
    if kind.accepts_label(label):
        return None
    actual = domain.kind_of_label(label)
    suggestion = ""
    if actual is not None:
        renamed = atom.predicate.replace(kind.name, actual.name)
        if renamed != atom.predicate and domain.arity(renamed) == len(atom.args):
            suggestion = f"; did you mean ({renamed} {' '.join(atom.args)})?"
    return (
        "wrong_symbol_kind",
        f"in {text}: {symbol} is a {label}, but {atom.predicate} needs {kind.describe()}{suggestion}",
    )


# ---------------------------------------------------------------------------------------------------
# Logical equivalence


def _postorder(goal: Goal) -> list[Goal]:
    """Distinct nodes (by identity) of ``goal``, children before parents; iterative, so depth is unbounded."""
    order: list[Goal] = []
    visited: set[int] = set()
    stack: list[tuple[Goal, bool]] = [(goal, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in visited:
            continue
        children = _children(node)
        if expanded or not children:
            visited.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children) if id(child) not in visited)
    return order


class _TseitinEncoder:
    """CNF with one variable per distinct atom and one per and/or gate (sub-goals shared by identity)."""

    def __init__(self, case_sensitive_symbols: bool) -> None:
        self.case_sensitive_symbols = case_sensitive_symbols
        self.num_vars = 0
        self.clauses: list[list[int]] = []
        self.atom_vars: dict[AtomKey, int] = {}
        self.atoms_by_var: dict[int, Atom] = {}
        self._true_var: int | None = None

    def new_var(self) -> int:
        self.num_vars += 1
        return self.num_vars

    def true_literal(self) -> int:
        if self._true_var is None:
            self._true_var = self.new_var()
            self.clauses.append([self._true_var])
        return self._true_var

    def atom_literal(self, atom: Atom) -> int:
        key = atom_key(atom, case_sensitive_symbols=self.case_sensitive_symbols)
        var = self.atom_vars.get(key)
        if var is None:
            var = self.atom_vars[key] = self.new_var()
            self.atoms_by_var[var] = atom
        return var

    def gate(self, conjunction: bool, literals: list[int]) -> int:
        """Literal equivalent to the and/or of ``literals``."""
        distinct = list(dict.fromkeys(literals))
        if not distinct:
            return self.true_literal() if conjunction else -self.true_literal()
        if len(distinct) == 1:
            return distinct[0]
        present = set(distinct)
        if any(-lit in present for lit in distinct):  # x and not x / x or not x
            return -self.true_literal() if conjunction else self.true_literal()
        out = self.new_var()
        if conjunction:  # out <-> l1 & ... & ln
            self.clauses.extend([-out, lit] for lit in distinct)
            self.clauses.append([out, *(-lit for lit in distinct)])
        else:  # out <-> l1 | ... | ln
            self.clauses.append([-out, *distinct])
            self.clauses.extend([out, -lit] for lit in distinct)
        return out

    def literal(self, goal: Goal) -> int:
        """The literal that is true exactly when ``goal`` is, adding its gates' clauses."""
        lits: dict[int, int] = {}
        for node in _postorder(goal):
            if isinstance(node, Atom):
                lit = self.atom_literal(node)
            elif isinstance(node, Constant):
                lit = self.true_literal() if node.value else -self.true_literal()
            elif isinstance(node, Not):
                lit = -lits[id(node.operand)]
            elif isinstance(node, Imply):
                lit = self.gate(False, [-lits[id(node.antecedent)], lits[id(node.consequent)]])
            else:
                lit = self.gate(isinstance(node, And), [lits[id(child)] for child in node.operands])
            lits[id(node)] = lit
        return lits[id(goal)]


def _uses_pysat(backend: SatBackend) -> bool:
    if backend == "auto":
        return importlib.util.find_spec("pysat") is not None
    return backend == "pysat"


def _solve(clauses: list[list[int]], num_vars: int, backend: SatBackend) -> list[int] | None:
    """A satisfying assignment (signed literals) of the CNF, or None when it is unsatisfiable."""
    if backend in ("auto", "pysat"):
        try:
            from pysat.solvers import Minisat22
        except ImportError as exc:
            if backend == "pysat":
                raise SceneRagError(
                    "python-sat is not installed", hint="pip install 'scenerag[eval]' or use backend='sympy'"
                ) from exc
        else:
            with Minisat22(bootstrap_with=clauses) as solver:
                return list(solver.get_model() or []) if solver.solve() else None
    return _solve_with_sympy(clauses, num_vars)


def _solve_with_sympy(clauses: list[list[int]], num_vars: int) -> list[int] | None:
    """sympy's pure-Python DPLL with clause learning (much slower than MiniSat on large equivalent goals)."""
    from sympy.logic.algorithms.dpll2 import SATSolver

    variables = range(1, num_vars + 1)
    solver = SATSolver([set(c) for c in clauses], variables, set(), list(variables), clause_learning="simple")
    try:
        model = next(solver._find_model())
    except StopIteration:
        return None
    return [i if model.get(i, False) else -i for i in variables]


_SIMULATION_BITS = 256


def _simulate(goal: Goal, atom_bits: Mapping[AtomKey, int], case_sensitive_symbols: bool) -> int:
    """Truth of ``goal`` in 256 states at once: bit i of the result is its value in state i."""
    mask = (1 << _SIMULATION_BITS) - 1
    values: dict[int, int] = {}
    for node in _postorder(goal):
        if isinstance(node, Atom):
            value = atom_bits[atom_key(node, case_sensitive_symbols=case_sensitive_symbols)]
        elif isinstance(node, Constant):
            value = mask if node.value else 0
        elif isinstance(node, Not):
            value = mask ^ values[id(node.operand)]
        elif isinstance(node, Imply):
            value = (mask ^ values[id(node.antecedent)]) | values[id(node.consequent)]
        elif isinstance(node, And):
            value = mask
            for child in node.operands:
                value &= values[id(child)]
        else:
            value = 0
            for child in node.operands:
                value |= values[id(child)]
        values[id(node)] = value
    return values[id(goal)]


def goal_counterexample(
    a: Goal | str,
    b: Goal | str,
    *,
    case_sensitive_symbols: bool = False,
    backend: SatBackend = "auto",
    presolve: bool | None = None,
) -> dict[str, bool] | None:
    """A state accepted by exactly one of ``a`` and ``b`` (atom text -> truth), or None if equivalent.

    The state lists every atom of either goal; atoms are identified by (predicate, symbols), predicates
    case-insensitively and symbols case-insensitively unless ``case_sensitive_symbols`` (Hydra spells
    3D places ``p…`` and 2D mesh places ``P…``; set it when both kinds can occur).

    The SAT check of the Tseitin-encoded ``a XOR b`` decides. ``presolve`` first tries 256 random states
    evaluated bit-parallel (finds many differences) and compares the simplified negation normal forms
    (proves reorderings, De Morgan, absorption); ``None`` (default) presolves only for the sympy backend,
    which it spares slow searches; MiniSat is faster than the presolve itself.
    """
    goal_a, goal_b = as_goal(a), as_goal(b)
    atoms: dict[AtomKey, Atom] = {}
    for atom in (*iter_atoms(goal_a), *iter_atoms(goal_b)):
        atoms.setdefault(atom_key(atom, case_sensitive_symbols=case_sensitive_symbols), atom)
    if presolve is None:
        presolve = not _uses_pysat(backend)
    if presolve:
        rng = random.Random(len(atoms))
        atom_bits = {key: rng.getrandbits(_SIMULATION_BITS) for key in atoms}
        sim_a = _simulate(goal_a, atom_bits, case_sensitive_symbols)
        differ = sim_a ^ _simulate(goal_b, atom_bits, case_sensitive_symbols)
        if differ:
            state = (differ & -differ).bit_length() - 1
            return {_format_atom(atom): bool(atom_bits[key] >> state & 1) for key, atom in atoms.items()}
        keys = _StructureKeys(case_sensitive_symbols)
        simple_a = _simplify(negation_normal_form(goal_a), keys)
        simple_b = _simplify(negation_normal_form(goal_b), keys)
        if keys(simple_a) == keys(simple_b):
            return None
    encoder = _TseitinEncoder(case_sensitive_symbols)
    lit_a = encoder.literal(goal_a)
    lit_b = encoder.literal(goal_b)
    encoder.clauses.append([lit_a, lit_b])  # a XOR b
    encoder.clauses.append([-lit_a, -lit_b])
    model = _solve(encoder.clauses, encoder.num_vars, backend)
    if model is None:
        return None
    true_vars = {lit for lit in model if lit > 0}
    found = {
        atom_key(atom, case_sensitive_symbols=case_sensitive_symbols): var in true_vars
        for var, atom in encoder.atoms_by_var.items()
    }
    return {_format_atom(atom): found.get(key, False) for key, atom in atoms.items()}


def goals_equivalent(
    a: Goal | str,
    b: Goal | str,
    *,
    case_sensitive_symbols: bool = False,
    backend: SatBackend = "auto",
    presolve: bool | None = None,
) -> bool:
    """True when ``a`` and ``b`` accept the same states (UNSAT of their Tseitin-encoded XOR).

    Handles reordering, absorption, De Morgan, distributivity, double negation, constants; ``(p a b)``
    and ``(p b a)`` are different atoms. With python-sat it scales to hundreds of atoms (see
    benchmarks/goal_equivalence_bench.py); the sympy fallback can take seconds or more past ~50 atoms.
    """
    found = goal_counterexample(
        a, b, case_sensitive_symbols=case_sensitive_symbols, backend=backend, presolve=presolve
    )
    return found is None


def evaluate_goal(
    goal: Goal | str, true_atoms: Iterable[Atom | str], *, case_sensitive_symbols: bool = False
) -> bool:
    """Truth of ``goal`` in the state where exactly ``true_atoms`` hold (atoms or atom text)."""
    holding = set()
    for atom in true_atoms:
        parsed = parse_goal(atom) if isinstance(atom, str) else atom
        if not isinstance(parsed, Atom):
            raise GoalParseError("expected a single atom such as (visited-place P1)", str(atom), 0)
        holding.add(atom_key(parsed, case_sensitive_symbols=case_sensitive_symbols))

    values: dict[int, bool] = {}
    root = as_goal(goal)
    for node in _postorder(root):
        if isinstance(node, Atom):
            value = atom_key(node, case_sensitive_symbols=case_sensitive_symbols) in holding
        elif isinstance(node, Constant):
            value = node.value
        elif isinstance(node, Not):
            value = not values[id(node.operand)]
        elif isinstance(node, Imply):
            value = not values[id(node.antecedent)] or values[id(node.consequent)]
        elif isinstance(node, And):
            value = all(values[id(child)] for child in node.operands)
        else:
            value = any(values[id(child)] for child in node.operands)
        values[id(node)] = value
    return values[id(root)]


# ---------------------------------------------------------------------------------------------------
# Simplification


class _StructureKeys:
    """Hashable identity of goals up to operand order and repetition, cached per node.

    The cache holds each node it has keyed, so an ``id`` cannot be reused while its entry exists.
    """

    def __init__(self, case_sensitive_symbols: bool) -> None:
        self.case_sensitive_symbols = case_sensitive_symbols
        self._cache: dict[int, tuple[Goal, object]] = {}

    def __call__(self, goal: Goal) -> object:
        hit = self._cache.get(id(goal))
        if hit is not None and hit[0] is goal:
            return hit[1]
        key: object
        if isinstance(goal, Atom):
            key = ("atom", atom_key(goal, case_sensitive_symbols=self.case_sensitive_symbols))
        elif isinstance(goal, Constant):
            key = ("const", goal.value)
        elif isinstance(goal, Not):
            key = ("not", self(goal.operand))
        elif isinstance(goal, Imply):
            key = ("imply", self(goal.antecedent), self(goal.consequent))
        else:
            key = ("and" if isinstance(goal, And) else "or", frozenset(self(g) for g in goal.operands))
        self._cache[id(goal)] = (goal, key)
        return key


def _negate(goal: Goal) -> Goal:
    if isinstance(goal, Not):
        return goal.operand
    if isinstance(goal, Constant):
        return Constant(not goal.value)
    return Not(goal)


def simplify_goal(goal: Goal | str, *, case_sensitive_symbols: bool = False) -> Goal:
    """An equivalent, usually smaller goal.

    Rewrites: ``imply`` to ``or``; double negation; constants; flattening of nested and/or; repeated
    operands; ``x`` with ``(not x)`` (contradiction/tautology); absorption (``(or a (and a b))`` -> ``a``);
    singleton and/or. It does not distribute or search for a minimal form.
    """
    return _simplify(as_goal(goal), _StructureKeys(case_sensitive_symbols))


def _simplify(goal: Goal, key: _StructureKeys) -> Goal:
    if isinstance(goal, Atom | Constant):
        return goal
    if isinstance(goal, Imply):
        return _simplify(Or((Not(goal.antecedent), goal.consequent)), key)
    if isinstance(goal, Not):
        return _negate(_simplify(goal.operand, key))
    conjunction = isinstance(goal, And)
    kind = And if conjunction else Or
    identity, absorbing = conjunction, not conjunction  # and: drop true, false wins; or: the reverse
    flat: list[Goal] = []
    for operand in goal.operands:
        simple = _simplify(operand, key)
        if isinstance(simple, kind):
            flat.extend(simple.operands)
        else:
            flat.append(simple)
    operands: list[Goal] = []
    keys: set[object] = set()
    for operand in flat:
        if isinstance(operand, Constant):
            if operand.value == absorbing:
                return Constant(absorbing)
            continue
        operand_key = key(operand)
        if operand_key not in keys:
            keys.add(operand_key)
            operands.append(operand)
    if any(key(_negate(op)) in keys for op in operands):
        return Constant(absorbing)
    # Absorption: in (or A (and A B)) the conjunction adds nothing; dually for (and A (or A B)).
    dual = Or if conjunction else And
    part_sets = [
        frozenset(key(g) for g in op.operands) if isinstance(op, dual) else frozenset([key(op)])
        for op in operands
    ]
    kept = [
        op
        for i, op in enumerate(operands)
        if not any(j != i and part_sets[j] < part_sets[i] for j in range(len(operands)))
    ]
    if not kept:
        return Constant(identity)
    if len(kept) == 1:
        return kept[0]
    return kind(tuple(kept))


def negation_normal_form(goal: Goal | str) -> Goal:
    """An equivalent goal whose negations apply to atoms only (De Morgan pushed in, ``imply`` expanded)."""
    goal = as_goal(goal)
    negate = False
    if isinstance(goal, Not):
        negate, goal = True, goal.operand
        while isinstance(goal, Not):
            negate, goal = not negate, goal.operand
    if isinstance(goal, Imply):
        goal = Or((Not(goal.antecedent), goal.consequent))
    if isinstance(goal, Atom):
        return Not(goal) if negate else goal
    if isinstance(goal, Constant):
        return Constant(goal.value != negate)
    assert isinstance(goal, And | Or)
    kind = (Or if isinstance(goal, And) else And) if negate else type(goal)
    return kind(tuple(negation_normal_form(Not(op) if negate else op) for op in goal.operands))
