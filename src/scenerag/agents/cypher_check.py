"""Static checks of LLM-written Cypher against the live schema, before it runs.

Beyond the store's own validation (unknown labels / types / keys, writes, unbounded paths) this catches the
mistakes that run without error but mean nothing, and says why:

* a one-hop relationship pattern the graph never has, ``(:Room)-[:CONTAINS]->(:Object)``: rewritten to the
  transitive ``[:CONTAINS*]`` when a containment chain joins the two labels, else rejected with the patterns
  that do exist;
* containment written child to parent, ``(:Object)-[:CONTAINS*]->(:Room)`` or ``(:Object)-[:CONTAINS]->
  (:MeshPlace)``: the arrow is turned (the reverse chain exists, so the meaning is unambiguous);
* a label filtered by the one class of another label, ``(p:Object {class: 'mesh_place'})``: the label
  becomes ``MeshPlace``;
* an aggregate inside ``WHERE`` (``WHERE count(DISTINCT b) = 1 RETURN a.nodeSymbol``): computed per
  returned node with ``WITH`` first where the query is that simple, else rejected with the ``WITH ... WHERE``
  form;
* a variable used but never bound (``RETURN r.nodeSymbol`` with no ``r`` in any pattern);
* a variable-length path whose type never leads between its labels (``(:MeshPlace)-[:CONTAINS*]->
  (:MeshPlace)``) or a class value of another label (``(:Object {class: 'lounge'})``): rejected with the
  patterns or labels that do exist; between two named nodes of a query that measures distances
  (``(:Object {nodeSymbol: 'O98'})-[:CONTAINS*]->(:Object {class: 'storage'})``) the two are matched side
  by side instead;
* a one-hop edge type that never joins its two labels where exactly one other type does
  (``(:Room)-[:HAS_ELEMENT]->(:FunctionalElement)`` with only ``CONTAINS`` between them): that type;
* a ``*_CONNECTED`` edge written with an arrow from or to a named node: matched without one (the links
  are undirected);
* a layer's ``*_CONNECTED`` edge written straight to a node that layer holds (``(q:MeshPlace)-[:MESH_PLACE_
  CONNECTED]-(o:Object)``): the container is put between (``(q)-[:MESH_PLACE_CONNECTED]-(:MeshPlace)-
  [:CONTAINS]->(o)``);
* ``sum()`` of an id, label id or symbol (``sum(o.semantic_label)`` for "add up the objects"): the nodes
  are counted;
* ``count(o)`` where a variable-length path reaches ``o``: ``count(DISTINCT o)`` (an object on three places
  is reached three times);
* two patterns matching the same nodes (``(a:Object {class: 'light'}), (b:Object {class: 'light'})``)
  without ``a <> b``: added, so a node is not its own nearest neighbour at distance 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from scenerag.agents.query_repair import apply_edits, var_labels
from scenerag.graph import ontology as ont
from scenerag.store.cypher import analyze
from scenerag.store.schema import GraphSchema

__all__ = ["CheckResult", "check_cypher"]

_NODE = r"\(\s*(?P<{v}>[A-Za-z_]\w*)?\s*(?::\s*`?(?P<{l}>[A-Za-z_]\w*)`?)?\s*(?:\{{[^{{}}]*\}})?\s*\)"
_REL = (
    r"(?P<rel>(?P<left><)?-\s*\[\s*(?P<rv>[A-Za-z_]\w*)?\s*:\s*(?P<type>[A-Za-z_]\w*)\s*"
    r"(?P<star>\*[\d.\s]*)?\]\s*-(?P<right>>)?)"
)
_HOP = re.compile(_NODE.format(v="av", l="al") + r"\s*" + _REL + r"\s*" + _NODE.format(v="bv", l="bl"))
_AGG = re.compile(r"\b(count|sum|avg|min|max|collect|stdev)\s*\(", re.I)
_CLAUSE = re.compile(r"\b(WITH|RETURN|MATCH|OPTIONAL|ORDER|UNWIND|CALL)\b", re.I)
_BINDERS = re.compile(r"\b(?:AS|UNWIND\s+[^;]+?\s+AS)\s+`?([A-Za-z_]\w*)`?", re.I)
_PATH_VAR = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*(?:shortestPath|allShortestPaths)?\s*\(", re.I)
_LIST_VAR = re.compile(r"[\[(]\s*([A-Za-z_]\w*)\s+IN\b", re.I)


@dataclass
class CheckResult:
    """The query to run (possibly rewritten), what was rewritten, and the problems that block it."""

    query: str
    rewrites: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_cypher(query: str, schema: GraphSchema) -> CheckResult:
    """Check ``query`` against ``schema``; see the module docstring for what is rewritten or rejected."""
    result = CheckResult(query)
    if not schema.node_counts:
        return result
    _label_named_by_class(result, schema)
    _undirected_links(result)
    _fix_hops(result, schema)
    _distinct_pairs(result)
    _misplaced_values(result, schema)
    _summed_identifiers(result)
    _distinct_counts(result)
    _aggregates_in_where(result)
    _undirected_links(result)  # again: the aggregate's WITH may have made an end a group key
    _unbound(result)
    return result


_DIRECTED_LINK = re.compile(
    r"<-\s*(\[[^\]]*:\s*\w+_CONNECTED\b[^\]]*\])\s*-(?!>)|-\s*(\[[^\]]*:\s*\w+_CONNECTED\b[^\]]*\])\s*->"
)


def _undirected_links(result: CheckResult) -> None:
    """``(:Room {class: 'kitchen'})-[:ROOM_CONNECTED]->(r)``: a layer's links are stored one way round but
    mean both; where an end is a named node (a property map), is bound by another pattern (the places of
    one room) or is a group key of an aggregate (a place's number of links), the arrow is dropped so
    neither half of its neighbours is lost. Between two otherwise free ends the arrow stays: there it
    counts each link once (the length of a trajectory sums its pose-to-pose links)."""
    query = result.query

    def fix(m: re.Match[str]) -> str:
        before = query[: m.start()].rstrip()
        after = query[m.end() :].lstrip()
        left = before[before.rfind("(") :] if before.endswith(")") else ""
        right = after[: after.find(")") + 1] if after.startswith("(") else ""
        if "{" not in left and "{" not in right:
            ends = [_node_var(left), _node_var(right)]
            raw_after = query[m.end() :]
            span = (
                before.rfind("(") if left else m.start(),
                m.end() + len(raw_after) - len(after) + len(right),
            )
            chained = query[: span[0]].rstrip().endswith(("-", ">")) or query[span[1] :].lstrip().startswith(
                ("-", "<")
            )
            if not chained and not any(v and _tied(query, v, span) for v in ends):
                return m.group(0)
        return "-" + (m.group(1) or m.group(2)) + "-"

    fixed = _DIRECTED_LINK.sub(fix, query)
    if fixed != result.query:
        result.query = fixed
        result.rewrites.append("*_CONNECTED edges are undirected: matched them without an arrow")


_SUMMED_ID = re.compile(
    r"\bsum\s*\(\s*(?:DISTINCT\s+)?([A-Za-z_]\w*)\.(\w*(?:label|_id|Id|symbol|Symbol)|id)\s*\)", re.I
)


def _summed_identifiers(result: CheckResult) -> None:
    """``sum(o.semantic_label)`` for "add up the objects": a label id or symbol is no amount; the nodes
    are counted (``count(DISTINCT o)``)."""
    fixed = _SUMMED_ID.sub(lambda m: f"count(DISTINCT {m.group(1)})", result.query)
    if fixed != result.query:
        result.rewrites.append("an id or label is no amount to add up: counted the nodes instead")
        result.query = fixed


_VAR_LENGTH = re.compile(r"\[[^\]]*\*[^\]]*\]")
_PLAIN_COUNT = re.compile(r"\bcount\s*\(\s*(?!DISTINCT\b|\*)([A-Za-z_]\w*)\s*\)", re.I)


_VAR_LENGTH_END = re.compile(r"\[[^\]]*\*[^\]]*\]->\s*\(\s*([A-Za-z_]\w*)")
_STAR_COUNT = re.compile(r"\bcount\s*\(\s*\*\s*\)", re.I)


def _distinct_counts(result: CheckResult) -> None:
    """``count(o)`` of nodes reached by a variable-length path: a node under several parents (an object
    on three places) is reached once per path, so nodes are counted ``DISTINCT``; ``count(*)`` too, where
    one variable-length path leads down to one node that no clause groups by itself (``RETURN o.class,
    count(*)`` counts paths per class)."""
    if not _VAR_LENGTH.search(result.query):
        return
    fixed = _PLAIN_COUNT.sub(lambda m: f"count(DISTINCT {m.group(1)})", result.query)
    ends = set(_VAR_LENGTH_END.findall(fixed))
    if len(_VAR_LENGTH.findall(fixed)) == 1 and len(ends) == 1:
        (end,) = ends
        grouped = re.search(
            rf"\b(?:RETURN|WITH)\s+(?:DISTINCT\s+)?(?:[^;]*?,\s*)?{end}\s*(?:,|AS\b)", fixed, re.I
        )
        if not grouped:
            fixed = _carried_to_star_count(fixed, end)
    if fixed != result.query:
        result.rewrites.append("a variable-length path reaches a node once per path: counted DISTINCT nodes")
        result.query = fixed


_NEXT_CLAUSE = r"\b(?:WHERE|ORDER|LIMIT|SKIP|MATCH|OPTIONAL|UNWIND|WITH|RETURN)\b"


def _carried_to_star_count(query: str, end: str) -> str:
    """``count(*)`` as ``count(DISTINCT end)``, with ``end`` carried through each plain ``WITH`` between its
    path and the count that drops it (``WITH o.class AS type WITH type, count(*)``); unchanged where a
    grouping ``WITH`` drops it (its rows are groups then, no longer paths)."""
    star = _STAR_COUNT.search(query)
    path = _VAR_LENGTH.search(query)
    if star is None or path is None:
        return query
    edits: list[tuple[int, int, str]] = []
    for w in re.finditer(r"\bWITH\s+(?:DISTINCT\s+)?", query[: star.start()], re.I):
        if w.start() < path.end():
            continue
        clause = re.split(_NEXT_CLAUSE, query[w.end() : star.start()], flags=re.I)
        if len(clause) == 1:
            continue  # the count's own clause
        items = clause[0]
        if re.search(rf"(?:^|,)\s*{end}\s*(?:,|$)", items.strip()):
            continue
        if _AGG.search(items) or re.search(r"\bDISTINCT\b", query[w.start() : w.end()], re.I):
            return query
        edits.append((w.end(), w.end(), f"{end}, "))
    for a, b, text in reversed([*edits, (star.start(), star.end(), f"count(DISTINCT {end})")]):
        query = query[:a] + text + query[b:]
    return query


def _node_var(node: str) -> str | None:
    """The variable of a node pattern's text (``(p:MeshPlace)`` -> ``p``), or None."""
    m = re.match(r"\(\s*([A-Za-z_]\w*)", node)
    return m.group(1) if m else None


def _tied(query: str, var: str, span: tuple[int, int]) -> bool:
    """Whether ``var`` is bound by a pattern outside ``span`` or kept as a group key beside an aggregate."""
    rest = query[: span[0]] + " " * (span[1] - span[0]) + query[span[1] :]
    if re.search(rf"(?:\(\s*{var}\s*[:){{]|\]\s*-\s*>?\s*\(\s*{var}\b|\b{var}\s*\)\s*<?-)", rest):
        return True
    if not _AGG.search(query):
        return False
    for clause in re.finditer(
        r"\b(?:WITH|RETURN)\b(.*?)(?=\b(?:WHERE|ORDER|LIMIT|MATCH|WITH|RETURN)\b|$)", query, re.I | re.S
    ):
        keys = _AGG_CALL.sub("", clause.group(1))
        if re.search(rf"\b{var}\b", keys):
            return True
    return False


def _fix_hops(result: CheckResult, schema: GraphSchema) -> None:
    labels = var_labels(result.query)
    chains = schema.containment_chains()
    edits: list[tuple[int, int, str]] = []
    query = result.query
    pos = 0
    while True:
        m = _HOP.search(query, pos)
        if m is None:
            break
        pos = m.end("right") if m.group("right") else m.end("type")
        a = m.group("al") or _single(labels.get(m.group("av") or ""))
        b = m.group("bl") or _single(labels.get(m.group("bv") or ""))
        rtype = m.group("type")
        if not a or not b or a not in schema.node_counts or b not in schema.node_counts:
            continue
        left, right = bool(m.group("left")), bool(m.group("right"))
        layer = _link_layer(schema, rtype)
        held_var = m.group("bv") if a == layer else m.group("av")
        holder = _bound_holder(query, held_var, layer) if layer and held_var else None
        via = _link_through_container(schema, layer, a, b, m.group("rel"), holder) if layer else None
        if via is not None:
            # (:MeshPlace)-[:MESH_PLACE_CONNECTED]-(:Object): the object's place is the neighbour
            edits.append((m.start("rel"), m.end("rel"), via))
            result.rewrites.append(
                f"{rtype} joins {layer} nodes, not {a} and {b}: went through the {layer} that contains the "
                f"{b if a == layer else a}"
            )
            continue
        if m.group("star"):
            directed = left != right
            problem = _unreachable(schema, a, b, rtype, directed=directed, reverse=left and not right)
            if (
                problem
                and directed
                and not _unreachable(schema, a, b, rtype, directed=True, reverse=not (left and not right))
            ):
                edits.append((m.start("rel"), m.end("rel"), _flipped(m.group("rel"))))
                src, dst = (b, a) if left else (a, b)
                result.rewrites.append(
                    f"-[:{rtype}*]-> never leads from {src} to {dst}, only from {dst} to {src}: turned the arrow"
                )
            elif problem and _named(m.group(0)) and "point.distance" in query.lower():
                # (:Object {nodeSymbol: 'O98'})-[:CONTAINS*]->(:Object {class: 'storage'}) ... ORDER BY
                # point.distance: two nodes related by distance, not by edges: match them side by side
                edits.append((m.start("rel"), m.end("rel"), ", "))
                result.rewrites.append(
                    f"{problem}: matched the two nodes separately (they relate by distance)"
                )
            elif problem:
                result.problems.append(problem)
            continue
        if left and not right:
            src, dst = b, a
        elif right and not left:
            src, dst = a, b
        else:  # undirected: fine if either direction exists
            if (a, rtype, b) in schema.patterns or (b, rtype, a) in schema.patterns:
                continue
            src, dst = a, b
        if (src, rtype, dst) in schema.patterns:
            continue
        if rtype != ont.CONTAINS:
            joining = {t for (s, t, d) in schema.patterns if (s, d) == (src, dst)}
            if len(joining) == 1 and not m.group("rv"):
                # (:Room)-[:HAS_ELEMENT]->(:FunctionalElement) where only CONTAINS joins the two: use it
                (only,) = joining
                edits.append((m.start("type"), m.end("type"), only))
                result.rewrites.append(
                    f"({src})-[:{rtype}]->({dst}) never occurs; {src} and {dst} are joined by {only}: used it"
                )
                continue
            existing = sorted({f"(:{s})-[:{t}]->(:{d})" for (s, t, d) in schema.patterns if src in (s, d)})
            result.problems.append(
                f"({src})-[:{rtype}]->({dst}) never occurs in this graph; patterns with {src}: "
                + ", ".join(existing[:8])
            )
            continue
        forward = any(src in ch and dst in ch and ch.index(src) < ch.index(dst) for ch in chains)
        backward = any(src in ch and dst in ch and ch.index(src) > ch.index(dst) for ch in chains)
        if backward and not (left or right):  # undirected: either way round is fine once it has a *
            forward, backward = True, False
        if forward:
            rel = m.group("rel")
            edits.append(
                (m.start("rel"), m.end("rel"), rel[: rel.index("]")].rstrip() + "*" + rel[rel.index("]") :])
            )
            result.rewrites.append(
                f"({src})-[:CONTAINS]->({dst}) never occurs ({dst} is not directly inside {src}): "
                f"used -[:CONTAINS*]->"
            )
        elif backward:
            rel = _flipped(m.group("rel"))
            direct = (dst, rtype, src) in schema.patterns
            if not direct:
                rel = rel[: rel.index("]")].rstrip() + "*" + rel[rel.index("]") :]
            edits.append((m.start("rel"), m.end("rel"), rel))
            result.rewrites.append(
                f"({src})-[:CONTAINS]->({dst}) points the wrong way (CONTAINS goes from parent to child): "
                f"used ({dst})-[:CONTAINS{'' if direct else '*'}]->({src})"
            )
        else:
            existing = sorted({f"(:{s})-[:{t}]->(:{d})" for (s, t, d) in schema.patterns if src in (s, d)})
            result.problems.append(
                f"({src})-[:{rtype}]->({dst}) never occurs in this graph; patterns with {src}: "
                + ", ".join(existing[:8])
            )
    if edits:
        result.query = apply_edits(query, edits)


def _link_layer(schema: GraphSchema, rtype: str) -> str | None:
    """The label a ``*_CONNECTED`` type joins (``MESH_PLACE_CONNECTED`` -> ``MeshPlace``), or None."""
    if not rtype.endswith("_CONNECTED"):
        return None
    layers = {s for (s, t, d) in schema.patterns if t == rtype and s == d}
    return next(iter(layers)) if len(layers) == 1 else None


def _link_through_container(
    schema: GraphSchema, layer: str, a: str, b: str, rel: str, holder: str | None = None
) -> str | None:
    """``(q:MeshPlace)-[:MESH_PLACE_CONNECTED*..5]-(o:Object)``, a link of ``layer`` written straight to a
    node the layer holds: the relationship text with the container put between
    (``-[:MESH_PLACE_CONNECTED*..5]-(:MeshPlace)-[:CONTAINS]->``); None where it does not apply. Where the
    query already binds the held node's container (``holder``: ``(p:MeshPlace)-[:CONTAINS]->(o)``), the link
    starts from it in a pattern of its own (a second CONTAINS edge into ``o`` would have to be another edge:
    a node on one place would match nothing)."""
    if (a == layer) == (b == layer):
        return None
    held = b if a == layer else a
    if (layer, ont.CONTAINS, held) not in schema.patterns:
        return None
    link = rel.strip().lstrip("<").rstrip(">").strip()
    link = "-" + link.strip("-").strip() + "-"
    if holder is not None:
        return f"{link}({holder}), " if a == layer else f", ({holder}){link}"
    if a == layer:
        return f"{link}(:{layer})-[:{ont.CONTAINS}]->"
    return f"<-[:{ont.CONTAINS}]-(:{layer}){link}"


def _bound_holder(query: str, var: str, layer: str) -> str | None:
    """The variable of the ``layer`` node the query joins to ``var`` by one CONTAINS hop, if any."""
    v = re.escape(var)
    for pattern in (
        rf"\((?P<h>[A-Za-z_]\w*)\s*:\s*{layer}\b[^()]*\)\s*-\[\s*:\s*{ont.CONTAINS}\s*\]->\s*\({v}\b",
        rf"\({v}\b[^()]*\)\s*<-\[\s*:\s*{ont.CONTAINS}\s*\]-\s*\((?P<h>[A-Za-z_]\w*)\s*:\s*{layer}\b",
    ):
        m = re.search(pattern, query)
        if m is not None:
            return m.group("h")
    return None


def _named(hop: str) -> bool:
    """Whether both node patterns of a matched hop carry a property map (each is found on its own)."""
    return hop.count("{") == 2 and hop.lstrip().startswith("(") and hop.rstrip().endswith(")")


def _flipped(rel: str) -> str:
    """``-[:T*]->`` as ``<-[:T*]-`` and back."""
    rel = rel.strip()
    if rel.startswith("<"):
        return rel[1:].rstrip() + ">"
    return "<" + rel[:-1].rstrip() if rel.endswith(">") else rel


_PAIR = re.compile(
    r"\bMATCH\s+\(\s*(?P<a>[A-Za-z_]\w*)\s*(?P<pat>:\s*\w+\s*(?:\{[^{}]*\})?)\s*\)\s*,\s*"
    r"\(\s*(?P<b>[A-Za-z_]\w*)\s*(?P<pat2>:\s*\w+\s*(?:\{[^{}]*\})?)\s*\)",
    re.I,
)


def _distinct_pairs(result: CheckResult) -> None:
    """``MATCH (a:Object {class: 'light'}), (b:Object {class: 'light'})`` pairs each node with itself too
    (distance 0, "nearest" = itself): add ``a <> b`` unless the query already compares them."""
    query = result.query
    m = _PAIR.search(query)
    if m is None or " ".join(m.group("pat").split()) != " ".join(m.group("pat2").split()):
        return
    a, b = m.group("a"), m.group("b")
    if re.search(rf"\b{a}\s*<>\s*{b}\b|\b{b}\s*<>\s*{a}\b", query):
        return
    rest = query[m.end() :]
    where = re.match(r"\s*WHERE\b", rest, re.I)
    if where:
        new = query[: m.end()] + rest[: where.end()] + f" {a} <> {b} AND" + rest[where.end() :]
    else:
        new = query[: m.end()] + f" WHERE {a} <> {b}" + rest
    result.query = new
    result.rewrites.append(
        f"({a}) and ({b}) match the same nodes: added {a} <> {b} so a node is not paired with itself"
    )


def _unreachable(
    schema: GraphSchema, a: str, b: str, rtype: str, *, directed: bool, reverse: bool
) -> str | None:
    """Why ``(a)-[:rtype*]->(b)`` can never match (None when it can): ``rtype`` edges never lead from ``a``
    to ``b`` (``(:MeshPlace)-[:CONTAINS*]->(:MeshPlace)``: neighbours are ``*_CONNECTED``)."""
    src, dst = (b, a) if reverse else (a, b)
    edges = {(s, d) for (s, t, d) in schema.patterns if t == rtype}
    if not edges:
        return None  # an unknown type is the store's to report
    if not directed:
        edges |= {(d, s) for s, d in edges}
    seen, frontier = set(), {src}
    while frontier:
        nxt = {d for s, d in edges if s in frontier} - seen
        seen |= nxt
        frontier = nxt
    if dst in seen:
        return None
    joins = sorted({f"(:{s})-[:{t}]-(:{d})" for (s, t, d) in schema.patterns if {s, d} == {src, dst}})
    hint = f"; {src} and {dst} are joined by " + ", ".join(joins) if joins else ""
    return f"-[:{rtype}*]- never leads from {src} to {dst} in this graph{hint}"


def _label_named_by_class(result: CheckResult, schema: GraphSchema) -> None:
    """``(p:Object {class: 'mesh_place'})`` where ``mesh_place`` is the one class of every MeshPlace node: the
    model means that label, so the label is rewritten (``(p:MeshPlace {class: 'mesh_place'})``)."""

    def fix(m: re.Match[str]) -> str:
        label, value = m.group("label"), m.group("value")
        owner = schema.value_owner(value)
        if owner is None or owner[0] == label or owner[1] != ont.CLASS_KEY or label not in schema.node_counts:
            return m.group(0)
        info = schema.node_properties.get(owner[0], {}).get(ont.CLASS_KEY)
        if info is None or list(info.values or ()) != [owner[2]]:
            return m.group(0)
        result.rewrites.append(
            f"'{value}' is the class of every {owner[0]} node: matched (:{owner[0]}) instead of (:{label})"
        )
        return m.group(0).replace(m.group("label"), owner[0], 1)

    result.query = re.sub(
        r"\(\s*\w*\s*:\s*`?(?P<label>\w+)`?\s*\{[^{}]*\bclass\s*:\s*'(?P<value>[^']*)'[^{}]*\}",
        fix,
        result.query,
    )


def _misplaced_values(result: CheckResult, schema: GraphSchema) -> None:
    """``(o:Object {class: 'lounge'})``: a class value of another label (Room), which matches nothing."""
    for m in re.finditer(r"\(\s*\w*\s*:\s*`?(\w+)`?\s*\{([^{}]*)\}", result.query):
        label = m.group(1)
        props = schema.node_properties.get(label)
        if not props:
            continue
        for key, value in re.findall(r"(\w+)\s*:\s*'([^']*)'", m.group(2)):
            info = props.get(key)
            if info is None or not info.values or value in info.values:
                continue
            owner = schema.value_owner(value)
            if owner is not None and owner[0] != label and owner[2] == value:
                result.problems.append(
                    f"'{value}' is a {owner[0]} {owner[1]}, not a {label} {key}: match it on a {owner[0]} node "
                    f"(e.g. (r:{owner[0]} {{{owner[1]}: '{value}'}}))"
                )


def _single(labels: set[str] | None) -> str | None:
    return next(iter(labels)) if labels and len(labels) == 1 else None


def _aggregates_in_where(result: CheckResult) -> None:
    """``MATCH ... WHERE count(DISTINCT b) = 1 RETURN a.nodeSymbol``: rewritten with the aggregate computed
    per returned node first (``WITH a, count(DISTINCT b) AS n1 WHERE n1 = 1 RETURN a.nodeSymbol``) where
    the query has that one simple shape; otherwise rejected with the ``WITH ... WHERE`` form."""
    if _group_before_filter(result):
        return
    query = result.query
    for m in re.finditer(r"\bWHERE\b", query, re.I):
        end = _CLAUSE.search(query, m.end())
        body = query[m.end() : end.start() if end else len(query)]
        body = re.sub(r"(?i)\b(?:COUNT|EXISTS|COLLECT)\s*\{[^{}]*\}", "", body)  # subqueries are fine
        agg = _AGG.search(body)
        if agg:
            result.problems.append(
                f"aggregate {agg.group(1)}() inside WHERE is not allowed: compute it first, then filter, e.g. "
                "MATCH (r)-[:CONTAINS*]->(o) WITH r, count(o) AS n WHERE n > 3 RETURN r.nodeSymbol"
            )
            return


_AGG_CALL = re.compile(r"\b(?:count|sum|avg|min|max)\s*\((?:[^()]|\([^()]*\))*\)", re.I)
_SIMPLE_WHERE = re.compile(
    r"^(?P<match>\s*MATCH\b.+?)\bWHERE\b(?P<where>.+?)\bRETURN\b(?P<ret>.+?)"
    r"(?P<tail>\s+(?:ORDER\s+BY|LIMIT)\b.*)?$",
    re.I | re.S,
)


def _group_before_filter(result: CheckResult) -> bool:
    """The rewrite of :func:`_aggregates_in_where` for one MATCH, one WHERE, one RETURN of plain node
    properties; True when it applied."""
    m = _SIMPLE_WHERE.match(result.query.strip().rstrip(";"))
    if m is None or re.search(
        r"\b(WITH|MATCH|UNWIND|CALL|EXISTS)\b", m.group("where") + m.group("ret"), re.I
    ):
        return False
    if re.search(r"\bMATCH\b", m.group("match")[m.group("match").upper().find("MATCH") + 5 :], re.I):
        return False
    ret = m.group("ret")
    if _AGG.search(ret) or _AGG.search(m.group("tail") or ""):
        return False
    parts = re.split(r"\s+AND\s+", m.group("where").strip(), flags=re.I)
    plain = [p for p in parts if not _AGG.search(p)]
    filtered = [p for p in parts if _AGG.search(p)]
    if not filtered:
        return False
    keys = list(dict.fromkeys(re.findall(r"(?<![.\w])([A-Za-z_]\w*)\.\w+", re.sub(r"'[^']*'", "", ret))))
    if not keys:
        return False
    aliases: dict[str, str] = {}

    def alias(call: re.Match[str]) -> str:
        text = " ".join(call.group(0).split())
        return aliases.setdefault(text, f"n{len(aliases) + 1}")

    after = [_AGG_CALL.sub(alias, p) for p in filtered]
    if not aliases or any(_AGG.search(p) for p in after):
        return False
    head = m.group("match").rstrip() + (f" WHERE {' AND '.join(plain)}" if plain else "")
    counted = set(re.findall(r"\bcount\s*\(\s*(?:DISTINCT\s+)?(\w+)\s*\)", " ".join(aliases), re.I))
    items = [i.strip() for i in re.sub(r"(?i)^\s*DISTINCT\s+", "", ret).split(",")]
    plain_items = [re.fullmatch(r"([A-Za-z_]\w*\.\w+)(?:\s+AS\s+(\w+))?", i, re.I) for i in items]
    if counted & set(keys) and all(plain_items):
        # count(o) grouped by o is 1 for every o: "classes with one instance" groups by what RETURN reads
        named = [(pm.group(1), pm.group(2) or f"g{i + 1}") for i, pm in enumerate(plain_items) if pm]
        keys = [f"{expr} AS {name}" for expr, name in named]
        ret = ", ".join(name for _, name in named)
    projection = ", ".join([*keys, *(f"{call} AS {name}" for call, name in aliases.items())])
    result.query = (
        f"{head} WITH {projection} WHERE {' AND '.join(after)} RETURN {ret.strip()}{m.group('tail') or ''}"
    )
    result.rewrites.append(
        "an aggregate cannot go inside WHERE: computed it with WITH per returned node, then filtered"
    )
    return True


def unbound_variables(query: str) -> list[str]:
    """Variables whose properties ``query`` reads but that no pattern, WITH, UNWIND or list binds."""
    try:
        a = analyze(query)
    except Exception:
        return []
    bound = set(a.node_vars) | set(a.rel_vars)
    bound |= {m.group(1) for m in _BINDERS.finditer(query)}
    bound |= {m.group(1) for m in _PATH_VAR.finditer(query)}
    bound |= {m.group(1) for m in _LIST_VAR.finditer(query)}
    return sorted(
        {
            var
            for var, _ in a.property_refs
            if var not in bound and not var.startswith("$") and not _namespace(query, var)
        }
    )


def _namespace(query: str, name: str) -> bool:
    """Whether ``name`` is only ever the namespace of a function call (``apoc.map.fromPairs(...)``)."""
    uses = re.findall(rf"(?<![\w.$]){re.escape(name)}\.[\w.]+(\s*\()?", query)
    return bool(uses) and all(uses)


def _unbound(result: CheckResult) -> None:
    missing = unbound_variables(result.query)
    if missing:
        names = ", ".join(missing)
        result.problems.append(
            f"variable {names} is used but never bound: name it in a MATCH pattern, e.g. (r:Room) "
            "or carry it through WITH"
        )


def bind_named_classes(query: str, classes: dict[str, tuple[str, str]]) -> tuple[str, list[str]]:
    """``MATCH (x:Object) WHERE point.distance(x.center, food.center) < 2``, ``food`` never bound, for a
    question naming the food: a variable named as a class the question names (``classes``: lower-cased
    word -> (label, class value), from entity linking) is a node of that class, bound in the first MATCH.
    ``(query, notes)``."""
    first = re.search(
        r"\bMATCH\b(?P<p>.*?)(?=\b(?:WHERE|WITH|RETURN|MATCH|OPTIONAL|UNWIND|CALL)\b|$)", query, re.I | re.S
    )
    if first is None:
        return query, []
    added, notes = [], []
    for var in unbound_variables(query):
        if var.lower() in classes:
            label, value = classes[var.lower()]
            added.append(f"({var}:{label} {{{ont.CLASS_KEY}: '{value}'}})")
            notes.append(f"{var} was never bound: it is the {value} the question names")
    if not added:
        return query, []
    end = first.end("p")
    head = query[:end].rstrip()
    return head + ", " + ", ".join(added) + " " + query[end:].lstrip(), notes
