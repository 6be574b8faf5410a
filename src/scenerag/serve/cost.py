"""A static cost estimate of a read query, from its patterns and the schema's counts (no database access).

The server uses it to put a query into the cheap or the heavy lane before it is queued
(:mod:`scenerag.serve.admission`). The estimate is the number of intermediate rows the query makes the engine
enumerate, the way a planner's cardinality estimate works, from exact figures the schema already holds:

* a node pattern starts from its label's count (every node without a label), 1 per symbol when it is pinned
  by ``nodeSymbol`` (in its map, ``WHERE v.nodeSymbol = ...`` or ``IN [...]``, the indexed lookup), or 1
  per incoming row when an earlier clause bound its variable; an equality on a listed property (``class``)
  divides by the number of values;
* each relationship hop multiplies by the expected neighbours of the labels it leaves, through that type and
  direction, from the schema's (label, type, label) counts, label by label, so a hierarchy thins out where
  it ends; ``*lo..hi`` enumerates the paths of every length, each costing its hops (a ``shortestPath``
  visits every node at most once), and the rows that go on are those ending on the target's label (and
  pinned symbol);
* pattern parts that share no variable multiply (cartesian product), so do consecutive clauses; ``WITH``
  with only aggregates, or with ``LIMIT``, cuts the rows; ``UNWIND`` multiplies by the list's length;
  subqueries (``CALL {}``, ``EXISTS {}``, ``COUNT {}``) cost their estimate per incoming row.

The sum of those row counts is the estimate. It ignores WHERE filters other than anchors (an upper bound),
and what it cannot read makes the query heavy. ``benchmarks/server_soak.py --calibrate`` measures it against
run times.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scenerag.graph import ontology as ont
from scenerag.store.cypher import WRITE_KEYWORDS, Token, tokenize
from scenerag.store.schema import GraphSchema

#: estimated rows above which a query goes to the heavy lane (calibrated: benchmarks/server_soak.py --calibrate)
HEAVY_ROWS = 50_000.0
#: rows assumed for a list whose length the text does not show (UNWIND $list, a procedure's output)
UNKNOWN_LIST = 10.0

#: words that start a clause (the write clauses among them, for a server that allows writes)
_CLAUSES = (
    frozenset(
        {
            "MATCH",
            "OPTIONAL",
            "WHERE",
            "WITH",
            "RETURN",
            "UNWIND",
            "CALL",
            "ORDER",
            "SKIP",
            "LIMIT",
            "UNION",
            "YIELD",
        }
    )
    | WRITE_KEYWORDS
)
_AGGREGATES = frozenset(
    {"count", "collect", "sum", "avg", "min", "max", "stdev", "stdevp", "percentilecont", "percentiledisc"}
)
_SUBQUERY_WORDS = frozenset({"EXISTS", "COUNT", "COLLECT"})


@dataclass(frozen=True)
class CostEstimate:
    """Estimated intermediate rows of a query and the lane they put it in (``reason`` says why)."""

    rows: float
    reason: str
    threshold: float = HEAVY_ROWS

    @property
    def heavy(self) -> bool:
        return not self.rows <= self.threshold  # NaN and inf are heavy

    @property
    def lane(self) -> str:
        return "heavy" if self.heavy else "cheap"

    def to_dict(self) -> dict[str, Any]:
        rows = self.rows if math.isfinite(self.rows) else None
        return {"rows": rows, "lane": self.lane, "reason": self.reason}


class _Unreadable(Exception):
    """The estimator met a construct it does not model."""


@dataclass
class _Node:
    key: str  # variable name, or a unique name for an anonymous node
    labels: list[str] = field(default_factory=list)
    anchors: float | None = None  # rows when pinned by nodeSymbol
    selectivity: float = 1.0


@dataclass
class _Rel:
    a: str
    b: str
    types: list[str]
    lower: int = 1
    upper: int = 1
    shortest: bool = False  # inside shortestPath(): a breadth-first search, not every path
    direction: str = "both"  # out: a->b along the arrow, in: b->a, both: either


class _Estimator:
    def __init__(self, schema: GraphSchema, params: Mapping[str, Any]) -> None:
        self.schema = schema
        self.params = params
        self.total_nodes = float(max(1, sum(schema.node_counts.values())))
        self.anon = 0

    # -- schema figures ---------------------------------------------------------------------------------
    def label_count(self, labels: list[str]) -> float:
        counts = [self.schema.node_counts.get(label, 0) for label in labels]
        return float(min(counts)) if counts else self.total_nodes

    def start_mix(self, labels: list[str]) -> dict[str, float]:
        """One start node as a distribution over labels: its label, or every label by its share."""
        counts = self.schema.node_counts
        if labels:
            label = min(labels, key=lambda x: counts.get(x, 0))
            return {label: 1.0}
        total = sum(counts.values()) or 1
        return {label: n / total for label, n in counts.items()}

    def hop(self, frontier: dict[str, float], types: list[str], direction: str) -> dict[str, float]:
        """The expected neighbours (by label) of ``frontier`` through ``types`` in ``direction`` (out: along
        the arrows, in: against them, both), from the schema's (label, type, label) counts."""
        counts = self.schema.node_counts
        out: dict[str, float] = {}
        if not self.schema.patterns:  # no pattern counts: the mean degree over all nodes
            rels = (
                sum(self.schema.rel_counts.get(t, 0) for t in types)
                if types
                else sum(self.schema.rel_counts.values())
            )
            factor = (1.0 if direction != "both" else 2.0) * rels / self.total_nodes
            total = sum(frontier.values()) * factor
            return {label: total * n / self.total_nodes for label, n in counts.items()}
        for (src, rtype, dst), n in self.schema.patterns.items():
            if types and rtype not in types:
                continue
            if direction in ("out", "both") and src in frontier and counts.get(src):
                out[dst] = out.get(dst, 0.0) + frontier[src] * n / counts[src]
            if direction in ("in", "both") and dst in frontier and counts.get(dst):
                out[src] = out.get(src, 0.0) + frontier[dst] * n / counts[dst]
        return out

    def expand(self, rel: _Rel, src: _Node, dst: _Node, forward: bool) -> tuple[float, float]:
        """(work, paths ending on a node matching ``dst``) from one ``src`` node through ``rel``: the work is
        the relationships walked (a path of h hops, h of them); a shortest path is a breadth-first search (at
        most every node once)."""
        direction = rel.direction if forward else {"out": "in", "in": "out"}.get(rel.direction, "both")
        frontier = self.start_mix(src.labels)
        enumerated = matching = 0.0
        if rel.lower == 0:
            enumerated = matching = 1.0
        for h in range(1, rel.upper + 1):
            frontier = self.hop(frontier, rel.types, direction)
            if h < rel.lower:
                continue
            reached = sum(frontier.values())
            # a path of h hops costs h steps (each new relationship is checked against the path's others)
            enumerated += reached * (1 if rel.shortest else h)
            matching += sum(v for label, v in frontier.items() if not dst.labels or label in dst.labels)
        if rel.shortest:
            enumerated, matching = min(enumerated, self.total_nodes), min(matching, self.total_nodes)
        label_count = self.label_count(dst.labels)
        if dst.anchors is not None:  # the far end is pinned: only paths ending on those symbols
            matching *= min(1.0, dst.anchors / max(1.0, label_count))
        return enumerated, matching * dst.selectivity

    def node_rows(self, node: _Node, bound: set[str]) -> float:
        if node.key in bound:
            return 1.0
        if node.anchors is not None:
            return node.anchors
        return max(1.0, self.label_count(node.labels) * node.selectivity)

    def list_length(self, toks: list[Token], i: int) -> float:
        """Length of the list expression at ``toks[i]`` (a literal, a parameter, range(a, b)), else a guess."""
        t = toks[i] if i < len(toks) else None
        if t is None:
            return UNKNOWN_LIST
        if t.kind == "param":
            value = self.params.get(t.text[1:])
            return float(len(value)) if isinstance(value, (list, tuple)) else UNKNOWN_LIST
        if t.kind == "op" and t.text == "[":
            inner = _braced(toks, i)
            return (
                float(sum(1 for tok, depth in _nesting(inner) if depth == 0 and tok.text == ",") + 1)
                if inner
                else 0.0
            )
        if t.kind == "ident" and t.text.lower() == "range" and i + 5 < len(toks):
            lo, hi = toks[i + 2], toks[i + 4]
            if lo.kind == "number" and hi.kind == "number":
                return max(0.0, float(hi.text) - float(lo.text) + 1)
        return UNKNOWN_LIST

    # -- query structure --------------------------------------------------------------------------------
    def query(self, toks: list[Token], bound: set[str]) -> tuple[float, float]:
        """(work, output rows) of a whole query or subquery body; UNION parts add up."""
        parts, start = [], 0
        for i, (t, depth) in enumerate(_nesting(toks)):
            if depth == 0 and _word(t) == "UNION":
                parts.append(toks[start:i])
                start = i + 1 + (1 if i + 1 < len(toks) and _word(toks[i + 1]) == "ALL" else 0)
        parts.append(toks[start:])
        work = rows = 0.0
        for part in parts:
            w, r = self.single(part, set(bound))
            work, rows = work + w, rows + r
        return work, rows

    def single(self, toks: list[Token], bound: set[str]) -> tuple[float, float]:
        clauses = _split_clauses(toks)
        rows, work = 1.0, 0.0
        for word, body in clauses:
            if word in ("MATCH", "OPTIONAL"):
                pattern, where = _split_where(body)
                anchors = _where_anchors(where)
                out, match_work = self.match(pattern, bound, anchors)
                work += rows * match_work
                rows = rows * out if word == "MATCH" else rows * max(1.0, out)
                work += rows * self.subqueries(where, bound)
            elif word == "WITH":
                work += rows * self.subqueries(body, bound)
                rows = self.projection(body, rows, bound)
            elif word == "RETURN":
                work += rows * self.subqueries(body, bound)
                rows = self.projection(body, rows, bound, final=True)
            elif word == "UNWIND":
                rows *= self.list_length(body, 0)
                alias = _alias(body)
                if alias:
                    bound.add(alias)
                work += rows
            elif word == "CALL":
                if body and body[0].kind == "op" and body[0].text == "{":
                    inner = _braced(body, 0)
                    w, r = self.query(inner, bound)
                    work += rows * w
                    rows *= max(1.0, r)
                else:  # a procedure: its rows are unknown but bounded by its own limits
                    rows *= UNKNOWN_LIST
                    work += rows
                bound.update(_yielded(body))
            elif word in ("WHERE", "ORDER", "SKIP", "YIELD"):
                work += rows * self.subqueries(body, bound)
            elif word == "LIMIT":
                rows = min(rows, _number(body, rows))
            else:
                raise _Unreadable(f"{word} clause")
        return work, rows

    def projection(self, body: list[Token], rows: float, bound: set[str], *, final: bool = False) -> float:
        items, tail = _projection_items(body)
        if not final:
            names = {_item_name(item) for item in items}
            if not any(_word(t) == "*" or (t.kind == "op" and t.text == "*") for t in body[:1]):
                bound.intersection_update(n for n in names if n)
                bound.update(n for n in names if n)
        aggregated = [any(_is_aggregate(item, k) for k in range(len(item))) for item in items]
        if items and all(aggregated):
            rows = 1.0
        limit = _limit(tail)
        return min(rows, limit) if limit is not None else rows

    def subqueries(self, toks: list[Token], bound: set[str]) -> float:
        """Per-row work of EXISTS { } / COUNT { } / COLLECT { } blocks inside an expression."""
        work, i = 0.0, 0
        while i < len(toks):
            t = toks[i]
            if (
                _word(t) in _SUBQUERY_WORDS
                and i + 1 < len(toks)
                and toks[i + 1].kind == "op"
                and toks[i + 1].text == "{"
            ):
                inner = _braced(toks, i + 1)
                if inner and _word(inner[0]) in ("MATCH", "OPTIONAL", "WITH", "UNWIND", "CALL", "RETURN"):
                    work += self.query(inner, set(bound))[0]
                else:  # EXISTS { (a)-->(b) WHERE ... }: a bare pattern
                    pattern, where = _split_where(inner)
                    work += self.match(pattern, set(bound), _where_anchors(where))[1]
                i += len(inner) + 2
                continue
            i += 1
        return work

    def match(self, pattern: list[Token], bound: set[str], anchors: dict[str, float]) -> tuple[float, float]:
        """(rows out, work) of one MATCH per incoming row."""
        nodes, rels = self.read_pattern(pattern)
        for key, count in anchors.items():
            if key in nodes:
                current = nodes[key].anchors
                nodes[key].anchors = count if current is None else min(current, count)
        # connected components over relationships (shared variables are the same node already)
        parent = {k: k for k in nodes}

        def find(k: str) -> str:
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        for rel in rels:
            parent[find(rel.a)] = find(rel.b)
        components: dict[str, list[str]] = {}
        for key in nodes:
            components.setdefault(find(key), []).append(key)
        parts = [
            self.component(members, [r for r in rels if find(r.a) == root], nodes, bound)
            for root, members in components.items()
        ]
        rows, work = 1.0, 0.0
        for part_rows, part_work in sorted(
            parts
        ):  # nested loops: each part runs once per row of those before
            work += rows * part_work
            rows *= part_rows
        bound.update(k for k in nodes if not k.startswith(" "))
        return rows, work

    def component(
        self, members: list[str], rels: list[_Rel], nodes: dict[str, _Node], bound: set[str]
    ) -> tuple[float, float]:
        """(rows, work) of one connected pattern part: start at its most selective node, expand."""
        start = min(members, key=lambda k: self.node_rows(nodes[k], bound))
        rows = self.node_rows(nodes[start], bound)
        work = rows
        visited = {start}
        pending = list(rels)
        while pending:
            progress = False
            for rel in list(pending):
                if rel.a not in visited and rel.b not in visited:
                    continue
                pending.remove(rel)
                progress = True
                forward = rel.a in visited
                src, dst = (rel.a, rel.b) if forward else (rel.b, rel.a)
                enumerated, matching = self.expand(rel, nodes[src], nodes[dst], forward)
                work += rows * enumerated
                if dst in visited:  # closes a cycle (or joins two bound ends): a filter on the rows
                    continue
                if dst in bound:  # bound by an earlier clause: one of its rows
                    matching = min(matching, 1.0)
                rows *= matching
                visited.add(dst)
            if not progress:
                raise _Unreadable("disconnected relationship")
        return rows, work

    def read_pattern(self, toks: list[Token]) -> tuple[dict[str, _Node], list[_Rel]]:
        nodes: dict[str, _Node] = {}
        rels: list[_Rel] = []
        i, n = 0, len(toks)
        previous: str | None = None
        pending_rel: _Rel | None = None
        shortest = False
        while i < n:
            t = toks[i]
            if t.kind == "op" and t.text == ",":
                previous, pending_rel, shortest = None, None, False
                i += 1
            elif t.kind == "ident" and i + 1 < n and toks[i + 1].kind == "op" and toks[i + 1].text == "=":
                i += 2  # path variable p = ...
            elif t.kind == "ident" and i + 1 < n and toks[i + 1].kind == "op" and toks[i + 1].text == "(":
                shortest = t.text.lower() in ("shortestpath", "allshortestpaths")
                if not shortest:
                    raise _Unreadable(f"function {t.text}() in a pattern")
                i += 2  # read the pattern inside
            elif t.kind == "op" and t.text == "(":
                node, i = self.read_node(toks, i)
                known = nodes.get(node.key)
                if known is None:
                    nodes[node.key] = node
                else:
                    known.labels = known.labels or node.labels
                    if node.anchors is not None:
                        known.anchors = node.anchors
                    known.selectivity = min(known.selectivity, node.selectivity)
                if pending_rel is not None and previous is not None:
                    pending_rel.a, pending_rel.b = previous, node.key
                    rels.append(pending_rel)
                previous, pending_rel = node.key, None
            elif t.kind == "op" and t.text in ("-", "<-", "->"):
                if pending_rel is None:
                    pending_rel = _Rel("", "", [], shortest=shortest)
                if t.text != "-":
                    arrow = "in" if t.text == "<-" else "out"
                    pending_rel.direction = arrow if pending_rel.direction in ("both", arrow) else "both"
                i += 1
            elif t.kind == "op" and t.text == "[" and pending_rel is not None:
                i = self.read_rel(toks, i, pending_rel)
            elif t.kind == "op" and t.text == ")":
                shortest = False  # end of shortestPath(...)
                i += 1
            else:
                raise _Unreadable(f"pattern token {t.text!r}")
        return nodes, rels

    def read_node(self, toks: list[Token], i: int) -> tuple[_Node, int]:
        end = _closing(toks, i)
        inner = toks[i + 1 : end]
        j = 0
        key = None
        if inner and inner[0].kind == "ident":
            key, j = inner[0].text, 1
        if key is None:
            self.anon += 1
            key = f" anon{self.anon}"
        node = _Node(key)
        while j + 1 < len(inner) and inner[j].kind == "op" and inner[j].text in (":", "|", "&"):
            if inner[j + 1].kind == "ident":
                node.labels.append(inner[j + 1].text)
            j += 2
        if j < len(inner) and inner[j].kind == "op" and inner[j].text == "{":
            for prop, value_at in _map_entries(inner, j):
                self.constrain(node, prop, inner, value_at, equality=True)
        return node, end + 1

    def constrain(self, node: _Node, prop: str, toks: list[Token], at: int, *, equality: bool) -> None:
        if prop == ont.SYMBOL_KEY:
            node.anchors = 1.0 if equality else self.list_length(toks, at)
            return
        values = None
        for label in node.labels or list(self.schema.node_properties):
            info = self.schema.node_properties.get(label, {}).get(prop)
            if info is not None and info.values:
                values = max(values or 0, len(info.values))
        if values:
            node.selectivity = min(node.selectivity, 1.0 / values)

    @staticmethod
    def read_rel(toks: list[Token], i: int, rel: _Rel) -> int:
        end = _closing(toks, i)
        inner = toks[i + 1 : end]
        j = 1 if inner and inner[0].kind == "ident" else 0
        while j + 1 < len(inner) and inner[j].kind == "op" and inner[j].text in (":", "|"):
            if inner[j + 1].kind == "ident":
                rel.types.append(inner[j + 1].text)
            j += 2
        if j < len(inner) and inner[j].kind == "op" and inner[j].text == "*":
            j += 1
            lower, upper = 1, None
            if j < len(inner) and inner[j].kind == "number":
                lower = upper = int(float(inner[j].text))
                j += 1
            if j < len(inner) and inner[j].kind == "op" and inner[j].text == "..":
                upper = None
                j += 1
                if j < len(inner) and inner[j].kind == "number":
                    upper = int(float(inner[j].text))
            if upper is None:
                raise _Unreadable("unbounded variable-length relationship")
            rel.lower, rel.upper = lower, upper
        return end + 1


# -- token helpers ------------------------------------------------------------------------------------------


def _word(t: Token) -> str:
    return t.text.upper() if t.kind == "ident" else ""


def _nesting(toks: list[Token]) -> Iterator[tuple[Token, int]]:
    """Each token with its bracket depth; a bracket has the depth of what surrounds it."""
    depth = 0
    for t in toks:
        if t.kind == "op" and t.text in ")]}":
            depth -= 1
        yield t, depth
        if t.kind == "op" and t.text in "([{":
            depth += 1


def _closing(toks: list[Token], i: int) -> int:
    """Index of the bracket closing the one at ``toks[i]``."""
    for j, (t, depth) in enumerate(_nesting(toks[i:])):
        if j > 0 and depth == 0 and t.kind == "op" and t.text in ")]}":
            return i + j
    raise _Unreadable("unbalanced brackets")


def _braced(toks: list[Token], i: int) -> list[Token]:
    return toks[i + 1 : _closing(toks, i)]


def _split_clauses(toks: list[Token]) -> list[tuple[str, list[Token]]]:
    """(clause word, its tokens) at bracket depth 0; OPTIONAL MATCH is one clause, ORDER BY keeps BY."""
    out: list[tuple[str, list[Token]]] = []
    depths = [depth for _, depth in _nesting(toks)]
    word: str | None = None
    body: list[Token] = []
    i = 0
    while i < len(toks):
        t, depth = toks[i], depths[i]
        w = _word(t)
        after_dot = i > 0 and toks[i - 1].kind == "op" and toks[i - 1].text == "."
        is_key = i + 1 < len(toks) and toks[i + 1].kind == "op" and toks[i + 1].text == ":"
        if depth == 0 and w in _CLAUSES and not after_dot and not is_key:
            if word is not None:
                out.append((word, body))
            elif body:
                raise _Unreadable("text before the first clause")
            word, body = w, []
            if w == "OPTIONAL" and i + 1 < len(toks) and _word(toks[i + 1]) == "MATCH":
                i += 1
            i += 1
            continue
        body.append(t)
        i += 1
    if word is not None:
        out.append((word, body))
    merged: list[tuple[str, list[Token]]] = []
    for w, b in out:  # WHERE belongs to the MATCH before it
        if w == "WHERE" and merged and merged[-1][0] in ("MATCH", "OPTIONAL"):
            merged[-1] = (merged[-1][0], [*merged[-1][1], Token("ident", "WHERE", 0, 0), *b])
        else:
            merged.append((w, b))
    return merged


def _split_where(body: list[Token]) -> tuple[list[Token], list[Token]]:
    for i, (t, depth) in enumerate(_nesting(body)):
        if depth == 0 and _word(t) == "WHERE":
            return body[:i], body[i + 1 :]
    return body, []


def _where_anchors(where: list[Token]) -> dict[str, float]:
    """Variables a WHERE pins by ``v.nodeSymbol = x`` (1 row) or ``v.nodeSymbol IN [..]`` (its length)."""
    out: dict[str, float] = {}
    n = len(where)
    for i in range(n - 3):
        a, dot, key, op = where[i], where[i + 1], where[i + 2], where[i + 3]
        if not (a.kind == "ident" and dot.text == "." and key.text == ont.SYMBOL_KEY):
            continue
        if op.kind == "op" and op.text == "=":
            out[a.text] = 1.0
        elif _word(op) == "IN" and i + 4 < n:
            if where[i + 4].kind == "op" and where[i + 4].text == "[":
                out[a.text] = float(max(1, sum(1 for t in _braced(where, i + 4) if t.text == ",") + 1))
            else:
                out[a.text] = UNKNOWN_LIST
    for i in range(2, n - 2):  # x = v.nodeSymbol
        if where[i].text == "." and where[i + 1].text == ont.SYMBOL_KEY and where[i - 2].text == "=":
            out[where[i - 1].text] = 1.0
    return out


def _map_entries(toks: list[Token], i: int) -> list[tuple[str, int]]:
    """(key, index of its value) of the map literal opening at ``toks[i]``."""
    out = []
    for j, (t, depth) in enumerate(_nesting(toks[i : _closing(toks, i)]), start=i):
        if (
            depth == 1
            and t.kind == "ident"
            and toks[j + 1].kind == "op"
            and toks[j + 1].text == ":"
            and toks[j - 1].text in ("{", ",")
        ):
            out.append((t.text, j + 2))
    return out


def _projection_items(body: list[Token]) -> tuple[list[list[Token]], list[Token]]:
    """The comma-separated items of a WITH/RETURN and the tail from ORDER/SKIP/LIMIT/WHERE on."""
    items: list[list[Token]] = [[]]
    for i, (t, depth) in enumerate(_nesting(body)):
        if depth == 0 and _word(t) in ("ORDER", "SKIP", "LIMIT", "WHERE"):
            return [x for x in items if x], body[i:]
        if depth == 0 and t.kind == "op" and t.text == ",":
            items.append([])
            continue
        items[-1].append(t)
    return [x for x in items if x], []


def _item_name(item: list[Token]) -> str | None:
    if len(item) >= 2 and _word(item[-2]) == "AS" and item[-1].kind == "ident":
        return item[-1].text
    if len(item) == 1 and item[0].kind == "ident":
        return item[0].text
    return None


def _is_aggregate(item: list[Token], k: int) -> bool:
    t = item[k]
    return (
        t.kind == "ident"
        and t.text.lower() in _AGGREGATES
        and k + 1 < len(item)
        and item[k + 1].kind == "op"
        and item[k + 1].text == "("
    )


def _limit(tail: list[Token]) -> float | None:
    for i, t in enumerate(tail):
        if _word(t) == "LIMIT" and i + 1 < len(tail) and tail[i + 1].kind == "number":
            return float(tail[i + 1].text)
    return None


def _number(body: list[Token], default: float) -> float:
    return float(body[0].text) if body and body[0].kind == "number" else default


def _alias(body: list[Token]) -> str | None:
    for i, t in enumerate(body[:-1]):
        if _word(t) == "AS" and body[i + 1].kind == "ident":
            return body[i + 1].text
    return None


def _yielded(body: list[Token]) -> set[str]:
    names: set[str] = set()
    for i, t in enumerate(body):
        if t.kind == "ident" and (i + 1 >= len(body) or body[i + 1].text in (",",)) and i > 0:
            names.add(t.text)
    return names


def estimate_cost(
    cypher: str,
    schema: GraphSchema,
    params: Mapping[str, Any] | None = None,
    *,
    threshold: float = HEAVY_ROWS,
) -> CostEstimate:
    """The estimated intermediate rows of ``cypher`` over a graph with ``schema`` (see module docstring)."""
    estimator = _Estimator(schema, params or {})
    try:
        work, _ = estimator.query(tokenize(cypher), set())
    except (_Unreadable, IndexError, ValueError, OverflowError) as exc:
        return CostEstimate(
            math.inf, f"not estimated ({exc or type(exc).__name__}): heavy to be safe", threshold
        )
    if not math.isfinite(work):
        return CostEstimate(math.inf, "unbounded estimate", threshold)
    verdict = "over" if work > threshold else "within"
    return CostEstimate(work, f"~{work:.3g} rows {verdict} the {threshold:.3g}-row cheap limit", threshold)
