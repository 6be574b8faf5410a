"""SLDP, the answer-equality language of the Heracles evaluation: parse, compare, format, extract.

Syntax (the Heracles ``sldp`` grammar, made lenient where LLMs commonly stray):

* set ``<a, b>``, list ``[a, b]``, dict ``{k: v}``, point ``POINT(x y z)`` or ``POINT(x y)``
  (the keyword is case-insensitive and a comma between coordinates is tolerated);
* number: ``12``, ``-3.5``, ``.5``, ``1e-3`` (integers stay ``int``; non-finite values are refused);
* string: bare (``chair``, ``O12``, ``coffee table``, ``children's room``: everything up to one of
  ``, : [ ] { } < > ( )``, trimmed) or quoted (``'...'`` / ``"..."`` with backslash escapes);
* containers nest arbitrarily; whitespace between tokens is ignored; one trailing comma is allowed.
  There are no boolean or null literals in the seed language: ``true`` / ``null`` are plain strings.

Equality (:func:`sldp_equal`): lists are ordered; sets are unordered and duplicates count once; dicts
match key by key; numbers, numeric strings and point coordinates are equal within an absolute
tolerance; other strings compare trimmed, case-insensitively and with runs of whitespace collapsed.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from scenerag.errors import SceneRagError

DEFAULT_TOLERANCE = 0.01
MAX_NESTING = 100  # parse limit; keeps every recursive helper far from Python's stack limit

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_STRUCTURAL = frozenset(",:[]{}<>()")
_OPENERS = {"<": ">", "[": "]", "{": "}"}
# Strings written without quotes by to_sldp: a word, optionally more words separated by single spaces.
_SAFE_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-./#'&]*(?: [A-Za-z0-9_\-./#'&]+)*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_FLOAT_EPS = sys.float_info.epsilon


class SldpParseError(SceneRagError):
    """SLDP text that does not parse: carries the 0-based ``position`` and a caret ``excerpt``."""

    def __init__(self, reason: str, text: str, position: int) -> None:
        self.reason = reason
        self.text = text
        self.position = position
        self.excerpt = caret_excerpt(text, position)
        super().__init__(f"SLDP parse error at position {position}: {reason}\n{self.excerpt}")


class SldpFormatError(SceneRagError):
    """A value that cannot be written as SLDP (non-finite number, bad dict key, duplicate key)."""


def caret_excerpt(text: str, position: int, width: int = 60) -> str:
    """One line of ``text`` around ``position`` (0-based) with a caret under it; long lines are elided."""
    position = max(0, min(position, len(text)))
    half = width // 2
    start = max(0, position - half)
    end = min(len(text), start + width)
    start = max(0, min(start, end - width))
    snippet = "".join(" " if ch.isspace() else ch for ch in text[start:end])
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < len(text) else ""
    return f"  {prefix}{snippet}{suffix}\n  {' ' * (len(prefix) + position - start)}^"


# ---------------------------------------------------------------------------------------------------
# Typed value tree


@dataclass(frozen=True)
class SldpNumber:
    """A finite number; integers written without ``.`` or an exponent stay ``int``."""

    value: int | float

    def __post_init__(self) -> None:
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise SldpFormatError(f"SLDP numbers must be finite, got {self.value!r}")


@dataclass(frozen=True)
class SldpString:
    """A string as written (bare strings trimmed; quoted strings exact, escapes resolved)."""

    value: str


@dataclass(frozen=True)
class SldpPoint:
    """``POINT(x y z)`` or ``POINT(x y)``: 2 or 3 finite float coordinates."""

    coords: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.coords) not in (2, 3) or not all(math.isfinite(c) for c in self.coords):
            raise SldpFormatError(f"a POINT has 2 or 3 finite coordinates, got {self.coords!r}")


@dataclass(frozen=True)
class SldpList:
    """An ordered sequence ``[a, b]``."""

    items: tuple[SldpValue, ...]


@dataclass(frozen=True)
class SldpSet:
    """An unordered collection ``<a, b>``; items are kept as written, duplicates count once."""

    items: tuple[SldpValue, ...]


@dataclass(frozen=True)
class SldpDict:
    """A mapping ``{k: v}``; keys are strings (numeric keys kept as their text) and must be distinct."""

    items: tuple[tuple[SldpString, SldpValue], ...]

    def __post_init__(self) -> None:
        seen: set[tuple[str, Any]] = set()
        for key, _ in self.items:
            ident = key_identity(key.value)
            if ident in seen:
                raise SldpFormatError(f"duplicate dict key {key.value!r}", hint="dict keys must be distinct")
            seen.add(ident)


SldpValue: TypeAlias = SldpNumber | SldpString | SldpPoint | SldpList | SldpSet | SldpDict
SLDP_TYPES = (SldpNumber, SldpString, SldpPoint, SldpList, SldpSet, SldpDict)


def sldp_type(value: SldpValue) -> str:
    """Type name of a parsed value: number, string, point, list, set or dict."""
    names = {
        SldpNumber: "number",
        SldpString: "string",
        SldpPoint: "point",
        SldpList: "list",
        SldpSet: "set",
        SldpDict: "dict",
    }
    return names[type(value)]


def normalize_string(text: str) -> str:
    """Comparison form of a string: trimmed, whitespace runs collapsed to one space, case-folded."""
    return " ".join(text.split()).casefold()


def _number_from_text(text: str) -> int | float | None:
    """The number ``text`` spells (after trimming), or None; never raises."""
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    try:
        if any(c in text for c in ".eE"):
            value = float(text)
            return value if math.isfinite(value) else None
        return int(text)
    except ValueError:  # more digits than int() accepts
        return None


def key_identity(key: str) -> tuple[str, Any]:
    """How dict keys are matched: numeric text by exact value (``1`` = ``1.0``), otherwise normalized."""
    number = _number_from_text(key)
    if number is not None:
        return ("num", number)
    return ("str", normalize_string(key))


# ---------------------------------------------------------------------------------------------------
# Parsing


class _Parser:
    """Recursive-descent parser over one SLDP text; positions are 0-based character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def error(self, reason: str, position: int | None = None) -> SldpParseError:
        return SldpParseError(reason, self.text, self.pos if position is None else position)

    def skip_ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos].isspace():
            pos += 1
        self.pos = pos

    def describe_here(self) -> str:
        return "end of text" if self.pos >= len(self.text) else repr(self.text[self.pos])

    def value(self) -> SldpValue:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.error("expected a value, found end of text")
        ch = self.text[self.pos]
        if ch in _OPENERS:
            return self.container(ch)
        if ch in "\"'":
            return SldpString(self.quoted())
        if ch in _STRUCTURAL:
            raise self.error(f"expected a value, found {ch!r}")
        return self.bare_scalar()

    def container(self, opener: str) -> SldpValue:
        start = self.pos
        closer = _OPENERS[opener]
        kind = {"<": "set", "[": "list", "{": "dict"}[opener]
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"values nested more than {MAX_NESTING} deep")
        self.pos += 1
        entries: list[Any] = []
        seen_keys: set[tuple[str, Any]] = set()
        self.skip_ws()
        if self.pos < len(self.text) and self.text[self.pos] == closer:
            self.pos += 1
            self.depth -= 1
            return _make_container(kind, entries)
        while True:
            if kind == "dict":
                key_pos = self.pos
                key = self.dict_key()
                ident = key_identity(key)
                if ident in seen_keys:
                    raise self.error(f"duplicate dict key {key!r}", key_pos)
                seen_keys.add(ident)
                self.skip_ws()
                if self.pos >= len(self.text) or self.text[self.pos] != ":":
                    raise self.error(f"expected ':' after dict key {key!r}, found {self.describe_here()}")
                self.pos += 1
                entries.append((SldpString(key), self.value()))
            else:
                entries.append(self.value())
            self.skip_ws()
            if self.pos >= len(self.text):
                expected = f"expected ',' or {closer!r}"
                raise self.error(f"{kind} opened at position {start} is never closed: {expected}")
            ch = self.text[self.pos]
            if ch == closer:
                self.pos += 1
                break
            if ch != ",":
                where = f"the {kind} opened at position {start}"
                raise self.error(f"expected ',' or {closer!r} in {where}, found {ch!r}")
            self.pos += 1
            self.skip_ws()
            if self.pos < len(self.text) and self.text[self.pos] == closer:  # one trailing comma
                self.pos += 1
                break
        self.depth -= 1
        return _make_container(kind, entries)

    def dict_key(self) -> str:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.error("expected a dict key, found end of text")
        ch = self.text[self.pos]
        if ch in "\"'":
            return self.quoted()
        if ch in _STRUCTURAL:
            raise self.error(f"expected a dict key (a string or number), found {ch!r}")
        start = self.pos
        end = self.scan_bare()
        return self.text[start:end].strip()

    def scan_bare(self) -> int:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] not in _STRUCTURAL:
            pos += 1
        self.pos = pos
        return pos

    def quoted(self) -> str:
        start = self.pos
        quote = self.text[start]
        out: list[str] = []
        pos = start + 1
        text = self.text
        while pos < len(text):
            ch = text[pos]
            if ch == "\\" and pos + 1 < len(text):
                nxt = text[pos + 1]
                out.append(_ESCAPES.get(nxt, nxt))
                pos += 2
                continue
            if ch == quote:
                self.pos = pos + 1
                return "".join(out)
            out.append(ch)
            pos += 1
        raise self.error(f"string opened with {quote} at position {start} is never closed", start)

    def bare_scalar(self) -> SldpValue:
        start = self.pos
        end = self.scan_bare()
        raw = self.text[start:end].strip()
        if end < len(self.text) and self.text[end] == "(":
            if raw.casefold() == "point":
                return self.point_body(start)
            raise self.error("'(' is only allowed in POINT(x y z); quote strings that contain parentheses")
        number = _number_from_text(raw)
        if number is not None:
            return SldpNumber(number)
        if _NUMBER.fullmatch(raw):
            raise self.error(f"number {raw!r} is out of range", start)
        words = raw.split()
        if len(words) > 1 and all(_NUMBER.fullmatch(w) for w in words):
            raise self.error(f"expected ',' between the numbers in {raw!r}", start)
        return SldpString(raw)

    def point_body(self, start: int) -> SldpPoint:
        self.pos += 1  # the '('
        coords: list[float] = []
        text = self.text
        while True:
            self.skip_ws()
            if self.pos >= len(text):
                raise self.error(f"POINT at position {start} is never closed: expected ')'")
            if text[self.pos] == ")":
                self.pos += 1
                break
            if coords and text[self.pos] == ",":
                self.pos += 1
                self.skip_ws()
            tok_start = self.pos
            while self.pos < len(text) and not text[self.pos].isspace() and text[self.pos] not in ",)":
                self.pos += 1
            token = text[tok_start : self.pos]
            number = _number_from_text(token)
            if number is None:
                raise self.error(f"POINT coordinates must be finite numbers, found {token!r}", tok_start)
            coords.append(float(number))
        if len(coords) not in (2, 3):
            raise self.error(f"POINT needs 2 or 3 coordinates, found {len(coords)}", start)
        if not all(math.isfinite(c) for c in coords):
            raise self.error("POINT coordinate is out of range", start)
        return SldpPoint(tuple(coords))


def _make_container(kind: str, entries: list[Any]) -> SldpValue:
    if kind == "set":
        return SldpSet(tuple(entries))
    if kind == "list":
        return SldpList(tuple(entries))
    return SldpDict(tuple(entries))


def _parse_prefix(text: str, start: int = 0) -> tuple[SldpValue, int]:
    """Parse one value starting at ``start``; return it and the offset just after it."""
    parser = _Parser(text)
    parser.pos = start
    value = parser.value()
    return value, parser.pos


def parse_sldp(text: str) -> SldpValue:
    """Parse SLDP ``text`` into a typed value; raise :class:`SldpParseError` (with position) otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"parse_sldp expects str, got {type(text).__name__}")
    parser = _Parser(text)
    parser.skip_ws()
    if parser.pos >= len(text):
        raise parser.error("empty SLDP text: expected a value")
    value = parser.value()
    parser.skip_ws()
    if parser.pos < len(text):
        raise parser.error(f"unexpected text after the value: {text[parser.pos : parser.pos + 20]!r}")
    return value


# ---------------------------------------------------------------------------------------------------
# Equality


def _as_number(value: SldpNumber | SldpString) -> int | float | None:
    if isinstance(value, SldpNumber):
        return value.value
    return _number_from_text(value.value)


def numbers_close(a: int | float, b: int | float, tol: float) -> bool:
    """``|a - b| <= tol``, forgiving float round-off of a few ulps (so ``1.01`` vs ``1.0`` is within 0.01)."""
    if a == b:
        return True
    if isinstance(a, int) and isinstance(b, int):  # exact arithmetic: no round-off to forgive
        return abs(a - b) <= tol
    try:
        diff = abs(a - b)
        slack = 4 * _FLOAT_EPS * max(abs(float(a)), abs(float(b)), tol) if tol > 0 else 0.0
    except OverflowError:  # an integer too large for a float: only exact equality counts
        return False
    return diff <= tol + slack


def _scalars_equal(a: SldpNumber | SldpString, b: SldpNumber | SldpString, tol: float) -> bool:
    na, nb = _as_number(a), _as_number(b)
    if na is not None and nb is not None:
        return numbers_close(na, nb, tol)
    if isinstance(a, SldpString) and isinstance(b, SldpString):
        return normalize_string(a.value) == normalize_string(b.value)
    return False


def canonical_key(value: SldpValue) -> Any:
    """Hashable identity of ``value`` under exact (zero-tolerance) SLDP equality."""
    if isinstance(value, SldpNumber | SldpString):
        number = _as_number(value)
        if number is not None:
            return ("num", number)
        return ("str", normalize_string(value.value))  # type: ignore[union-attr]
    if isinstance(value, SldpPoint):
        return ("point", value.coords)
    if isinstance(value, SldpList):
        return ("list", tuple(canonical_key(v) for v in value.items))
    if isinstance(value, SldpSet):
        return ("set", frozenset(canonical_key(v) for v in value.items))
    return ("dict", frozenset((key_identity(k.value), canonical_key(v)) for k, v in value.items))


def _dedupe(items: Iterable[SldpValue]) -> list[SldpValue]:
    seen: set[Any] = set()
    out: list[SldpValue] = []
    for item in items:
        key = canonical_key(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _is_exact_only(value: SldpValue) -> bool:
    """A non-numeric string: equal only to strings with the same normal form, whatever the tolerance."""
    return isinstance(value, SldpString) and _number_from_text(value.value) is None


def _sets_equal(a: SldpSet, b: SldpSet, tol: float) -> bool:
    if tol == 0.0:
        return canonical_key(a) == canonical_key(b)
    ua, ub = _dedupe(a.items), _dedupe(b.items)
    if len(ua) != len(ub):
        return False
    exact_a = {canonical_key(v) for v in ua if _is_exact_only(v)}
    exact_b = {canonical_key(v) for v in ub if _is_exact_only(v)}
    if exact_a != exact_b:
        return False
    rest_a = [v for v in ua if not _is_exact_only(v)]
    rest_b = [v for v in ub if not _is_exact_only(v)]
    if len(rest_a) != len(rest_b):
        return False
    if not rest_a:
        return True
    if len(rest_a) == 1:
        return _equal(rest_a[0], rest_b[0], tol)
    return _has_perfect_matching(rest_a, rest_b, tol)


def _numeric_adjacency(a: list[SldpValue], b: list[SldpValue], tol: float) -> Any | None:
    """Vectorized ``numbers_close`` matrix when every item is a number of safe float magnitude."""
    import numpy as np

    values_a = [_as_number(v) if isinstance(v, SldpNumber | SldpString) else None for v in a]
    values_b = [_as_number(v) if isinstance(v, SldpNumber | SldpString) else None for v in b]
    limit = 2.0**53
    for v in (*values_a, *values_b):
        if v is None or (isinstance(v, int) and abs(v) >= limit):
            return None
    xa = np.asarray(values_a, dtype=float)[:, None]
    xb = np.asarray(values_b, dtype=float)[None, :]
    slack = 4 * _FLOAT_EPS * np.maximum(np.maximum(np.abs(xa), np.abs(xb)), tol)
    return (xa == xb) | (np.abs(xa - xb) <= tol + slack)


def _has_perfect_matching(a: list[SldpValue], b: list[SldpValue], tol: float) -> bool:
    """Hopcroft-Karp (scipy) over the "equal within tolerance" bipartite graph: not greedy."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    adjacency = _numeric_adjacency(a, b, tol)
    if adjacency is None:
        adjacency = np.array([[_equal(x, y, tol) for y in b] for x in a], dtype=bool)
    if not adjacency.any(axis=1).all() or not adjacency.any(axis=0).all():
        return False
    matching = maximum_bipartite_matching(csr_matrix(adjacency.astype(np.int8)), perm_type="column")
    return bool((matching >= 0).all())


def _equal(a: SldpValue, b: SldpValue, tol: float) -> bool:
    if isinstance(a, SldpNumber | SldpString) and isinstance(b, SldpNumber | SldpString):
        return _scalars_equal(a, b, tol)
    if type(a) is not type(b):
        return False
    if isinstance(a, SldpPoint):
        return len(a.coords) == len(b.coords) and all(  # type: ignore[union-attr]
            numbers_close(x, y, tol)
            for x, y in zip(a.coords, b.coords, strict=True)  # type: ignore[union-attr]
        )
    if isinstance(a, SldpList):
        return len(a.items) == len(b.items) and all(  # type: ignore[union-attr]
            _equal(x, y, tol)
            for x, y in zip(a.items, b.items, strict=True)  # type: ignore[union-attr]
        )
    if isinstance(a, SldpSet):
        return _sets_equal(a, b, tol)  # type: ignore[arg-type]
    assert isinstance(a, SldpDict) and isinstance(b, SldpDict)
    if len(a.items) != len(b.items):
        return False
    b_by_key = {key_identity(k.value): v for k, v in b.items}
    for key, va in a.items:
        vb = b_by_key.get(key_identity(key.value))
        if vb is None or not _equal(va, vb, tol):
            return False
    return True


def as_sldp_value(value: Any) -> SldpValue:
    """``value`` as a typed SLDP value: text is parsed, a parsed value passes, anything else is converted."""
    if isinstance(value, str):
        return parse_sldp(value)
    if isinstance(value, SLDP_TYPES):
        return value
    return from_python(value)


def sldp_equal(a: Any, b: Any, *, tol: float = DEFAULT_TOLERANCE) -> bool:
    """True when ``a`` and ``b`` are equal in the SLDP sense.

    ``a``/``b``: SLDP text (``str``), a parsed value, or a Python value (converted by
    :func:`from_python`). Numbers (and numeric strings) match when ``|a - b| <= tol`` (inclusive; the
    seed implementation used ``<``), up to float round-off. Sets match when, after dropping exact
    duplicates, there is a one-to-one pairing of equal elements (found by maximum bipartite matching,
    so ``<1.0, 1.009>`` equals ``<1.009, 1.0>`` however the elements are ordered). Different types never
    match (a set is not a list, ``POINT(1 2 3)`` is not ``[1, 2, 3]``). Raises :class:`SldpParseError`
    for text that does not parse.
    """
    if tol < 0 or not math.isfinite(tol):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    return _equal(as_sldp_value(a), as_sldp_value(b), float(tol))


# ---------------------------------------------------------------------------------------------------
# Formatting Python values


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _point_coords(value: Any) -> tuple[float, ...] | None:
    """Coordinates of a point-like value: an ``{x, y[, z]}`` mapping or a neo4j spatial point."""
    if isinstance(value, Mapping):
        keys = set(value.keys())
        if keys in ({"x", "y", "z"}, {"x", "y"}) and all(_is_real(value[k]) for k in keys):
            return tuple(float(value[k]) for k in ("x", "y", "z") if k in keys)
        return None
    is_spatial = isinstance(value, tuple) and hasattr(value, "srid") and len(value) in (2, 3)
    if is_spatial and all(_is_real(c) for c in value):
        return tuple(float(c) for c in value)
    return None


def from_python(value: Any) -> SldpValue:
    """Convert a Python value to a typed SLDP value.

    set/frozenset -> set (items ordered by their SLDP text), list/tuple/ndarray -> list, dict -> dict
    (keys: str, int or float, kept as text), ``{x, y, z}`` or ``{x, y}`` dict and neo4j points -> point,
    int/float -> number, str -> string, bool -> ``true``/``false`` and None -> ``null`` (strings: SLDP
    has no such literals). Raises :class:`SldpFormatError` for other types or non-finite numbers.
    """
    if isinstance(value, SLDP_TYPES):
        return value
    if isinstance(value, bool):
        return SldpString("true" if value else "false")
    if value is None:
        return SldpString("null")
    if isinstance(value, str):
        return SldpString(value)
    if _is_real(value):
        if isinstance(value, numbers.Integral):
            return SldpNumber(int(value))
        number = float(value)
        if not math.isfinite(number):
            raise SldpFormatError(f"cannot write {number!r} as SLDP", hint="SLDP numbers must be finite")
        return SldpNumber(number)
    coords = _point_coords(value)
    if coords is not None:
        if not all(math.isfinite(c) for c in coords):
            raise SldpFormatError(f"cannot write point {coords!r} as SLDP", hint="coordinates must be finite")
        return SldpPoint(coords)
    if isinstance(value, Mapping):
        entries = []
        for key, item in value.items():
            if isinstance(key, str):
                key_text = key
            elif _is_real(key) or isinstance(key, bool):
                key_text = format_sldp(from_python(key))
            else:
                raise SldpFormatError(
                    f"dict key {key!r} of type {type(key).__name__} cannot be an SLDP key",
                    hint="SLDP dict keys are strings or numbers",
                )
            entries.append((SldpString(key_text), from_python(item)))
        return SldpDict(tuple(entries))
    if isinstance(value, set | frozenset):
        items = [from_python(v) for v in value]
        items.sort(key=format_sldp)
        return SldpSet(tuple(items))
    if isinstance(value, list | tuple):
        return SldpList(tuple(from_python(v) for v in value))
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays and scalars
        return from_python(value.tolist())
    raise SldpFormatError(
        f"cannot write a {type(value).__name__} as SLDP",
        hint="use numbers, strings, lists, tuples, sets, dicts or {x, y, z} points",
    )


def _format_number(value: int | float) -> str:
    if isinstance(value, int):
        try:
            return str(value)
        except ValueError as exc:  # beyond Python's int-to-text digit limit
            raise SldpFormatError("integer too long to write as SLDP", hint="use a float") from exc
    return repr(float(value))


def _format_string(text: str) -> str:
    if _SAFE_BARE.fullmatch(text) and not _NUMBER.fullmatch(text):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return '"' + escaped.replace("\r", "\\r") + '"'


def _format_key(text: str) -> str:
    """Dict keys are text; numeric key text (``3``, ``1.5``) is written bare and reads back unchanged."""
    if _NUMBER.fullmatch(text) and _number_from_text(text) is not None:
        return text
    return _format_string(text)


def format_sldp(value: SldpValue) -> str:
    """Canonical SLDP text of a typed value (inverse of :func:`parse_sldp`)."""
    if isinstance(value, SldpNumber):
        return _format_number(value.value)
    if isinstance(value, SldpString):
        return _format_string(value.value)
    if isinstance(value, SldpPoint):
        return "POINT(" + " ".join(repr(c) for c in value.coords) + ")"
    if isinstance(value, SldpList):
        return "[" + ", ".join(format_sldp(v) for v in value.items) + "]"
    if isinstance(value, SldpSet):
        return "<" + ", ".join(format_sldp(v) for v in value.items) + ">"
    if isinstance(value, SldpDict):
        return "{" + ", ".join(f"{_format_key(k.value)}: {format_sldp(v)}" for k, v in value.items) + "}"
    raise SldpFormatError(f"not an SLDP value: {type(value).__name__}")


def to_sldp(value: Any) -> str:
    """SLDP text of a Python value (see :func:`from_python`): ``parse_sldp(to_sldp(v)) == from_python(v)``."""
    return format_sldp(from_python(value))


# ---------------------------------------------------------------------------------------------------
# Pulling the answer out of an LLM reply

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_ANSWER_MARKER = re.compile(
    r"\b(?:final\s+)?answer\b(?:\s*\*\*)?(?:\s*(?:is\b\s*)?[:=]|\s+is\b)", re.IGNORECASE
)


def _trim(text: str) -> str:
    """``text`` without surrounding whitespace, backticks and ``*`` (markdown code and bold)."""
    previous = None
    while previous != text:
        previous = text
        text = text.strip().strip("`*")
    return text


def _answer_region(text: str) -> str:
    tags = _ANSWER_TAG.findall(text)
    if tags:
        return tags[-1]
    opened = text.lower().rfind("<answer>")
    if opened >= 0:  # an answer tag the reply never closed (e.g. cut off by the token limit)
        return text[opened + len("<answer>") :]
    fences = _FENCE.findall(text)
    if fences:
        return fences[-1]
    markers = list(_ANSWER_MARKER.finditer(text))
    if markers:
        return text[markers[-1].end() :]
    return text


def extract_sldp(llm_text: str) -> str:
    """The SLDP answer inside an LLM reply, as text that :func:`parse_sldp` accepts.

    Rules, in order:

    1. Region: the content of the last ``<answer>...</answer>`` pair (the Heracles prompt's tag), or
       what follows an unclosed ``<answer>``; else the body of the last fenced code block; else the
       text after the last answer marker (``Answer:``, ``Final answer:``, ``**Answer:**``,
       ``The answer is``, ``answer =``); else the whole reply.
    2. The region is trimmed of whitespace, backticks and ``*`` (markdown) at both ends.
    3. If it starts with ``<``, ``[``, ``{``, a quote or ``POINT(``, the first complete value is returned and
       anything after it (a trailing period, an explanation) is ignored.
    4. Otherwise (a bare number or string) its first non-empty line is returned, minus trailing periods.

    Raises :class:`SldpParseError` when the region holds no parseable value (e.g. an unclosed set).
    """
    region = _trim(_answer_region(llm_text))
    if not region:
        raise SldpParseError("no answer found in the reply", llm_text, len(llm_text))
    starts_structured = region[0] in "<[{\"'" or re.match(r"point\s*\(", region, re.IGNORECASE)
    if starts_structured:
        _, end = _parse_prefix(region)
        return region[:end].strip()
    line = _trim(next(ln for ln in region.splitlines() if ln.strip()))
    line = line.rstrip(".").rstrip()
    if not line:
        raise SldpParseError("the answer is only punctuation", region, 0)
    parse_sldp(line)  # raise with a position if the line is not SLDP (e.g. contains parentheses)
    return line


def parse_llm_answer(llm_text: str) -> SldpValue:
    """``parse_sldp(extract_sldp(llm_text))``: the typed answer of an LLM reply."""
    return parse_sldp(extract_sldp(llm_text))
