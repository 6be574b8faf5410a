"""Rows -> SLDP answer without an LLM call, when the shape of the result says what the answer is.

``format_rows`` returns the SLDP text, or None when the shape is unclear (then an LLM turns the rows into
the answer). With an answer-type hint (set, list, dict, point, number, string; the seed protocol gives
one) the hint decides the form; without one the query does: one value from an aggregate or ``LIMIT 1`` is
a scalar, a listing is a set (a list when the question asks for an order), key/value rows are a dict,
two symbol columns for a question about pairs are a set of pairs, and the one boolean of a yes/no question
is ``yes``/``no``. No rows at all is the "not found" answer :data:`NOT_FOUND` (the empty set).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from scenerag.agents.query_repair import return_clause
from scenerag.agents.words import Words, load_words
from scenerag.graph.ontology import SYMBOL_KEY, has_symbol_shape
from scenerag.lang.sldp import (
    SldpDict,
    SldpList,
    SldpNumber,
    SldpPoint,
    SldpSet,
    SldpString,
    SldpValue,
    format_sldp,
)

__all__ = ["NOT_FOUND", "format_rows", "is_yes_no_question", "zero_when_nothing_matches"]

NOT_FOUND = "<>"
"""The SLDP answer for "nothing in the graph matches": the empty set."""

_COUNT_ONLY = re.compile(r"(?is)(?:DISTINCT\s+)?count\s*\((?:DISTINCT\s+)?[^()]*\)(?:\s+AS\s+\w+)?")
"""A RETURN clause that is one count and nothing else."""
_AGGREGATE = re.compile(r"\b(count|sum|avg|min|max|stdev|percentile\w*)\s*\(", re.I)
_LIMIT1 = re.compile(r"\bLIMIT\s+1\b", re.I)
_MEASURE = re.compile(r"\b(?:distance|avg|sum|min|max|round|abs|sqrt)\s*\(|\.(?:center|[xyz])\b", re.I)


def is_yes_no_question(question: str, words: Words | None = None) -> bool:
    """ "Are the lounge and R5 connected?" (not "Is there a bag? Which one?"); the language's words."""
    return (words or load_words()).is_yes_no(question)


def _is_point(v: Any) -> bool:
    return (
        isinstance(v, dict)
        and {"x", "y"} <= set(v)
        and all(isinstance(v[k], (int, float)) for k in ("x", "y"))
    )


def _as_symbol(v: Any) -> Any:
    """A whole node returned (``RETURN n``: its properties) stands for its symbol; anything else as is."""
    if isinstance(v, dict) and isinstance(v.get(SYMBOL_KEY), str) and not _is_point(v):
        return v[SYMBOL_KEY]
    if (
        isinstance(v, list)
        and v
        and all(isinstance(x, dict) and isinstance(x.get(SYMBOL_KEY), str) for x in v)
    ):
        return [x[SYMBOL_KEY] for x in v]
    return v


def _value(v: Any) -> SldpValue | None:
    """One cell as SLDP (None for nulls and shapes with no SLDP form)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return SldpString("true" if v else "false")
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return SldpNumber(round(float(v), 4) if isinstance(v, float) else v)
    if _is_point(v):
        return SldpPoint(tuple(round(float(v[k]), 3) for k in ("x", "y", "z") if k in v))
    if isinstance(v, str):
        return SldpString(v)
    if isinstance(v, (list, tuple)):
        items = [_value(x) for x in v]
        if any(i is None for i in items):
            return None
        return SldpList(tuple(items))  # type: ignore[arg-type]
    return None


def _flatten(cells: Sequence[Any]) -> list[Any]:
    """Cells of a column, with ``collect()`` lists unpacked (a list of points or numbers stays a value)."""
    out: list[Any] = []
    for c in cells:
        if isinstance(c, list) and (not c or not all(isinstance(x, (int, float)) for x in c)):
            out.extend(c)  # an empty collect() holds no item
        else:
            out.append(c)
    return out


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _pick_column(columns: list[str], rows: list[dict[str, Any]], want: str | None) -> str:
    """The column that carries the answer: a point column for positions, a numeric one for numbers, else
    the first column holding node symbols, else the first."""

    def col_is(pred: Any) -> list[str]:
        return [
            c
            for c in columns
            if any(pred(r.get(c)) for r in rows) and all(r.get(c) is None or pred(r.get(c)) for r in rows)
        ]

    if want == "point":
        pts = col_is(_is_point)
        if pts:
            return pts[0]
    if want == "number":
        nums = col_is(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
        if nums:
            return nums[-1]
    syms = col_is(has_symbol_shape)
    varying = [c for c in syms if len({r.get(c) for r in rows}) > 1]
    if len(rows) > 1 and varying:
        return varying[0]  # (R4, R2), (R4, R5): the named node R4 repeats, its neighbours answer
    return syms[0] if syms else columns[0]


def format_rows(
    columns: Sequence[str],
    rows: Sequence[dict[str, Any]],
    *,
    query: str = "",
    question: str = "",
    answer_type: str | None = None,
    words: Words | None = None,
) -> str | None:
    """SLDP text of the answer held by ``rows`` (see the module docstring), or None when unclear. ``words``:
    the language the question is read in (yes/no, pairs, positions, order)."""
    words = words or load_words()
    columns = list(columns) or (list(rows[0]) if rows else [])
    rows = [{k: _as_symbol(v) for k, v in r.items()} for r in rows]
    cells_all = [v for r in rows for v in r.values()]
    if len(cells_all) == 1 and isinstance(cells_all[0], bool) and words.is_yes_no(question):
        return words.yes_no(cells_all[0])  # "Is the lounge next to R5?" is answered as a person would
    if (
        len(cells_all) == 1
        and _is_count(cells_all[0])
        and answer_type in (None, "string")
        and _COUNT_ONLY.fullmatch(return_clause(query)[len("RETURN") :].strip())
        and words.is_yes_no(question)
    ):
        return words.yes_no(cells_all[0] > 0)  # "Is there a bin in R2?" counted: whether any is
    if not rows or not columns:
        return "0" if answer_type == "number" and _AGGREGATE.search(query or "") is None else NOT_FOUND
    single = bool(_LIMIT1.search(query)) or (
        len(rows) == 1 and bool(_AGGREGATE.search(return_clause(query))) and not _collects(query)
    )
    if (
        len(columns) == 2
        and words.has_any(question, words.pair_words)
        and answer_type in (None, "set", "list")
    ):
        pairs = _symbol_pairs(columns, rows)
        if pairs is not None:  # "List every pair of connected rooms": <<R1, R2>, <R2, R3>>
            return pairs
    if answer_type == "dict" or (answer_type is None and _dict_like(columns, rows)):
        return _as_dict(columns, rows)
    if answer_type is None and len(columns) > 2:
        return None
    if answer_type is None and len(columns) == 2 and len(rows) > 1:
        # two columns that are not key/value (e.g. symbol + position): the answer column is unclear
        wants_position = words.has_any(question, words.position_words)
        constant = [c for c in columns if len({str(r.get(c)) for r in rows}) == 1]
        if len(constant) == 1 and all(has_symbol_shape(r.get(c)) for r in rows for c in columns):
            # (R4, R2), (R4, R5): the named node repeats beside its neighbours, which answer
            return _as_set_or_list([c for c in columns if c not in constant], rows, None, False)
        if not wants_position:
            return _as_set_or_list(columns, rows, None, _asks_order(question, query, words))
    want = answer_type or ("point" if words.has_any(question, words.position_words) else None)
    if want == "point" and not any(_is_point(r.get(c)) for r in rows for c in columns):
        point = _point_of_columns(columns, rows)
        if point is not None:
            return point
    col = _pick_column(columns, rows, want)
    cells = [r.get(col) for r in rows]
    if answer_type in ("number", "string", "point") or (answer_type is None and single and len(rows) == 1):
        if answer_type == "number" and len(rows) > 1 and not all(isinstance(c, (int, float)) for c in cells):
            if len(columns) > 1 and all(has_symbol_shape(r.get(c)) for r in rows for c in columns):
                # pairs (R1, R2), (R2, R3): "how many connections" counts the pairs
                return format_sldp(SldpNumber(len({tuple(str(r.get(c)) for c in columns) for r in rows})))
            return format_sldp(SldpNumber(len({str(c) for c in _flatten(cells)})))
        cell = cells[0]
        if isinstance(cell, list) and answer_type == "number":
            return format_sldp(SldpNumber(len(cell)))
        if isinstance(cell, list) and len(cell) == 1:
            cell = cell[0]
        value = _value(cell)
        return format_sldp(value) if value is not None else None
    return _as_set_or_list([col], rows, answer_type, _asks_order(question, query, words))


def _asks_order(question: str, query: str, words: Words) -> bool:
    """Whether the question asks for an order (its words) that the query's ORDER BY gives."""
    return words.has_any(question, words.order_words) and "ORDER BY" in query.upper()


def _as_set_or_list(
    columns: list[str], rows: list[dict[str, Any]], answer_type: str | None, asks_order: bool
) -> str | None:
    ordered = answer_type == "list" or (answer_type is None and asks_order)
    items: list[SldpValue] = []
    for row in rows:
        cells = _flatten([row.get(c) for c in columns])
        for cell in cells:
            value = _value(cell)
            if value is None:
                continue
            if not ordered and value in items:
                continue
            items.append(value)
    if not items:
        return NOT_FOUND
    if ordered and len(rows) == 1 and len(items) == 1 and isinstance(items[0], SldpList):
        return format_sldp(items[0])  # one row's list of numbers (a box's size) is the list asked for
    return format_sldp(SldpList(tuple(items)) if ordered else SldpSet(tuple(items)))


def _symbol_pairs(columns: list[str], rows: list[dict[str, Any]]) -> str | None:
    """Rows of two node symbols as a set of unordered pairs (each pair once); None for other rows."""
    pairs: list[SldpValue] = []
    seen: set[frozenset[str]] = set()
    for row in rows:
        a, b = (row.get(c) for c in columns)
        if not (has_symbol_shape(a) and has_symbol_shape(b)):
            return None
        key = frozenset((a, b))
        if key not in seen and a != b:
            seen.add(key)
            pairs.append(SldpSet((SldpString(a), SldpString(b))))  # type: ignore[arg-type]
    return format_sldp(SldpSet(tuple(pairs))) if pairs else None


def _dict_like(columns: list[str], rows: list[dict[str, Any]]) -> bool:
    if len(columns) != 2 or len(rows) < 2:
        return False
    keys = [r.get(columns[0]) for r in rows]
    vals = [r.get(columns[1]) for r in rows]
    return (
        all(isinstance(k, str) for k in keys)
        and len(set(keys)) == len(keys)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
    )


def _as_dict(columns: list[str], rows: list[dict[str, Any]]) -> str | None:
    if len(columns) == 1 and len(rows) == 1 and isinstance(rows[0].get(columns[0]), dict):
        mapping = rows[0][columns[0]]
        items = [(str(k), _value(v)) for k, v in mapping.items()]
    elif len(columns) == 1 and len(rows) == 1 and _pair_list(rows[0].get(columns[0])):
        items = [(str(k), _value(v)) for k, v in rows[0][columns[0]]]  # collect([key, value])
    elif len(columns) >= 2:
        key, value = columns[0], columns[1]
        if all(_is_count(r.get(key)) for r in rows) and not any(_is_count(r.get(value)) for r in rows):
            key, value = value, key  # RETURN count(o), o.class: the class is the key
        items = [(str(r.get(key)), _value(r.get(value))) for r in rows]
    else:
        return None
    if any(v is None for _, v in items) or len({k for k, _ in items}) != len(items):
        return None  # a key twice: no mapping ("by class" grouped by something else)
    return format_sldp(SldpDict(tuple((SldpString(k), v) for k, v in items)))  # type: ignore[misc]


def _pair_list(cell: Any) -> bool:
    """Whether ``cell`` is a list of [key, value] pairs with string keys (``collect([r.nodeSymbol, n])``)."""
    return (
        isinstance(cell, list)
        and bool(cell)
        and all(isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str) for p in cell)
    )


def _point_of_columns(columns: list[str], rows: list[dict[str, Any]]) -> str | None:
    """One row of exactly three numbers (x, y, z returned apart, or as one list ``[x, y, z]``) as a point;
    None for other shapes."""
    if len(rows) != 1:
        return None
    cells = [rows[0].get(c) for c in columns]
    if len(cells) == 1 and isinstance(cells[0], list):
        cells = cells[0]
    if len(cells) != 3:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in cells):
        return None
    return format_sldp(SldpPoint(tuple(round(float(v), 3) for v in cells)))


def zero_when_nothing_matches(query: str) -> bool:
    """Whether a number asked by ``query`` is 0 when nothing matches: it counts, or lists nodes (which
    would be counted); a measure of nothing (a distance, an average, a coordinate) has no value."""
    if re.search(r"\bcount\s*\(", query, re.I):
        return True
    return _MEASURE.search(return_clause(query) or query) is None


def _collects(query: str) -> bool:
    return re.search(r"\bcollect\s*\(", return_clause(query), re.I) is not None
