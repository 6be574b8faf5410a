"""Grammars written once in Python, rendered as llama.cpp GBNF and checked by a recognizer.

A :class:`Grammar` is a set of named rules over a small expression language (:class:`Lit`,
:class:`Chars`, :class:`Ref`, :class:`Seq`, :class:`Alt`, :class:`Rep`). :meth:`Grammar.gbnf` gives the
text llama.cpp compiles into a token-level constraint; :meth:`Grammar.accepts` decides whether a string is
in the language (memoised, handles ambiguity; like GBNF, no left recursion), so tests can prove that
every correct reference query stays expressible and endpoint replies can be checked after the fact.
:func:`one_of` renders a large set of strings as a prefix tree, which keeps llama.cpp's grammar stacks
few (an alternation of 500 literals would hold 500 stacks at every quote).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

__all__ = [
    "Alt",
    "Chars",
    "Grammar",
    "GrammarError",
    "Lit",
    "Node",
    "Ref",
    "Rep",
    "Seq",
    "alt",
    "one_of",
    "opt",
    "plus",
    "seq",
    "star",
]


class GrammarError(ValueError):
    """A grammar that cannot be rendered or checked (an undefined rule, a bad character class)."""


@dataclass(frozen=True)
class Lit:
    """A literal string."""

    text: str


@dataclass(frozen=True)
class Chars:
    """One character of a GBNF character class; ``spec`` is the text between the brackets (``a-z_``,
    ``^'\\n``)."""

    spec: str


@dataclass(frozen=True)
class Ref:
    """A reference to the rule ``name``."""

    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Rep:
    """``item`` repeated ``low`` to ``high`` times (``high=None``: unbounded)."""

    item: Node
    low: int = 0
    high: int | None = None


Node = Lit | Chars | Ref | Seq | Alt | Rep


def _node(x: Node | str) -> Node:
    return Lit(x) if isinstance(x, str) else x


def seq(*items: Node | str) -> Node:
    parts = [_node(i) for i in items]
    return parts[0] if len(parts) == 1 else Seq(tuple(parts))


def alt(*items: Node | str) -> Node:
    parts = list(dict.fromkeys(_node(i) for i in items))
    if not parts:
        raise GrammarError("an alternation needs at least one branch")
    return parts[0] if len(parts) == 1 else Alt(tuple(parts))


def opt(item: Node | str) -> Node:
    return Rep(_node(item), 0, 1)


def star(item: Node | str) -> Node:
    return Rep(_node(item), 0, None)


def plus(item: Node | str) -> Node:
    return Rep(_node(item), 1, None)


def one_of(strings: Iterable[str]) -> Node:
    """Exactly one of ``strings`` (at least one, none empty), as a prefix tree of literals."""
    words = sorted({s for s in strings if s})
    if not words:
        raise GrammarError("one_of needs at least one non-empty string")
    return _trie(words)


def _trie(words: list[str]) -> Node:
    """The prefix tree of ``words`` (sorted, distinct; "" may be among them, meaning "may end here")."""
    ends = "" in words
    rest = [w for w in words if w]
    groups: dict[str, list[str]] = {}
    for w in rest:
        groups.setdefault(w[0], []).append(w)
    branches: list[Node] = []
    for _, group in sorted(groups.items()):
        common = _common_prefix(group)
        tails = [w[len(common) :] for w in group]
        if tails == [""]:
            branches.append(Lit(common))
        else:
            branches.append(Seq((Lit(common), _trie(sorted(set(tails))))))
    if not branches:
        return Lit("")
    body = branches[0] if len(branches) == 1 else Alt(tuple(branches))
    return Rep(body, 0, 1) if ends else body


def _common_prefix(words: list[str]) -> str:
    first, last = min(words), max(words)
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[:i]


# -- rendering ---------------------------------------------------------------------------------------------
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_RULE_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


def _quote(text: str) -> str:
    return '"' + "".join(_ESCAPES.get(c, c) for c in text) + '"'


def _render(node: Node, top: bool = True) -> str:
    if isinstance(node, Lit):
        return _quote(node.text)
    if isinstance(node, Chars):
        return f"[{node.spec}]"
    if isinstance(node, Ref):
        return node.name
    if isinstance(node, Seq):
        text = " ".join(_render(i, False) for i in node.items)
        return text if top else f"({text})"
    if isinstance(node, Alt):
        text = " | ".join(_render(i, True) for i in node.items)
        return text if top else f"({text})"
    inner = _render(node.item, False)
    if (node.low, node.high) == (0, 1):
        return f"{inner}?"
    if (node.low, node.high) == (0, None):
        return f"{inner}*"
    if (node.low, node.high) == (1, None):
        return f"{inner}+"
    return f"{inner}{{{node.low},{'' if node.high is None else node.high}}}"


# -- character classes ---------------------------------------------------------------------------------------
_CLASS_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    "]": "]",
    "[": "[",
    "-": "-",
    "^": "^",
    "'": "'",
}


def _char_class(spec: str) -> tuple[bool, list[tuple[str, str]]]:
    """``(negated, ranges)`` of a GBNF class body."""
    negated = spec.startswith("^")
    body = spec[1:] if negated else spec
    chars: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            if i + 1 >= len(body) or body[i + 1] not in _CLASS_ESCAPES:
                raise GrammarError(f"bad escape in character class [{spec}]")
            chars.append(_CLASS_ESCAPES[body[i + 1]])
            i += 2
            continue
        chars.append("\x00RANGE" if c == "-" and chars and i + 1 < len(body) else c)
        i += 1
    ranges: list[tuple[str, str]] = []
    j = 0
    while j < len(chars):
        if j + 2 < len(chars) and chars[j + 1] == "\x00RANGE":
            ranges.append((chars[j], chars[j + 2]))
            j += 3
        else:
            ch = "-" if chars[j] == "\x00RANGE" else chars[j]
            ranges.append((ch, ch))
            j += 1
    return negated, ranges


class Grammar:
    """Named rules (``root`` first); ``rules`` maps a rule name (``[a-z][a-z0-9-]*``) to its expression."""

    def __init__(self, rules: Mapping[str, Node], root: str = "root") -> None:
        if root not in rules:
            raise GrammarError(f"the grammar has no rule {root!r}")
        for name in rules:
            if not _RULE_NAME.match(name):
                raise GrammarError(f"bad rule name {name!r}: use lower-case letters, digits and '-'")
        self.rules = dict(rules)
        self.root = root
        missing = sorted({r for node in self.rules.values() for r in _refs(node)} - set(self.rules))
        if missing:
            raise GrammarError(f"undefined rule(s): {', '.join(missing)}")

    @cached_property
    def text(self) -> str:
        """The grammar in llama.cpp's GBNF (``root`` first)."""
        order = [self.root, *sorted(n for n in self.rules if n != self.root)]
        return "\n".join(f"{name} ::= {_render(self.rules[name])}" for name in order) + "\n"

    def gbnf(self) -> str:
        return self.text

    def accepts(self, text: str) -> bool:
        """Whether the whole of ``text`` is in the language of the root rule."""
        return len(text) in _Recognizer(self.rules, text).ends(Ref(self.root), 0)

    def longest_prefix(self, text: str) -> int:
        """How many leading characters of ``text`` some sentence of the language starts with (the position of
        the first character the grammar cannot take; ``len(text)`` when the text is a complete sentence or a
        prefix of one). Used to point at where a rejected query leaves the grammar."""
        lo, hi = 0, len(text)
        while lo < hi:  # binary search on "text[:k] is a prefix of the language"
            mid = (lo + hi + 1) // 2
            if mid in _Recognizer(self.rules, text[:mid], prefix=True).ends(Ref(self.root), 0):
                lo = mid
            else:
                hi = mid - 1
        return lo


def _refs(node: Node) -> Iterable[str]:
    if isinstance(node, Ref):
        yield node.name
    elif isinstance(node, (Seq, Alt)):
        for i in node.items:
            yield from _refs(i)
    elif isinstance(node, Rep):
        yield from _refs(node.item)


class _Recognizer:
    """End positions of each expression at each start position, memoised. With ``prefix``, reaching the end
    of the text anywhere counts as a match (the text is a prefix of some sentence)."""

    def __init__(self, rules: Mapping[str, Node], text: str, *, prefix: bool = False) -> None:
        self.rules = rules
        self.text = text
        self.prefix = prefix
        self.memo: dict[tuple[int, int], frozenset[int]] = {}
        self.classes: dict[str, tuple[bool, list[tuple[str, str]]]] = {}
        self.active: set[tuple[int, int]] = set()

    def ends(self, node: Node, pos: int) -> frozenset[int]:
        n = len(self.text)
        if self.prefix and pos == n:
            return frozenset({n})
        key = (id(node), pos)
        found = self.memo.get(key)
        if found is not None:
            return found
        if key in self.active:  # left recursion: no progress through this path
            return frozenset()
        self.active.add(key)
        try:
            result = frozenset(self._ends(node, pos))
        finally:
            self.active.discard(key)
        self.memo[key] = result
        return result

    def _ends(self, node: Node, pos: int) -> set[int]:
        text = self.text
        if isinstance(node, Lit):
            if text.startswith(node.text, pos):
                return {pos + len(node.text)}
            if self.prefix and node.text.startswith(text[pos:]):
                return {len(text)}
            return set()
        if isinstance(node, Chars):
            return {pos + 1} if pos < len(text) and self._in_class(node.spec, text[pos]) else set()
        if isinstance(node, Ref):
            return set(self.ends(self.rules[node.name], pos))
        if isinstance(node, Seq):
            current = {pos}
            for item in node.items:
                current = {e for p in current for e in self.ends(item, p)}
                if not current:
                    break
            return current
        if isinstance(node, Alt):
            return {e for item in node.items for e in self.ends(item, pos)}
        found = {pos} if node.low == 0 else set()
        frontier, seen, count = {pos}, {pos}, 0
        while frontier and (node.high is None or count < node.high):
            count += 1
            nxt = {e for p in frontier for e in self.ends(node.item, p)}
            if count >= node.low:
                found |= nxt
                nxt -= seen
                seen |= nxt
            frontier = nxt
        return found

    def _in_class(self, spec: str, ch: str) -> bool:
        parsed = self.classes.get(spec)
        if parsed is None:
            parsed = self.classes[spec] = _char_class(spec)
        negated, ranges = parsed
        inside = any(a <= ch <= b for a, b in ranges)
        return inside != negated


# deep grammars recurse once per nested expression; queries are short, but nesting adds up
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
