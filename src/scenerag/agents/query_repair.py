"""Repair the commonest mistakes small models make in scene-graph Cypher, before the query runs.

Rules (each only fires when the schema proves the original cannot match anything):

1. A class used as a label: ``(s:Sign)`` where ``Sign`` is no label but ``sign`` is a listed value of
   ``Object.class`` becomes ``(s:Object {class: 'sign'})``.
2. A string literal that is not a stored value of any listed property but equals one up to case or a plural
   ``s``: ``'Lounge'`` becomes ``'lounge'``.
3. A class value given as a symbol: ``{nodeSymbol: 'lounge'}`` / ``r.nodeSymbol = 'lounge'`` where
   ``lounge`` is a class value becomes ``{class: 'lounge'}`` / ``r.class = 'lounge'``; and the other way
   round, a symbol given as a class (``{class: 'R5'}``) is matched on ``nodeSymbol``.
4. A key no node has, with a value that says which key was meant: ``{classSymbol: 'R5'}`` is matched
   on ``nodeSymbol``, ``{kind: 'lounge'}`` on ``class``.
5. Alternatives inside a property map, ``{class: 'pet' OR class: 'animal'}``: ``o.class IN [...]``.

Every rewrite is reported back to the model, so it also learns the right form.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Mapping

from scenerag.graph import ontology as ont
from scenerag.store.cypher import Token, analyze, tokenize
from scenerag.store.schema import GraphSchema


def cypher_string(value: str) -> str:
    """``value`` as a single-quoted Cypher string literal (backslashes and quotes escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def repair_query(query: str, schema: GraphSchema) -> tuple[str, list[str]]:
    """``(repaired query, notes)``; the query is returned unchanged with no notes when nothing applies."""
    if not schema.node_counts:
        return query, []
    query, notes = alternatives_in_map(query)
    query, more = center_arguments(query)
    notes += more
    toks = tokenize(query)
    edits: list[tuple[int, int, str]] = []
    labels = set(schema.node_counts)
    known_keys = {k for props in schema.node_properties.values() for k in props}
    known_keys |= {k for props in schema.rel_properties.values() for k in props}

    def is_op(i: int, text: str) -> bool:
        return 0 <= i < len(toks) and toks[i].kind == "op" and toks[i].text == text

    for i, tok in enumerate(toks):
        # 1. label that is really a class value: '(' [var] ':' Label
        in_node = is_op(i - 2, "(") or (i >= 2 and toks[i - 2].kind == "ident" and is_op(i - 3, "("))
        owner = (
            schema.value_owner(tok.text)
            if tok.kind == "ident" and is_op(i - 1, ":") and in_node and tok.text not in labels
            else None
        )
        if owner is not None:
            label, key, value = owner
            if is_op(i + 1, "{"):
                sep = "" if is_op(i + 2, "}") else ", "
                edits.append((tok.start, toks[i + 1].end, f"{label} {{{key}: {cypher_string(value)}{sep}"))
            else:
                edits.append((tok.start, tok.end, f"{label} {{{key}: {cypher_string(value)}}}"))
            notes.append(
                f"{tok.text} is not a label: rewrote (:{tok.text}) as (:{label} {{{key}: '{value}'}})"
            )
        # 2./3. string literals
        if tok.kind == "string":
            literal = tok.text[1:-1]
            owner = schema.value_owner(literal)
            key_tok = _key_before(toks, i)
            if key_tok is not None and key_tok.text not in known_keys:
                # {classSymbol: 'R5'}: no label has that key; the value says which one was meant
                key = ont.SYMBOL_KEY if ont.has_symbol_shape(literal) else (owner[1] if owner else None)
                if key is not None:
                    edits.append((key_tok.start, key_tok.end, key))
                    notes.append(f"no node has a '{key_tok.text}' property: matched '{literal}' on {key}")
                    continue
            if (
                owner is None
                and key_tok is not None
                and key_tok.text == ont.CLASS_KEY
                and ont.has_symbol_shape(literal)
            ):
                edits.append((key_tok.start, key_tok.end, ont.SYMBOL_KEY))
                notes.append(f"'{literal}' is a node symbol, not a class: matched it on nodeSymbol")
            if owner is None and key_tok is not None and key_tok.text == ont.SYMBOL_KEY:
                inner = [w for w in literal.split() if ont.has_symbol_shape(w)]
                if len(inner) == 1 and inner[0] != literal:  # {nodeSymbol: 'hallway R2'}
                    edits.append((tok.start, tok.end, cypher_string(inner[0])))
                    notes.append(f"'{literal}' is no node symbol: matched its symbol '{inner[0]}'")
            if owner is None:
                continue
            _, key, value = owner
            if key_tok is not None and key_tok.text == ont.SYMBOL_KEY and key == ont.CLASS_KEY:
                edits.append((key_tok.start, key_tok.end, ont.CLASS_KEY))
                notes.append(f"'{literal}' is a class, not a nodeSymbol: matched it on class")
            if value != literal:
                edits.append((tok.start, tok.end, cypher_string(value)))
                notes.append(f"'{literal}' is not a stored value: used '{value}'")
    if not edits:
        return query, notes
    return apply_edits(query, edits), list(dict.fromkeys(notes))


def repair_mentions(
    query: str, mentions: dict[str, tuple[str, str, str]], schema: GraphSchema | None = None
) -> tuple[str, list[str]]:
    """A question's words used as stored values: ``{nodeSymbol: 'upstairs'}``, ``{class: 'bathroom 2'}``,
    ``{via: 'downstairs'}``, where entity linking said what they are (``mentions``: lower-cased mention ->
    (label, key, value), e.g. ``'upstairs' -> ('Floor', 'nodeSymbol', 'F1')``).

    On ``nodeSymbol`` / ``class`` / ``name`` of a node of the linked label the literal becomes the linked
    value under the linked key. On a node that the linked node contains (``(r:Room {name: 'downstairs'})``
    with 'downstairs' the floor F0) the filter becomes containment: ``MATCH (f0:Floor {nodeSymbol: 'F0'})
    -[:CONTAINS*]->(r)``. Anywhere else the filter names nothing stored and is dropped from its map.
    ``(query, notes)``; unchanged when nothing applies."""
    if not mentions:
        return query, []
    toks = tokenize(query)
    nodes = list(_NODE_PATTERN.finditer(query))
    edits: list[tuple[int, int, str]] = []
    notes: list[str] = []
    prefix: list[str] = []
    for i, tok in enumerate(toks):
        if tok.kind != "string" or tok.text[1:-1].lower() not in mentions:
            continue
        literal = tok.text[1:-1]
        label, key, value = mentions[literal.lower()]
        key_tok = _key_before(toks, i)
        if key_tok is None or value == literal:
            continue
        node = next((m for m in nodes if m.start() < tok.start < m.end()), None)
        node_label = node.group("l") if node is not None else None
        known = (
            {k for props in schema.node_properties.values() for k in props} if schema is not None else set()
        )
        named_by = key_tok.text in (ont.SYMBOL_KEY, ont.CLASS_KEY, "name") or (
            node is not None and bool(known) and key_tok.text not in known  # (:Object {classSymbol: 'bin'})
        )
        if named_by and node_label in (None, label):
            edits.append((key_tok.start, key_tok.end, key))
            edits.append((tok.start, tok.end, cypher_string(value)))
            notes.append(f"'{literal}' is {label} {key} '{value}' in this graph: matched {key} = '{value}'")
            continue
        if toks[i - 1].text != ":" or not _in_map(toks, i):
            continue
        start, end = key_tok.start, tok.end
        if i + 1 < len(toks) and toks[i + 1].text == ",":
            end = toks[i + 1].end
        elif i - 3 >= 0 and toks[i - 3].text == ",":
            start = toks[i - 3].start
        edits.append((start, end, ""))
        if node is not None and key == ont.SYMBOL_KEY and _holds(schema, label, node_label):
            prefix.append(_inside(label, value, node.group("v")))
            notes.append(f"'{literal}' is {label} {value}: {node.group('v')} is matched inside it")
        else:
            notes.append(
                f"'{literal}' is no {key_tok.text} value: it is {label} {key} '{value}'; dropped that filter"
            )
    if not edits:
        return query, []
    fixed = re.sub(r"\s*\{\s*\}", "", apply_edits(query, edits))  # a property map left empty
    return "".join(prefix) + fixed, notes


_CLAUSE_START = re.compile(
    r"\b(MATCH|OPTIONAL\s+MATCH|WHERE|RETURN|WITH|UNWIND|ORDER\s+BY|LIMIT|SKIP|CALL)\b", re.I
)


def carry_dropped_variables(query: str) -> tuple[str, list[str]]:
    """A value computed by one ``WITH`` and used after a later ``WITH`` that does not pass it on:
    ``WITH count(a) AS na MATCH ... WITH count(b) AS nb RETURN na > nb`` fails with "Variable 'na' not
    defined"; ``na`` is added to the later projection (``WITH na, count(b) AS nb``). Only ``AS`` names of
    earlier ``WITH`` clauses are carried, never node variables (a later MATCH may bind those anew).
    ``(query, notes)``; unchanged when nothing is dropped or the query has subqueries."""
    if re.search(r"\b(EXISTS|CALL)\s*\{", query, re.I):
        return query, []
    clauses = list(_CLAUSE_START.finditer(query))
    withs = [m for m in clauses if m.group(1).upper() == "WITH"]
    edits: list[tuple[int, int, str]] = []
    notes: list[str] = []
    defined: list[str] = []
    for i, m in enumerate(withs):
        nxt = next((c.start() for c in clauses if c.start() > m.end()), len(query))
        projection = query[m.end() : nxt]
        names = set(re.findall(r"\bAS\s+([A-Za-z_]\w*)", projection, re.I))
        bare = {
            t.strip()
            for t in projection.split(",")
            if re.fullmatch(r"\s*(DISTINCT\s+)?[A-Za-z_]\w*\s*", t, re.I)
        }
        projected = names | {re.sub(r"(?i)^DISTINCT\s+", "", b) for b in bare}
        if i > 0:
            rest = query[nxt:]
            dropped = [
                v
                for v in defined
                if v not in projected
                and re.search(rf"(?<![.\w]){v}\b(?!\s*:)", rest)
                and not re.search(rf"\bAS\s+{v}\b|\(\s*{v}\b", rest, re.I)
            ]
            if dropped:
                at = m.end() + (len(re.match(r"\s*(DISTINCT\s+)?", projection, re.I).group(0)))
                edits.append((at, at, ", ".join(dropped) + ", "))
                notes.append(f"{', '.join(dropped)} was dropped by a later WITH: passed it on")
                projected |= set(dropped)
        defined = sorted(set(defined) & projected | names)
    if not edits:
        return query, []
    return apply_edits(query, edits), notes


_SUBQUERY_ARITHMETIC = re.compile(
    r"^(?P<head>(?:OPTIONAL\s+)?MATCH\b.+?)\s+RETURN\s+(?P<a>[^()]*\([^()]*\))\s*(?P<op>[-+*/]|[<>]=?|=)\s*"
    r"\(\s*(?:OPTIONAL\s+)?MATCH\b(?P<sub>.+?)\s+RETURN\s+(?P<b>[^()]*\([^()]*\))\s*\)\s*(?:AS\s+(?P<alias>\w+))?\s*;?$",
    re.I | re.S,
)


def split_subquery_arithmetic(query: str) -> tuple[str, list[str]]:
    """``MATCH ... RETURN count(a) - (MATCH ... RETURN count(b))``, the form small models write for "how
    many more A than B" (not Cypher): rewritten as ``MATCH ... WITH count(a) AS first OPTIONAL MATCH ...
    WITH first, count(b) AS second RETURN first - second``. ``(query, notes)``."""
    m = _SUBQUERY_ARITHMETIC.match(query.strip())
    if m is None:
        return query, []
    alias = f" AS {m.group('alias')}" if m.group("alias") else ""
    fixed = (
        f"{m.group('head')} WITH {m.group('a')} AS first OPTIONAL MATCH {m.group('sub').strip()} "
        f"WITH first, {m.group('b')} AS second RETURN first {m.group('op')} second{alias}"
    )
    return fixed, ["a subquery cannot be used as a value: computed both parts with WITH and combined them"]


_OR_MAP = re.compile(
    r"\(\s*(?P<v>[A-Za-z_]\w*)\s*:\s*(?P<l>`?\w+`?)\s*\{\s*(?P<k>\w+)\s*:\s*(?P<a>'[^']*')"
    r"(?P<more>(?:\s+OR\s+(?P=k)\s*:\s*'[^']*')+)\s*\}\s*\)",
    re.I,
)


#: ``(o:Object {class: 'flora'}) OR (o:Object {class: 'flower'})``: the same node, one pattern per value
_OR_NODES = re.compile(
    r"\(\s*(?P<v>[A-Za-z_]\w*)\s*:\s*(?P<l>`?\w+`?)\s*\{\s*(?P<k>\w+)\s*:\s*(?P<a>'[^']*')\s*\}\s*\)"
    r"(?P<more>(?:\s+OR\s+\(\s*(?P=v)\s*:\s*(?P=l)\s*\{\s*(?P=k)\s*:\s*'[^']*'\s*\}\s*\))+)",
    re.I,
)


#: ``(b:Object {class: 'bin', nodeSymbol: 'O64'}) OR (b:Object {class: 'sign', nodeSymbol: 'O39'})``
_OR_NAMED_NODES = re.compile(
    r"\(\s*(?P<v>[A-Za-z_]\w*)\s*:\s*(?P<l>`?\w+`?)\s*\{[^{}]*\bnodeSymbol\s*:\s*(?P<a>'[^']*')[^{}]*\}\s*\)"
    r"(?P<more>(?:\s+OR\s+\(\s*(?P=v)\s*:\s*(?P=l)\s*\{[^{}]*\bnodeSymbol\s*:\s*'[^']*'[^{}]*\}\s*\))+)",
    re.I,
)


_CENTER_ARGUMENT = re.compile(
    r"(?P<lead>point\.distance\(\s*|,\s*)\((?P<v>[A-Za-z_]\w*)\.center\b[^()]*\)(?=\s*[,)])", re.I
)


def center_arguments(query: str) -> tuple[str, list[str]]:
    """A point built by hand from a node's center inside ``point.distance``: ``(r.center.x, r.center.y, 0)``
    or ``(r.center {x: 0.5, ...})`` is ``r.center``. ``(query, notes)``."""
    if "point.distance" not in query.lower():
        return query, []
    fixed, n = _CENTER_ARGUMENT.subn(lambda m: f"{m.group('lead')}{m.group('v')}.center", query)
    return (
        (fixed, [f"a point made from a node's center is that center: used it ({n}x)"]) if n else (query, [])
    )


_GROUP_COUNT = re.compile(
    r"(?is)^\s*MATCH\s+(?P<a>\((?P<av>\w+):\w+(?:\s*\{[^{}]*\})?\))\s*"
    r"(?P<rel><?-\[[^\]]*\]->?)\s*(?P<b>\((?P<bv>\w+)(?::\w+)?(?:\s*\{[^{}]*\})?\))\s+"
    r"RETURN\s+(?P<key>(?P=av)\.\w+(?:\s+AS\s+\w+)?)\s*,\s*"
    r"count\s*\(\s*(?P<distinct>DISTINCT\s+)?(?P<what>(?P=bv)|\*)\s*\)(?P<tail>(?:\s+AS\s+\w+)?"
    r"(?:\s+ORDER\s+BY\s+(?:(?!LIMIT)[^;])*?)?)\s*;?\s*$"
)


def count_every_group(query: str) -> tuple[str, list[str]]:
    """A count per group over one pattern (``MATCH (r:Room {class: 'hallway'})-[:CONTAINS*]->(o:Object
    {class: 'sign'}) RETURN r.nodeSymbol, count(o)``) drops the groups that hold none; "how many in each"
    asks for every group, zeros too: the pattern becomes an OPTIONAL MATCH from the groups. ``(query,
    notes)``; unchanged unless the query is exactly that shape (no WHERE: a condition on the group would
    no longer exclude it; no LIMIT: a superlative, not a breakdown)."""
    m = _GROUP_COUNT.match(query)
    if m is None:
        return query, []
    counted = f"count({m.group('distinct') or ''}{m.group('bv')})"
    fixed = (
        f"MATCH {m.group('a')} OPTIONAL MATCH ({m.group('av')}){m.group('rel')}{m.group('b')} "
        f"RETURN {m.group('key')}, {counted}{m.group('tail')}"
    )
    return fixed, ["a count per group lists the groups that hold none too: matched the pattern as optional"]


def alternatives_in_map(query: str) -> tuple[str, list[str]]:
    """``(o:Object {class: 'pet' OR class: 'animal'})`` (not Cypher: a map holds one value per key), or
    ``(o:Object {class: 'pet'}) OR (o:Object {class: 'animal'})``, becomes ``(o:Object)`` with ``o.class IN
    ['pet', 'animal']`` in its MATCH's WHERE. ``(query, notes)``."""
    m = _OR_MAP.search(query) or _OR_NODES.search(query) or _OR_NAMED_NODES.search(query)
    if m is None:
        return query, []
    if "k" in m.groupdict():
        key, values = m.group("k"), [m.group("a"), *re.findall(r"'[^']*'", m.group("more"))]
    else:  # one named node per pattern: the symbols say which (their classes only describe them)
        key, values = (
            ont.SYMBOL_KEY,
            [m.group("a"), *re.findall(r"nodeSymbol\s*:\s*('[^']*')", m.group("more"))],
        )
    condition = f"{m.group('v')}.{key} IN [{', '.join(values)}]"
    fixed = _node_with_condition(query, m.start(), m.end(), f"({m.group('v')}:{m.group('l')})", condition)
    note = f"a property map holds one value per key: matched {condition} instead"
    fixed, more = alternatives_in_map(fixed)
    return fixed.strip(), [note, *more]


def _node_with_condition(query: str, start: int, end: int, node: str, condition: str) -> str:
    """``query`` with the node pattern at ``start:end`` replaced by ``node`` and ``condition`` added to the
    WHERE of its clause (a WHERE is made where there is none)."""
    rest = query[end:]
    clause = _CLAUSE_START.search(rest)
    if clause is not None and clause.group(1).upper() == "WHERE":
        rest = rest[: clause.end()] + f" {condition} AND" + rest[clause.end() :]
    else:
        at = clause.start() if clause is not None else len(rest)
        rest = rest[:at].rstrip() + f" WHERE {condition} " + rest[at:]
    return (query[:start] + node + rest).strip()


_WHERE_SYMBOL = re.compile(r"\b(?P<v>[A-Za-z_]\w*)\.nodeSymbol\s*=\s*'(?P<s>[^']*)'")
_NODE_CONTAINS = re.compile(r"\b(?P<a>[A-Za-z_]\w*)\s+CONTAINS\s+(?P<b>[A-Za-z_]\w*)\b(?!\s*[.(])")
_SYMBOL_ORDER = re.compile(
    r"(?P<all>(?:\bAND\s+)?\b(?P<a>[A-Za-z_]\w*)\.nodeSymbol\s*[<>]=?\s*(?P<b>[A-Za-z_]\w*)\.nodeSymbol\b"
    r"(?:\s+AND\b)?)",
    re.I,
)


def _hop(schema: GraphSchema, upper: str, lower: str) -> str | None:
    """The CONTAINS hop from ``upper`` down to ``lower`` nodes (``-[:CONTAINS]->`` when direct, else
    ``-[:CONTAINS*]->``), or None when ``upper`` does not hold ``lower``."""
    if (upper, ont.CONTAINS, lower) in schema.patterns:
        return f"-[:{ont.CONTAINS}]->"
    return f"-[:{ont.CONTAINS}*]->" if _holds(schema, upper, lower) else None


def repair_symbol_layers(
    query: str, symbol_labels: dict[str, str], schema: GraphSchema
) -> tuple[str, list[str]]:
    """A node of one layer pinned to the symbol of another: ``(p:MeshPlace {nodeSymbol: 'O300'})`` or
    ``WHERE p.nodeSymbol = 'O300'`` means the place that holds O300 ("the place under O300"), and
    ``(o:Object {nodeSymbol: 'R5'})`` the objects R5 holds. The pin becomes that containment.
    ``symbol_labels``: symbol -> the label of its node. ``(query, notes)``; unchanged when no rule fires."""
    query, collapsed = _named_holder(query, symbol_labels)
    labels = {m.group("v"): m.group("l") for m in _NODE_PATTERN.finditer(query)}

    def mislabelled(var: str, label: str) -> bool:
        """Whether ``var`` sits under a CONTAINS from a layer that cannot hold ``label`` (``(o:Object)
        -[:CONTAINS*]->(b:Room {nodeSymbol: 'O275'})``): its label is wrong, not its symbol."""
        parent = re.search(
            rf"\(\s*\w*\s*:\s*(?P<pl>\w+)[^()]*\)\s*-\[[^\]]*{ont.CONTAINS}[^\]]*\]->\s*\(\s*{re.escape(var)}\b",
            query,
        )
        return parent is not None and not _holds(schema, parent.group("pl"), label)

    def containment(var: str, label: str, symbol: str) -> str | None:
        actual = symbol_labels.get(symbol)
        if actual is None or actual == label or label not in schema.node_counts:
            return None
        pin = f"(:{actual} {{{ont.SYMBOL_KEY}: {cypher_string(symbol)}}})"
        down = _hop(schema, label, actual)
        if down is not None:
            return f"({var}){down}{pin}"
        up = _hop(schema, actual, label)
        return f"{pin}{up}({var})" if up is not None else None

    edits: list[tuple[int, int, str]] = []
    prefix: list[str] = []
    notes: list[str] = []
    for m in _NODE_PATTERN.finditer(query):
        props = m.group("props") or ""
        pinned = _SYMBOL_PROP.search(props)
        if pinned is None:
            continue
        var, label, symbol = m.group("v"), m.group("l"), pinned.group(1)
        actual = symbol_labels.get(symbol)
        if actual is not None and actual != label and mislabelled(var, label):
            edits.append((m.start("l"), m.end("l"), actual))
            notes.append(f"{symbol} is a {actual}: matched ({var}:{actual}), not ({var}:{label})")
            continue
        pattern = containment(var, label, symbol)
        if pattern is None:
            continue
        edits.append((m.start(), m.end(), _without_symbol(m)))
        prefix.append(f"MATCH {pattern} ")
        notes.append(
            f"{symbol} is a {symbol_labels[symbol]}, not a {label}: matched the {label} by containment"
        )
    for m in _WHERE_SYMBOL.finditer(query):
        var, symbol = m.group("v"), m.group("s")
        pattern = containment(var, labels[var], symbol) if var in labels else None
        if pattern is None:
            continue
        edits.append((m.start(), m.end(), pattern))
        notes.append(
            f"{symbol} is a {symbol_labels[symbol]}, not a {labels[var]}: matched the {labels[var]} by containment"
        )
    if not edits:
        return query, collapsed
    return "".join(prefix) + apply_edits(query, edits), list(dict.fromkeys(collapsed + notes))


_HOLDER_OF_NAMED = re.compile(
    r"\(\s*(?P<a>[A-Za-z_]\w*)\s*:\s*`?(?P<l>\w+)`?\s*\{\s*nodeSymbol\s*:\s*'(?P<s>[^']+)'\s*\}\s*\)"
    r"\s*<-\s*\[\s*:\s*CONTAINS\s*\]\s*-\s*\(\s*(?P<p>[A-Za-z_]\w*)\s*:\s*`?(?P<pl>\w+)`?\s*\)"
)


def _named_holder(query: str, symbol_labels: dict[str, str]) -> tuple[str, list[str]]:
    """``(a:Object {nodeSymbol: 'P3167'})<-[:CONTAINS]-(p:MeshPlace)`` where P3167 *is* a MeshPlace and ``a``
    is used nowhere else: the holder ``p`` was meant to be P3167 itself -> ``(p:MeshPlace {nodeSymbol:
    'P3167'})``. ``(query, notes)``."""
    notes: list[str] = []
    for m in reversed(list(_HOLDER_OF_NAMED.finditer(query))):
        symbol, a = m.group("s"), m.group("a")
        if symbol_labels.get(symbol) != m.group("pl") or m.group("l") == m.group("pl"):
            continue
        if re.search(rf"\b{a}\b", query[: m.start()] + query[m.end() :]):
            continue
        query = (
            query[: m.start()]
            + f"({m.group('p')}:{m.group('pl')} {{nodeSymbol: '{symbol}'}})"
            + query[m.end() :]
        )
        notes.append(
            f"{symbol} is a {m.group('pl')}: matched ({m.group('p')}) as {symbol}, not what it holds"
        )
    return query, notes[::-1]


def repair_node_operators(query: str, schema: GraphSchema) -> tuple[str, list[str]]:
    """Relations written with string operators between nodes: ``p5 CONTAINS p4`` (two nodes of one layer:
    they are linked by the layer's *_CONNECTED edge; of two layers: the upper holds the lower), and a
    symbol-order filter ``a.nodeSymbol < b.nodeSymbol`` where a node is pinned to a symbol (copied to count
    each pair once, it drops the named node's neighbours that sort before it). ``(query, notes)``."""
    labels = {m.group("v"): m.group("l") for m in _NODE_PATTERN.finditer(query)}
    pinned = {
        m.group("v") for m in _NODE_PATTERN.finditer(query) if _SYMBOL_PROP.search(m.group("props") or "")
    }
    pinned |= {m.group("v") for m in _WHERE_SYMBOL.finditer(query)}
    links = {
        src: rtype for (src, rtype, dst) in schema.patterns if src == dst and rtype.endswith("_CONNECTED")
    }
    edits: list[tuple[int, int, str]] = []
    notes: list[str] = []
    for m in _NODE_CONTAINS.finditer(query):
        a, b = m.group("a"), m.group("b")
        la, lb = labels.get(a), labels.get(b)
        if la is None or lb is None:
            continue
        if la == lb and la in links:
            edits.append((m.start(), m.end(), f"({a})-[:{links[la]}]-({b})"))
            notes.append(f"CONTAINS compares strings: {a} and {b} are matched as linked by {links[la]}")
        elif (hop := _hop(schema, la, lb)) is not None:
            edits.append((m.start(), m.end(), f"({a}){hop}({b})"))
            notes.append(f"CONTAINS compares strings: {b} is matched inside {a}")
    for m in _SYMBOL_ORDER.finditer(query):
        if m.group("a") in pinned or m.group("b") in pinned:
            whole = m.group("all")
            keep = "AND" if whole.upper().startswith("AND") and whole.upper().endswith("AND") else ""
            edits.append((m.start(), m.end(), f" {keep} " if keep else " "))
            notes.append("a named node is no pair to count once: dropped the symbol-order filter")
    if not edits:
        return query, []
    fixed = _without_empty_where(apply_edits(query, edits))
    return re.sub(r"\s{2,}", " ", fixed).strip(), list(dict.fromkeys(notes))


def _without_empty_where(query: str) -> str:
    """``query`` without a WHERE left with no condition by an edit (``WHERE RETURN ...``)."""
    return re.sub(r"\bWHERE\s+(?=RETURN|WITH|ORDER|MATCH|OPTIONAL|$)", "", query, flags=re.I)


_UNION = re.compile(r"\s+UNION(?:\s+ALL)?\s+", re.I)


def merge_union_by_symbol(query: str) -> tuple[str, list[str]]:
    """One query per named node, joined by UNION (``... {nodeSymbol: 'R5'} ... RETURN count(o) UNION ...
    {nodeSymbol: 'R2'} ...``): a count or list over several named nodes is one query over all of them
    (``WHERE r.nodeSymbol IN ['R5', 'R2']``); a union of per-node counts would answer with one of them.
    ``(query, notes)``; unchanged unless the parts differ in that one symbol only."""
    parts = _UNION.split(query.strip())
    if len(parts) < 2:
        return query, []
    tail = re.search(r"\bRETURN\b.*$", parts[-1], re.I | re.S)
    if (
        tail is not None
    ):  # "MATCH ... UNION MATCH ... RETURN count(o)": the last RETURN is meant for every part
        parts = [p if re.search(r"\bRETURN\b", p, re.I) else f"{p.rstrip()} {tail.group(0)}" for p in parts]
    symbols, shapes = [], set()
    for part in parts:
        found = _SYMBOL_PROP.findall(part)
        if len(found) != 1:
            return query, []
        symbols.append(found[0])
        shapes.add(_SYMBOL_PROP.sub("nodeSymbol: ?", part).strip())
    if len(shapes) != 1:
        return query, []
    node = next(
        (m for m in _NODE_PATTERN.finditer(parts[0]) if _SYMBOL_PROP.search(m.group("props") or "")), None
    )
    if node is None:
        return query, []
    var = node.group("v")
    listed = ", ".join(cypher_string(s) for s in dict.fromkeys(symbols))
    fixed = _node_with_condition(
        parts[0], node.start(), node.end(), _without_symbol(node), f"{var}.{ont.SYMBOL_KEY} IN [{listed}]"
    )
    return fixed, [f"one query per named node joined by UNION: asked once for {var} in [{listed}]"]


def _without_symbol(node: re.Match[str]) -> str:
    """A matched node pattern with its ``nodeSymbol`` entry taken out of the property map."""
    rest = re.sub(r"^\s*,\s*|\s*,\s*$", "", _SYMBOL_PROP.sub("", node.group("props") or "")).strip()
    rest = re.sub(r",\s*,", ",", rest)
    return f"({node.group('v')}:{node.group('l')}" + (f" {{{rest}}})" if rest else ")")


def _inside(label: str, symbol: str, var: str) -> str:
    """The clause that puts ``var`` inside the node ``symbol`` of ``label``, to go before a query:
    ``MATCH (ff0:Floor {nodeSymbol: 'F0'})-[:CONTAINS*]->(r) ``."""
    return f"MATCH ({label[0].lower()}{symbol.lower()}:{label} {{{ont.SYMBOL_KEY}: {cypher_string(symbol)}}})-[:CONTAINS*]->({var}) "


def _holds(schema: GraphSchema | None, upper: str, lower: str | None) -> bool:
    """Whether ``upper`` nodes contain ``lower`` nodes (directly or through other layers)."""
    return schema is not None and any(
        upper in ch and lower in ch and ch.index(upper) < ch.index(lower)
        for ch in schema.containment_chains()
    )


def _in_map(toks: list[Token], i: int) -> bool:
    """Whether token ``i`` sits inside a ``{...}`` property map (not a subquery's braces)."""
    depth = 0
    for j in range(i - 1, -1, -1):
        if toks[j].text == "}":
            depth += 1
        elif toks[j].text == "{":
            if depth == 0:
                return True
            depth -= 1
    return False


def _key_before(toks: list[Token], i: int) -> Token | None:
    """The property key a string literal is compared with: ``key: 'v'``, ``x.key = 'v'`` or ``x.key IN
    ['u', 'v']``."""
    if i >= 2 and toks[i - 1].kind == "op" and toks[i - 1].text in (":", "=") and toks[i - 2].kind == "ident":
        return toks[i - 2]
    j = i - 1
    while j >= 0 and (toks[j].kind == "string" or toks[j].text == ","):
        j -= 1  # back over the list's earlier items
    if j >= 2 and toks[j].text == "[" and toks[j - 1].text.upper() == "IN" and toks[j - 2].kind == "ident":
        return toks[j - 2]
    return None


_NODE_PATTERN = re.compile(r"\(\s*(?P<v>[A-Za-z_]\w*)\s*:\s*`?(?P<l>\w+)`?\s*(?:\{(?P<props>[^{}]*)\})?\s*\)")
_RETURNED = re.compile(
    r"\bRETURN\s+(?:DISTINCT\s+)?(?:(?P<v>\w+)\.|count\s*\(\s*(?:DISTINCT\s+)?(?P<c>\w+)\s*\))", re.I
)
_SYMBOL_PROP = re.compile(r"\bnodeSymbol\s*:\s*'([^']*)'")
_CLASS_PROP = re.compile(r"\bclass\s*:\s*'([^']*)'")


def apply_edits(query: str, edits: list[tuple[int, int, str]]) -> str:
    """``query`` with each ``(start, end, text)`` span replaced (an edit overlapping an earlier one is
    dropped)."""
    out, last = [], 0
    for start, end, text in sorted(edits):
        if start < last:
            continue
        out.append(query[last:start])
        out.append(text)
        last = end
    out.append(query[last:])
    return "".join(out)


def _distinct(query: str, r: str, s: str) -> str:
    """``query`` with ``r <> s`` added unless it compares them already."""
    if re.search(rf"\b{r}\s*<>\s*{s}\b|\b{s}\s*<>\s*{r}\b", query):
        return query
    where = re.search(r"\bWHERE\b", query, re.I)
    if where:
        return query[: where.end()] + f" {r} <> {s} AND" + query[where.end() :]
    after = max(m.end() for m in _NODE_PATTERN.finditer(query))
    return query[:after] + f" WHERE {r} <> {s}" + query[after:]


_NAMED_LINK = re.compile(
    r"\(\s*(?P<a>[A-Za-z_]\w*)\s*(?::\s*`?\w+`?)?\s*\{[^{}]*\bnodeSymbol\s*:\s*'[^']+'[^{}]*\}\s*\)\s*<?-\s*"
    r"\[[^\]]*_CONNECTED\b[^\]]*\]\s*->?\s*\(\s*(?P<b>[A-Za-z_]\w*)"
    r"|\(\s*(?P<b2>[A-Za-z_]\w*)\b[^()]*\)\s*<?-\s*\[[^\]]*_CONNECTED\b[^\]]*\]\s*->?\s*"
    r"\(\s*(?P<a2>[A-Za-z_]\w*)\s*(?::\s*`?\w+`?)?\s*\{[^{}]*\bnodeSymbol\s*:\s*'[^']+'[^{}]*\}\s*\)"
)


def return_the_neighbour(query: str, singletons: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """``MATCH (a:Room {nodeSymbol: 'R3'})-[:ROOM_CONNECTED]-(b:Room) RETURN a.nodeSymbol``: the named
    node is where the links start, its neighbours are asked for: return ``b``. A class with one node
    (``singletons``: class -> symbol; ``{class: 'lounge'}``) names a node as well. ``(query, notes)``;
    unchanged unless the query's only column is the named end of a ``*_CONNECTED`` link."""
    link = _NAMED_LINK.search(query)
    if link is None and singletons:
        named = _NAMED_LINK.pattern.replace(
            r"\bnodeSymbol\s*:\s*'[^']+'", rf"\bclass\s*:\s*'(?:{'|'.join(map(re.escape, singletons))})'"
        )
        link = re.search(named, query)
    if link is None:
        return query, []
    a, b = (link.group("a"), link.group("b")) if link.group("a") else (link.group("a2"), link.group("b2"))
    returned = re.search(rf"\bRETURN\s+(?:DISTINCT\s+)?(?P<v>{a})\.nodeSymbol\b(?!\s*,)", query, re.I)
    if returned is None or a == b:
        return query, []
    tail = re.sub(rf"\b{a}\.nodeSymbol\b", f"{b}.nodeSymbol", query[returned.start() :])
    fixed = query[: returned.start()] + tail
    return _distinct(fixed, a, b), [
        f"{a} is the node the question names: returned its neighbours {b} instead"
    ]


_NEIGHBOUR_CONTENTS = re.compile(
    r"\(\s*(?P<a>[A-Za-z_]\w*)?\s*(?P<al>:\s*`?\w+`?)?\s*\)"
    r"(?P<link>\s*<?-\s*\[\s*:\s*`?\w+_CONNECTED`?\s*\]\s*->?\s*)"
    r"(?P<b>\(\s*[A-Za-z_]\w*\s*(?::\s*`?\w+`?)?\s*\{[^{}]+\}\s*\))"
    r"(?=\s*-\s*\[\s*:\s*`?CONTAINS`?\s*\*?[\d.]*\s*\]\s*->)"
)


def contents_of_the_neighbour(query: str) -> tuple[str, list[str]]:
    """``MATCH (r:Room)-[:ROOM_CONNECTED]-(l:Room {class: 'lounge'})-[:CONTAINS*]->(o)`` with ``r`` used
    nowhere else (but to tell it from another node): the contents are read off the node the question names,
    and its neighbour only demands that one exists; what is asked for is the contents of the neighbours. The
    two ends swap places. ``(query, notes)``; unchanged unless such an idle neighbour holds the chain."""
    m = _NEIGHBOUR_CONTENTS.search(query)
    if m is None:
        return query, []
    a = m.group("a")
    rest = query[: m.start()] + query[m.end("a") :]
    if a:  # an exclusion of the named node ("not counting R3 itself") still holds of the neighbour
        rest = re.sub(rf"\b{a}(?:\.nodeSymbol\s*<>\s*'[^']*'|\s*<>\s*\w+)|\b\w+\s*<>\s*{a}\b", "", rest)
    if a and re.search(rf"\b{a}\b", rest):
        return query, []
    named = m.group("b")
    label = m.group("al") or re.search(r":\s*`?\w+`?", named).group(0)  # type: ignore[union-attr]
    link = re.sub(r"\s+", "", m.group("link"))  # the same edge read from the other end
    if link.startswith("<-"):
        link = link[1:-1] + "->"
    elif link.endswith("->"):
        link = "<" + link[:-1]
    var = a or next(f"n{i}" for i in range(100) if not re.search(rf"\bn{i}\b", query))
    fixed = query[: m.start()] + f"{named}{link}({var}{label})" + query[m.end() :]
    return fixed, [
        f"the contents were read off the named node, its neighbour {var} idle: read them off {var}"
    ]


_SIBLING = re.compile(
    r"\(\s*(?P<x>[A-Za-z_]\w*)\s*:\s*`?(?P<l>\w+)`?\s*\{[^{}]*\bnodeSymbol\s*:\s*'(?P<s>[^']+)'[^{}]*\}\s*\)"
    r"\s*<-\s*\[\s*:\s*CONTAINS\s*\]\s*-\s*\(\s*(?P<p>[A-Za-z_]\w*)(?:\s*:\s*`?\w+`?)?\s*\)"
    r"(?P<hop>\s*-\s*\[\s*:\s*CONTAINS\s*\]\s*->\s*\(\s*(?P<y>[A-Za-z_]\w*)\s*:\s*`?(?P=l)`?\s*"
    r"(?:\{\s*class\s*:\s*'(?P<c>[^']*)'\s*\})?\s*\))"
)


def drop_idle_sibling(query: str, class_of: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """``(o {nodeSymbol: 'O55'})<-[:CONTAINS]-(p)-[:CONTAINS]->(o2:Object)`` with ``o2`` used nowhere else:
    the places under O55 *that hold a second object* (two CONTAINS edges must differ), where the question
    asks for O55's places. The idle sibling (bare, or of O55's own class: "the seat O55") is dropped.
    ``class_of``: a symbol's class. ``(query, notes)``; unchanged when no rule fires."""
    m = _SIBLING.search(query)
    if m is None or re.search(rf"\b{m.group('y')}\b", query[: m.start("hop")] + query[m.end("hop") :]):
        return query, []
    if m.group("c") is not None and m.group("c") != class_of(m.group("s")):
        return query, []  # "the places holding both O55 and a lamp"
    fixed = query[: m.start("hop")] + query[m.end("hop") :]
    return fixed, [
        f"{m.group('y')} was used nowhere but demanded a second node beside {m.group('s')}: dropped it"
    ]


_TERNARY = re.compile(
    r"(?P<kw>\bRETURN\s+|\bWITH\s+|,\s*)(?P<cond>(?:(?!\b(?:RETURN|WITH|AS|WHERE|MATCH)\b)[^?:,'\"])+?)\s*\?\s*(?P<a>'[^']*'|[\w.]+)\s*:\s*(?P<b>'[^']*'|[\w.]+)"
)


_SYMBOL_AS_POINT = re.compile(
    r"'(?P<a>[A-Z]{1,2}\d+)'\s*\.\s*center\b"  # 'O300'.center
    r"|(?<=point\.distance\()\s*'(?P<b>[A-Z]{1,2}\d+)'(?=\s*,)"  # point.distance('O300', ...)
    r"|(?<=,)\s*'(?P<c>[A-Z]{1,2}\d+)'(?=\s*\))",  # point.distance(..., 'O300')
)


def symbols_as_nodes(query: str, label_of: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """A node's symbol written where the node's position is meant (``point.distance(o.center, 'O300')``,
    ``'O300'.center``): a pattern for that node is matched first and its center used; ``o <> 'O300'`` then
    compares with that node, and a variable pinned to the same symbol *and* compared with it (``(o
    {nodeSymbol: 'O300'}) ... o <> 'O300'``) is unpinned: it stands for the other nodes. ``label_of``: a
    symbol's label (None: not a node). ``(query, notes)``; unchanged when no symbol is used as a point."""
    if "point.distance" not in query.lower() and ".center" not in query:
        return query, []
    symbols = [
        sym
        for sym in dict.fromkeys(next(g for g in m.groups() if g) for m in _SYMBOL_AS_POINT.finditer(query))
        if label_of(sym)
    ]
    fixed, notes = query, []
    for symbol in symbols:
        ref = f"ref{symbol}"
        fixed = re.sub(rf"'{symbol}'\s*\.\s*center\b", f"{ref}.center", fixed)
        fixed = re.sub(
            rf"(?<=point\.distance\()\s*'{symbol}'(?=\s*,)|(?<=,)\s*'{symbol}'(?=\s*\))",
            f" {ref}.center",
            fixed,
        )
        bare = rf"(?<![.\w])([A-Za-z_]\w*)\s*<>\s*'{symbol}'"
        for var in re.findall(bare, fixed):  # (o:Object {nodeSymbol: 'O300'}) ... o <> 'O300': any other node
            fixed = re.sub(
                rf"\(\s*{var}\s*:\s*(`?\w+`?)\s*\{{\s*nodeSymbol\s*:\s*'{symbol}'\s*\}}\s*\)",
                rf"({var}:\1)",
                fixed,
            )
        fixed = re.sub(bare, rf"\1 <> {ref}", fixed)
        match = re.search(r"\bMATCH\s+", fixed, re.I)
        if match is None:
            return query, []
        node = f"({ref}:{label_of(symbol)} {{nodeSymbol: '{symbol}'}}), "
        fixed = fixed[: match.end()] + node + fixed[match.end() :]
        notes.append(f"'{symbol}' is a node's symbol, not its position: matched {symbol} and used its center")
    return fixed, notes


_SELF_GROUPED = re.compile(
    r"\bWITH\s+(?P<v>[A-Za-z_]\w*)\s*,\s*(?P<agg>count\s*\(\s*(?:DISTINCT\s+)?(?P=v)\s*\)\s+AS\s+(?P<n>\w+))"
    r"(?P<rest>\s+(?:RETURN|WITH|ORDER|WHERE)\b.*)$",
    re.I | re.S,
)


_RANKED_AGGREGATE = re.compile(
    r"\bRETURN\s+(?:DISTINCT\s+)?(?P<agg>(?:count|sum|avg|min|max)\s*\((?:[^()]|\([^()]*\))*\))"
    r"(?:\s+AS\s+(?P<alias>\w+))?\s+ORDER\s+BY\s+(?P<key>.+?)(?P<dir>\s+(?:ASC|DESC)(?:ENDING)?)?"
    r"\s+LIMIT\s+(?P<n>\d+)\s*;?\s*$",
    re.I | re.S,
)


_COUNTED_NONE = re.compile(
    r"(?<!OPTIONAL\s)\bMATCH\s+\(\s*(?P<v>[A-Za-z_]\w*)(?P<vrest>\s*(?::\s*`?\w+`?)?\s*(?:\{[^{}]*\})?\s*)\)"
    r"(?P<rel>\s*<?-\s*\[[^\]]*\]\s*->?\s*)(?P<other>\(\s*(?P<w>[A-Za-z_]\w*)[^()]*\))"
    r"(?P<where>\s+WHERE\s+(?:(?!\bWITH\b).)*?)?"
    r"(?P<tail>\s+WITH\s+(?P=v)\s*,\s*count\s*\(\s*(?:DISTINCT\s+)?(?P=w)\s*\)\s+AS\s+(?P<n>\w+)\s+WHERE\s+(?P=n)\s*"
    r"(?:=\s*0|<\s*1)(?![\d.]))",
    re.I | re.S,
)


def count_none_optionally(query: str) -> tuple[str, list[str]]:
    """``MATCH (a:MeshPlace)-[:MESH_PLACE_CONNECTED]-(b) WITH a, count(b) AS n WHERE n = 0`` keeps only the
    ``a`` that have a ``b`` (the MATCH requires one), so a count of 0 never happens: "which places have no
    neighbours" needs the pattern OPTIONAL. ``MATCH (a) OPTIONAL MATCH (a)-[...]-(b) ...``; ``(query,
    notes)``."""
    m = _COUNTED_NONE.search(query)
    if m is None:
        return query, []
    v = m.group("v")
    fixed = (
        query[: m.start()]
        + f"MATCH ({v}{m.group('vrest')}) OPTIONAL MATCH ({v}){m.group('rel')}{m.group('other')}"
        + (m.group("where") or "")
        + m.group("tail")
        + query[m.end() :]
    )
    return fixed, [
        f"count({m.group('w')}) = 0 after a MATCH that requires a {m.group('w')} never holds: the pattern made OPTIONAL"
    ]


_RETURN_TRIP = re.compile(
    r"(?P<head>\(\s*(?P<x>[A-Za-z_]\w*)\b[^()]*\)\s*<-\s*\[\s*:\s*(?P<t>\w+)\s*\]\s*-\s*\([^()]*\))"
    r"(?P<trip>\s*-\s*\[\s*:\s*(?P=t)\s*\]\s*->\s*\(\s*(?P=x)\s*\))"
)


def _without_group(query: str, m: re.Match[str], group: str) -> str:
    """``query`` without the span of ``m``'s ``group``."""
    return query[: m.start(group)] + query[m.end(group) :]


def drop_return_trip(query: str) -> tuple[str, list[str]]:
    """``(o)<-[:CONTAINS]-(p)-[:CONTAINS]->(o)`` needs two different CONTAINS edges from ``p`` to the same
    ``o`` (there is one): the walk back is dropped. ``(query, notes)``; unchanged when there is none."""
    m = _RETURN_TRIP.search(query)
    if m is None:
        return query, []
    return _without_group(query, m, "trip"), [
        f"({m.group('x')})<-[:{m.group('t')}]-(...)-[:{m.group('t')}]->({m.group('x')}) walks one edge twice: "
        "dropped the walk back"
    ]


_SELF_DISTANCE = re.compile(
    r"point\.distance\(\s*(?P<v>[A-Za-z_]\w*)\.center\s*,\s*(?P=v)\.center\s*\)", re.I
)


def holder_classes(query: str, schema: GraphSchema) -> tuple[str, list[str]]:
    """A class of an upper layer put on a lower layer's node: ``(a:MeshPlace) WHERE a.class = 'hallway'``
    (no mesh place has that class; rooms do) means the places *in* a hallway, so the filter becomes that
    containment, ``MATCH (:Room {class: 'hallway'})-[:CONTAINS*]->(a)``. ``(query, notes)``."""
    labels = {m.group("v"): m.group("l") for m in _NODE_PATTERN.finditer(query)}
    edits: list[tuple[int, int, str]] = []
    prefix: list[str] = []
    notes: list[str] = []

    def holder(var: str, value: str) -> str | None:
        label = labels.get(var)
        owner = schema.value_owner(value)
        if label is None or owner is None or owner[1] != ont.CLASS_KEY or owner[0] == label:
            return None
        own = schema.node_properties.get(label, {}).get(ont.CLASS_KEY)
        if own is not None and value in (own.values or ()):
            return None
        hop = _hop(schema, owner[0], label)
        if hop is None:
            return None
        notes.append(
            f"'{value}' is a {owner[0]} class, not a {label} one: matched the {label} inside a {value}"
        )
        return f"MATCH (:{owner[0]} {{{ont.CLASS_KEY}: {cypher_string(owner[2])}}}){hop}({var}) "

    for m in re.finditer(
        rf"(?P<and>\bAND\s+)?\b(?P<v>[A-Za-z_]\w*)\.{ont.CLASS_KEY}\s*=\s*'(?P<c>[^']*)'(?P<and2>\s+AND\b)?",
        query,
    ):
        pattern = holder(m.group("v"), m.group("c"))
        if pattern is not None:
            prefix.append(pattern)
            keep = "AND" if m.group("and") and m.group("and2") else ""
            edits.append((m.start(), m.end(), keep))
    if not edits:
        return query, []
    fixed = "".join(prefix) + apply_edits(query, edits)
    fixed = _without_empty_where(fixed)
    return re.sub(r"\s{2,}", " ", fixed), notes


_SELF_UNEQUAL = r"\b{v}\s*<>\s*\(\s*{v}\s*\)|\b{v}\s*<>\s*{v}\b"


def others_for_self_distance(query: str) -> tuple[str, list[str]]:
    """``MATCH (x:Object {class: 'bicycle'}) WHERE point.distance(x.center, x.center) < 7 RETURN count(x)``
    for "how many objects are within 7 m of the bike": the filtered node is the reference and the others
    are measured from it, so a second node of its label is matched and returned. Only where the node
    measured against itself carries a filter (a class or symbol: it is the reference). ``(query, notes)``."""
    m = _SELF_DISTANCE.search(query)
    if m is None:
        return query, []
    v = m.group("v")
    node = re.search(rf"\(\s*{v}\s*:\s*`?(?P<l>\w+)`?\s*\{{[^{{}}]+\}}\s*\)", query)
    ret = re.search(r"\bRETURN\b(?P<cols>.*?)(?=\bORDER\s+BY\b|\bLIMIT\b|$)", query, re.I | re.S)
    if node is None or ret is None or re.search(r"\bother\b", query):
        return query, []
    cols = re.sub(rf"\b{v}\b", "other", ret.group("cols"))
    fixed = query[: ret.start("cols")] + cols + query[ret.end("cols") :]
    fixed = fixed[: node.end()] + f", (other:{node.group('l')})" + fixed[node.end() :]
    fixed = _SELF_DISTANCE.sub(f"point.distance({v}.center, other.center)", fixed)
    fixed = re.sub(_SELF_UNEQUAL.format(v=v), f"other <> {v}", fixed)
    return _distinct(fixed, "other", v), [
        f"point.distance({v}.center, {v}.center) is always 0: {v} is the reference, measured the other "
        f"{node.group('l')} nodes from it"
    ]


_DISTANCE_BOUND = re.compile(
    r"point\.distance\(\s*(?P<a>[A-Za-z_]\w*)\.center\s*,\s*(?P<b>[A-Za-z_]\w*)\.center\s*\)\s*<=?\s*"
    r"(?P<bound>\d+(?:\.\d+)?)",
    re.I,
)


def exclude_the_reference(query: str) -> tuple[str, list[str]]:
    """``MATCH (b:Object {class: 'bag'}), (o:Object) WHERE point.distance(b.center, o.center) <= 2 RETURN
    count(o)`` counts the bag itself (at distance 0) among the objects "within 2 m of the bag": where a
    distance bound joins a filtered node (a class or symbol: the reference) to a node of the same label
    the query returns, ``o <> b`` is added. ``(query, notes)``; unchanged when the two are already kept
    apart, have no common label, or the query has UNION or subqueries."""
    masked = _blank_strings(query)
    if re.search(r"\b(EXISTS|CALL)\s*\{|\bUNION\b", masked, re.I):
        return query, []
    labels = var_labels(query)
    tail = return_clause(masked)
    filtered = {var for var, _ in key_filters(query, ont.CLASS_KEY) + key_filters(query, ont.SYMBOL_KEY)}
    returns_at = masked.upper().rfind("RETURN")
    for m in _DISTANCE_BOUND.finditer(masked):
        a, b = m.group("a"), m.group("b")
        where = masked.upper().rfind("WHERE", 0, m.start())
        if where < 0 or m.start() > returns_at or a == b or not labels.get(a, set()) & labels.get(b, set()):
            continue
        for ref, other in ((a, b), (b, a)):
            if ref not in filtered or not re.search(rf"\b{other}\b", tail) or re.search(rf"\b{ref}\b", tail):
                continue
            apart = rf"\b{other}\s*<>\s*{ref}\b|\b{ref}\s*<>\s*{other}\b|\bNOT\s*\(?\s*({other}\s*=\s*{ref}|{ref}\s*=\s*{other})\b"
            if re.search(apart, masked, re.I):
                return query, []
            return (
                query[: m.start()] + f"{other} <> {ref} AND " + query[m.start() :],
                [
                    f"{other} <> {ref}: the nodes within a distance of {ref} leave out {ref} itself (at distance 0)"
                ],
            )
    return query, []


_ONE_NODE = re.compile(r"\(\s*(?P<v>[A-Za-z_]\w*)\s*(?::\s*`?(?P<l>\w+)`?)?\s*\{(?P<props>[^{}]*)\}\s*\)")


def either_symbol(query: str) -> tuple[str, list[str]]:
    """``MATCH (o:Object {nodeSymbol: 'O237'}) MATCH (o:Object {nodeSymbol: 'O95'}) RETURN o.nodeSymbol ORDER
    BY o.center.z DESC LIMIT 1`` pins one node to two symbols, which no node is: where the query's first
    patterns are only that node, each with a symbol, the node is either of them (``WHERE o.nodeSymbol IN
    ['O237', 'O95']``; the symbols name the nodes, so their class filters go). ``(query, notes)``; unchanged
    otherwise."""
    head = re.match(r"(?is)\s*((?:(?:MATCH\s+)?\(\s*[^()]*\)\s*,?\s*)+)(?=\b(WHERE|WITH|RETURN)\b)", query)
    if head is None:
        return query, []
    patterns = list(_ONE_NODE.finditer(head.group(1)))
    rest = _ONE_NODE.sub("", head.group(1))
    if len(patterns) < 2 or re.sub(r"(?i)\bMATCH\b|[\s,]", "", rest):
        return query, []
    names = {m.group("v") for m in patterns}
    symbols = [re.search(rf"\b{ont.SYMBOL_KEY}\s*:\s*'([^']+)'", m.group("props")) for m in patterns]
    if len(names) != 1 or not all(symbols) or len({s.group(1) for s in symbols if s}) < 2:
        return query, []
    var, label = patterns[0].group("v"), next((m.group("l") for m in patterns if m.group("l")), None)
    listed = ", ".join(f"'{value}'" for value in dict.fromkeys(s.group(1) for s in symbols if s))
    node = f"({var}:{label})" if label else f"({var})"
    tail = query[head.end(1) :].lstrip()
    condition = f"{var}.{ont.SYMBOL_KEY} IN [{listed}]"
    if re.match(r"(?i)WHERE\b", tail):
        tail = f"WHERE {condition} AND " + tail[5:].lstrip()
    else:
        tail = f"WHERE {condition} " + tail
    return f"MATCH {node} {tail}", [
        f"{var} was pinned to {listed}, which no one node is: matched either of them"
    ]


def unpin_twice_named(query: str, singletons: Collection[str] = ()) -> tuple[str, list[str]]:
    """``(x {nodeSymbol: 'O112'}), (ref {nodeSymbol: 'O112'}) WHERE x <> ref`` asks for a node that is and
    is not O112 (no rows): the named node is the reference, the other variable (the one the query goes on
    with: returned, or carried by the first WITH) stands for every other node, so its map goes. A class
    with one node in the graph (``singletons``: "which object is closest to the bike", both variables
    ``{class: 'bicycle'}``) names a node just as well. ``(query, notes)``."""
    single = {c.lower() for c in singletons}
    pinned: dict[str, list[re.Match[str]]] = {}
    for m in _NODE_PATTERN.finditer(query):
        props = m.group("props") or ""
        if s := _SYMBOL_PROP.search(props):
            pinned.setdefault(s.group(1), []).append(m)
        elif (c := _CLASS_PROP.search(props)) and c.group(1).lower() in single:
            pinned.setdefault(f"the only {c.group(1)}", []).append(m)
    projection = re.search(
        r"\b(?:WITH|RETURN)\b(?P<p>.*?)(?=\bORDER\s+BY\b|\bWHERE\b|\bMATCH\b|$)", query, re.I | re.S
    )
    carried = projection.group("p") if projection else ""
    for name, nodes in pinned.items():
        if len(nodes) != 2:
            continue
        a, b = nodes[0].group("v"), nodes[1].group("v")
        if a == b or not re.search(rf"\b{a}\s*<>\s*{b}\b|\b{b}\s*<>\s*{a}\b", query):
            continue
        at = {v: m.start() for v in (a, b) if (m := re.search(rf"\b{v}\b", carried))}
        free = nodes[1] if at and min(at, key=lambda v: at[v]) == b else nodes[0]
        fixed = query[: free.start()] + f"({free.group('v')}:{free.group('l')})" + query[free.end() :]
        return fixed, [
            f"{a} and {b} were both pinned to {name} and told apart: {free.group('v')} is any other node"
        ]
    return query, []


_WITH_EXTREME = re.compile(
    r"\bWITH\s+(?:[^;]*?,\s*)?(?P<f>max|min)\s*\(\s*(?P<d>point\.distance\(\s*(?P<a>\w+)\.center\s*,\s*(?P<b>\w+)\.center\s*\))"
    r"\s*\)\s+AS\s+\w+\s+RETURN\s+(?:DISTINCT\s+)?(?P<r>\w+)\.nodeSymbol\s*;?\s*$",
    re.I | re.S,
)


_SHORTEST_BOUND = re.compile(
    r"(shortestPath\s*\(\s*\([^()]*\)\s*<?-\s*\[[^\]]*\*\s*(?:\d+\s*)?\.\.\s*)(\d+)", re.I
)


_SHORTEST_OPEN = re.compile(
    r"(shortestPath\s*\(\s*\([^()]*\)\s*<?-\s*\[[^\]*]*\*)\s*(?:(\d+)\s*\.\.)?\s*(\])", re.I
)


def widen_shortest_paths(query: str) -> tuple[str, list[str]]:
    """``shortestPath((a)-[:MESH_PLACE_CONNECTED*..10]-(b))``: a small upper bound turns a long route into
    "no route"; a shortest path search stops at the shortest anyway, so the bound is raised to 200 (and set
    to 200 where there is none: the store refuses an unbounded walk)."""
    notes: list[str] = []

    def widen(m: re.Match[str]) -> str:
        if int(m.group(2)) >= 200:
            return m.group(0)
        notes.append(f"a shortest path bounded by {m.group(2)} hops misses longer routes: searched up to 200")
        return m.group(1) + "200"

    fixed = _SHORTEST_BOUND.sub(widen, query)
    # ``[:ROOM_CONNECTED*]`` (or ``*1..``) with no upper bound: refused as a whole-graph walk, though a shortest
    # path stops at the shortest; bounded by 200
    fixed, n = _SHORTEST_OPEN.subn(lambda m: m.group(1) + (m.group(2) or "") + "..200" + m.group(3), fixed)
    if n:
        notes.append("a shortest path needs an upper bound on its hops here: searched up to 200")
    return fixed, notes[:1]


_PINNED_END = r"\(\s*\w*(?::\w+)*\s*\{[^{}]*\bnodeSymbol\s*:\s*'[^']+'[^{}]*\}\s*\)"
_SHORTEST_VAR = re.compile(r"\b(\w+)\s*=\s*shortestPath\s*\(", re.I)


def length_of_one_shortest_path(query: str) -> tuple[str, list[str]]:
    """``p = shortestPath((a {nodeSymbol: 'R5'})-[...]-(b {nodeSymbol: 'R1'})) RETURN count(p)``: between two
    nodes pinned by symbol there is one shortest path, so its count is 1 whatever the route; the hops it
    takes are ``length(p)``. ``(query, notes)``; unchanged unless both ends are pinned in the pattern."""
    m = _SHORTEST_VAR.search(query)
    if m is None:
        return query, []
    start = m.end()
    depth, end = 1, start
    while end < len(query) and depth:
        depth += {"(": 1, ")": -1}.get(query[end], 0)
        end += 1
    pattern = query[start : end - 1]
    if len(re.findall(_PINNED_END, pattern)) < 2 and not (
        re.match(r"\s*\(\s*(\w+)\s*\)", pattern) and len(re.findall(_PINNED_END, query)) >= 2
    ):
        return query, []
    var = m.group(1)
    counted = re.compile(rf"\bcount\s*\(\s*(?:DISTINCT\s+)?{re.escape(var)}\s*\)", re.I)
    if not counted.search(query[end:]):
        return query, []
    fixed = query[:end] + counted.sub(f"length({var})", query[end:])
    return fixed, [
        f"one shortest path joins two named nodes, so count({var}) is 1: its hops are length({var})"
    ]


_CASE_AMONG = re.compile(
    r"\bRETURN\s+(?P<cols>(?:[^,;]+,\s*)+)?(?P<case>CASE\s+WHEN\b.+?\bEND)(?P<alias>\s+AS\s+\w+)?(?P<tail>(?:\s*,[^;]*)?)\s*;?\s*$",
    re.I | re.S,
)


_INLINE_NODE = re.compile(
    r"(?P<lead>point\.distance\(\s*[^()]*?,\s*|point\.distance\(\s*)"
    r"\(\s*(?P<v>[A-Za-z_]\w*)\s*:\s*(?P<l>`?\w+`?)\s*(?P<props>\{[^{}]*\})?\s*\)"
    r"(?P<field>\s*\.\s*center\b)?"
)


def inline_patterns(query: str) -> tuple[str, list[str]]:
    """A node pattern written as a function's argument (``point.distance(o.center, (s:Object {nodeSymbol:
    'O264'}))``, not Cypher): the pattern is matched in the first MATCH and its variable's center used in the
    call. ``(query, notes)``; unchanged when there is none or the variable is bound elsewhere already."""
    fixed, notes = query, []
    for m in list(_INLINE_NODE.finditer(query))[::-1]:
        var = m.group("v")
        rest = fixed[: m.start()] + fixed[m.end() :]
        if re.search(rf"\(\s*{re.escape(var)}\s*[:{{)]", rest):
            continue  # bound by a pattern of its own: leave it for the static check
        match = re.search(r"\bMATCH\s+", fixed, re.I)
        if match is None or match.start() > m.start():
            continue
        pattern = f"({var}:{m.group('l')}{' ' + m.group('props') if m.group('props') else ''})"
        fixed = fixed[: m.start()] + m.group("lead") + f"{var}.center" + fixed[m.end() :]
        fixed = fixed[: match.end()] + pattern + ", " + fixed[match.end() :]
        notes.append(f"the pattern {pattern} inside point.distance() is matched first; its center is used")
    return fixed, notes


_SUBQUERY_START = re.compile(r"\b(?P<kw>EXISTS|COUNT)\s*\{", re.I)


_PATH_FUNCTION = re.compile(r"\b(?:length|nodes|relationships)\s*\(\s*([A-Za-z_]\w*)\s*\)", re.I)
_VAR_LENGTH_HOP = re.compile(
    r"\(\s*[A-Za-z_]\w*[^()]*\)\s*<?-\[[^\]]*\*[^\]]*\]->?\s*\(\s*[A-Za-z_]\w*[^()]*\)"
)


def bind_path_variable(query: str) -> tuple[str, list[str]]:
    """``MATCH (a ...)-[:T*..50]-(b ...) RETURN length(s)`` with ``s`` bound nowhere: the one
    variable-length pattern is the path meant, and the length of a path between two nodes is its shortest:
    ``MATCH s = shortestPath((a ...)-[:T*..50]-(b ...))``. ``(query, notes)``; unchanged when the variable is
    bound or there is not exactly one such pattern."""
    m = _PATH_FUNCTION.search(query)
    if m is None:
        return query, []
    var = m.group(1)
    elsewhere = _PATH_FUNCTION.sub(" ", query)
    if re.search(
        rf"\b{re.escape(var)}\s*=|\bAS\s+{re.escape(var)}\b|[(\[,]\s*{re.escape(var)}\s*[:)\]]",
        elsewhere,
        re.I,
    ):
        return query, []
    hops = [
        h for h in _VAR_LENGTH_HOP.finditer(query) if not re.search(r"shortestPath\s*\($", query[: h.start()])
    ]
    if len(hops) != 1:
        return query, []
    h = hops[0]
    fixed = query[: h.start()] + f"{var} = shortestPath({h.group(0)})" + query[h.end() :]
    return fixed, [
        f"{var} was bound nowhere: it is the path of the one variable-length pattern (the shortest)"
    ]


_SELF_DISTANCE_ANY = re.compile(r"point\.distance\(\s*(?P<v>[A-Za-z_]\w*)\.center\s*,\s*(?P=v)\.center\s*\)")


def drop_idle_with(query: str) -> tuple[str, list[str]]:
    """A ``WITH a, count(p) AS n`` whose new names are never used and which drops a variable used after it
    (``... WHERE EXISTS { MATCH (p)-->() } RETURN count(DISTINCT p)``: "p not defined"): the clause does
    nothing but break the query, so it goes. ``(query, notes)``; unchanged otherwise."""
    clauses = list(_CLAUSE_START.finditer(query))
    for i, m in enumerate(clauses):
        if m.group(1).upper() != "WITH":
            continue
        end = clauses[i + 1].start() if i + 1 < len(clauses) else len(query)
        body = query[m.end() : end]
        where = re.search(r"\bWHERE\b", body, re.I)
        projection = body[: where.start()] if where else body
        names = re.findall(r"\bAS\s+([A-Za-z_]\w*)", projection, re.I)
        if not names or not _AGG_CALL_RE.search(projection):
            continue
        rest = (body[where.start() :] if where else "") + query[end:]
        if any(re.search(rf"(?<![.\w]){n}\b", rest) for n in names):
            continue
        kept = {t.strip() for t in projection.split(",") if re.fullmatch(r"\s*[A-Za-z_]\w*\s*", t)}
        before = query[: m.start()]
        bound = set(re.findall(r"\(\s*([A-Za-z_]\w*)\s*[:){]", before))
        dropped = [v for v in bound - kept if re.search(rf"(?<![.\w]){v}\b", rest)]
        if not dropped:
            continue
        fixed = query[: m.start()] + (body[where.start() :] if where else "").lstrip() + query[end:]
        fixed = re.sub(r"\s+", " ", fixed).strip()
        return fixed, [
            f"WITH {projection.strip()} computed nothing used later and dropped {', '.join(dropped)}: removed"
        ]
    return query, []


def var_labels(query: str) -> dict[str, set[str]]:
    """Each node variable of ``query`` -> the labels it is given anywhere in it (empty when it does not
    parse)."""
    try:
        return {k: set(v) for k, v in analyze(query).node_vars.items()}
    except Exception:
        return {}


def return_clause(query: str) -> str:
    """The query from its last ``RETURN`` on (empty when it has none)."""
    at = query.upper().rfind("RETURN")
    return query[at:] if at >= 0 else ""


def key_filters(query: str, key: str) -> list[tuple[str, str]]:
    """``(variable, value)`` for each filter of ``query`` on the property ``key``, in a node's map
    (``(o:Object {class: 'bin'})``) or a WHERE equality (``o.class = 'bin'``), once each in order."""
    in_map = [
        (m.group(1), m.group(2))
        for m in re.finditer(rf"\((\w+)(?::\w+)*\s*\{{[^{{}}]*?\b{key}\s*:\s*'([^']*)'", query)
    ]
    in_where = [(m.group(1), m.group(2)) for m in re.finditer(rf"\b(\w+)\.{key}\s*=\s*'([^']*)'", query)]
    return list(dict.fromkeys(in_map + in_where))


def _blank_strings(query: str) -> str:
    """``query`` with the text of its string literals blanked (same length), so brackets, braces and words
    inside them are not read as the query's."""
    return re.sub(r"'(?:[^'\\]|\\.)*'", lambda m: "'" + "_" * (len(m.group(0)) - 2) + "'", query)


_HOP = r"\s*<?-\[\s*:\s*CONTAINS\s*(?:\*\s*(?:\d*\s*(?:\.\.)?\s*\d*))?\s*\]->?\s*"
_BARE_NODE = r"\(\s*:\s*\w+\s*\)"
_CONTAINER_END = re.compile(
    rf"(?P<head>\(\s*(?P<hv>[A-Za-z_]\w*)?\s*:\s*(?P<hl>\w+)\s*\)(?:{_HOP}{_BARE_NODE})*{_HOP})(?=\()"
    rf"|(?<=\))(?P<tail>(?:{_HOP}{_BARE_NODE})*{_HOP}\(\s*(?P<tv>[A-Za-z_]\w*)?\s*:\s*(?P<tl>\w+)\s*\))"
)


def drop_unnamed_container(
    query: str, named_labels: Collection[str], schema: GraphSchema
) -> tuple[str, list[str]]:
    """A containment chain to a container the query never uses again, filters on nothing, and whose layer
    the question never names (``MATCH (r:Room)-[:CONTAINS*]->(o:Object {class: 'seating'}) RETURN
    count(o)`` for "how many seats on this floor") only drops what no such container holds: the chain goes,
    leaving its other end. ``(query, notes)``; unchanged inside subqueries and maps (``EXISTS {...}`` is a
    condition), for layers in ``named_labels``, and where the dropped end is not a layer that holds the
    other (a chain down to ``(:Object)`` asks for places that hold something)."""
    for m in _CONTAINER_END.finditer(query):
        head = m.group("head") is not None
        var, label = (m.group("hv"), m.group("hl")) if head else (m.group("tv"), m.group("tl"))
        if label in named_labels:
            continue
        end = re.match(r"\(\s*(?P<v>[A-Za-z_]\w*)?\s*(?::\s*(?P<l>\w+))?", query[m.end() :]) if head else None
        if not head:
            end = re.search(r"\(\s*(?P<v>[A-Za-z_]\w*)?\s*(?::\s*(?P<l>\w+))?[^()]*\)$", query[: m.start()])
        if end is None:
            continue
        others = {end.group("l")} if end.group("l") else var_labels(query).get(end.group("v") or "", set())
        if not any(_holds(schema, label, other) for other in others):
            continue
        if var and len(re.findall(rf"(?<![\w.']){re.escape(var)}\b", query)) != 1:
            continue
        before = query[: m.start()]
        if before.count("{") != before.count("}") or before.count("[") != before.count("]"):
            continue
        clauses = re.findall(r"\b(OPTIONAL\s+MATCH|MATCH|WITH|WHERE|RETURN|UNWIND|ORDER)\b", before, re.I)
        if not clauses or clauses[-1].upper() != "MATCH":
            continue  # only a plain MATCH's pattern (an OPTIONAL MATCH's or a WHERE's changes nothing or is a test)
        fixed = query[: m.start()] + query[m.end() :]
        again = re.search(r",\s*\((?P<v>[A-Za-z_]\w*)\)(?=\s*(?:WHERE|WITH|RETURN|MATCH|OPTIONAL|$))", fixed)
        if again and re.search(rf"\({again.group('v')}[:)\s]", fixed[: again.start()]):
            fixed = fixed[: again.start()] + fixed[again.end() :]  # "(o:Object), (o)": the bare repeat goes
        return fixed, [
            f"the question never names a {label}: a count or list over the whole graph keeps what no "
            f"{label} holds (dropped the join to an unused {label})"
        ]
    return query, []


def _node_pattern(name: str) -> str:
    return rf"(?P<{name}>\(\s*(?P<{name}v>[A-Za-z_]\w*)\s*(?::\s*`?\w+`?)?\s*(?:\{{[^{{}}]*\}})?\s*\))"


_MEASURED_PAIR = re.compile(
    _node_pattern("a")
    + rf"(?P<up>{_HOP})"
    + r"\(\s*:\s*`?(?P<ml>\w+)`?\s*\)"
    + rf"(?P<down>{_HOP})"
    + _node_pattern("b")
)


def unjoin_measured_pair(query: str, named_labels: Collection[str]) -> tuple[str, list[str]]:
    """Two nodes held side by side by an unnamed container of a layer the question never names, whose distance the
    query measures (``(x {class: 'bed'})-[:CONTAINS*]-(:MeshPlace)-[:CONTAINS*]->(y) WHERE point.distance(
    x.center, y.center) < 1.0``): the join keeps only what shares a container, where the distance is what is
    asked. The two are matched apart. ``(query, notes)``; unchanged for a layer in ``named_labels``."""
    for m in _MEASURED_PAIR.finditer(query):
        a, b, label = m.group("av"), m.group("bv"), m.group("ml")
        if (
            label in named_labels
            or m.group("up").rstrip().endswith(">")
            or m.group("down").lstrip().startswith("<")
        ):
            continue  # one holds the other ("the lounge's objects"): not two held side by side
        measured = (
            rf"point\.distance\s*\(\s*(?:{a}\.center\s*,\s*{b}\.center|{b}\.center\s*,\s*{a}\.center)\s*\)"
        )
        if not re.search(measured, query, re.I):
            continue
        fixed = query[: m.start()] + m.group("a") + ", " + m.group("b") + query[m.end() :]
        return fixed, [
            f"the question never names a {label}: the distance between {a} and {b} is asked, not that they "
            f"share a {label} (matched them apart)"
        ]
    return query, []


_JOINED_SUBQUERY = re.compile(r"\s+(?:OR|AND)\s+(?:NOT\s+)?(?:EXISTS|COUNT)\s*\{", re.I)


def close_open_subqueries(query: str) -> tuple[str, list[str]]:
    """``WHERE EXISTS { MATCH a OR EXISTS { MATCH b } RETURN ...`` (a subquery left open before the next one
    is joined to it) gets its ``}`` back before the OR/AND, and one left open at the end before the last
    RETURN. ``(query, notes)``; unchanged when the braces balance (string literals are not counted)."""
    masked = _blank_strings(query)
    missing = masked.count("{") - masked.count("}")
    if missing <= 0:
        return query, []
    inserts: list[int] = []
    stack: list[bool] = []  # True: a subquery's brace, False: a map's
    i = 0
    while i < len(masked):
        joined = _JOINED_SUBQUERY.match(masked, i)
        if joined and stack and stack[-1] and len(inserts) < missing:
            inserts.append(i)
            stack.pop()
        ch = masked[i]
        if ch == "{":
            stack.append(bool(re.search(r"\b(?:EXISTS|COUNT)\s*$", masked[:i], re.I)))
        elif ch == "}" and stack:
            stack.pop()
        i += 1
    if len(inserts) < missing and stack and all(stack):
        last = [m.start() for m in re.finditer(r"\s+RETURN\b", masked, re.I)]
        if last and (not inserts or last[-1] > inserts[-1]):
            inserts += [last[-1]] * (missing - len(inserts))
    if not inserts:
        return query, []
    fixed = query
    for at in sorted(inserts, reverse=True):
        fixed = fixed[:at] + " }" + fixed[at:]
    return fixed, ["a subquery was left open: closed its brace before what follows it"]


_RETURN_COMPARISON = re.compile(
    r"\bRETURN\s+(?P<a>[A-Za-z_]\w*)\s*(?P<op>>=|<=|>|<)\s*(?P<b>[A-Za-z_]\w*)(?:\s+AS\s+\w+)?\s*;?\s*$", re.I
)


def one_hop(query: str, connection: tuple[list[str], str, str] | None) -> tuple[str, list[str]]:
    """A variable-length hop over the edge the question's words mean as one hop ("the hallway *next to* the
    lounge": ``[:ROOM_CONNECTED*]``) becomes one hop. ``(query, notes)``; unchanged without such words, and
    where the query measures a path's length (``length(p)``: a route "through directly connected rooms" has
    many hops; one hop's length is always 1)."""
    if connection is None or re.search(r"\blength\s*\(", query, re.I):
        return query, []
    words, _, edge = connection
    fixed = re.sub(rf"\[\s*(\w*)\s*:\s*{edge}\s*\*\s*(?:1?\s*\.\.\s*\d*)?\s*\]", rf"[\1:{edge}]", query)
    if fixed == query:
        return query, []
    return fixed, [f"{words[0]!r} means one {edge} hop: matched one"]


_PATTERN_VAR = re.compile(r"\(\s*([A-Za-z_]\w*)\s*[:){]")
_CLAUSE_WORD = re.compile(
    r"\b(?:OPTIONAL\s+MATCH|MATCH|WHERE|WITH|RETURN|ORDER\s+BY|UNWIND|LIMIT|SKIP)\b", re.I
)


def _top_level_split(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` (a pattern) outside brackets."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        sep = re.match(separator, text[i:], re.I) if depth == 0 else None
        if sep and sep.end() > 0:
            parts.append(text[start:i])
            i += sep.end()
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def unrelated_nodes(query: str) -> list[str]:
    """Node variables the query matches but never relates to what it returns: a pattern of its own (``MATCH
    (o:Object {class: 'storage'}), (b:Object {class: 'bed'})``) that no condition, ordering or returned
    expression joins to the rest; it only asks that such a node exists. Empty when every pattern is joined,
    or the query is one this reading cannot follow (subqueries, UNION, CALL)."""
    if re.search(r"\{\s*(?:OPTIONAL\s+)?MATCH\b|\bUNION\b|\bCALL\b", query, re.I):
        return []
    masked = _blank_strings(query)
    cuts = [m.start() for m in _CLAUSE_WORD.finditer(masked)] + [len(masked)]
    groups: list[set[str]] = []
    returned: set[str] = set()

    def join(names: set[str]) -> None:
        touching = [g for g in groups if g & names]
        merged = set(names).union(*touching)
        for g in touching:
            groups.remove(g)
        groups.append(merged)

    known: set[str] = set()
    for start, end in itertools.pairwise(cuts):
        clause = masked[start:end]
        word = _CLAUSE_WORD.match(clause)
        kind = re.sub(r"\s+", " ", word.group(0).upper()) if word else ""
        body = clause[word.end() :] if word else clause
        if kind in ("MATCH", "OPTIONAL MATCH"):
            for piece in _top_level_split(body, r","):
                names = set(_PATTERN_VAR.findall(piece)) | (
                    {p.group(1)} if (p := re.match(r"\s*([A-Za-z_]\w*)\s*=", piece)) else set()
                )
                known |= names
                join(names or {f"#{len(groups)}"})
            continue
        for atom in _top_level_split(body, r",|\bAND\b|\bOR\b") if kind != "RETURN" else [body]:
            names = {n for n in re.findall(r"(?<![\w.$])([A-Za-z_]\w*)\b", atom) if n in known}
            if len(names) > 1:
                join(names)
            if kind in ("RETURN", "WITH"):
                returned |= names
    if len(groups) < 2 or not returned:
        return []
    return sorted(v for g in groups if not g & returned for v in g if not v.startswith("#"))


_AGGREGATE = re.compile(r"\b(?:count|collect|sum|avg|min|max|stdev|percentile\w*)\s*\(", re.I)


def _ranks_one_row(projection: str, rest: str) -> bool:
    """Whether a WITH ``projection`` is aggregates only (no grouping key: one row) and ``rest``, the
    clauses after it, starts by ordering or limiting that row."""
    items = _top_level_split(re.sub(r"(?i)^\s*DISTINCT\s+", "", projection), ",")
    if not items or not all(_AGGREGATE.search(item) for item in items):
        return False
    return re.match(r"\s*(?:ORDER\s+BY|LIMIT|SKIP)\b", rest, re.I) is not None


def carry_dropped_nodes(query: str) -> tuple[str, list[str]]:
    """``MATCH (r:Room)-[:CONTAINS*]->(o) WITH o MATCH (r)-[:CONTAINS*]->(x)``: the WITH drops ``r``, so the
    bare ``(r)`` after it is a new variable that matches every node; a node variable a WITH without
    aggregates drops and a later pattern names bare (no label, no properties) is the one meant, so it is
    passed on (``WITH r, o``). ``(query, notes)``; unchanged when the later clauses bind it anew (a label
    or properties), when the WITH aggregates (a key would change its groups) or projects ``*``. A WITH
    that aggregates with no key and then ranks (``WITH count(o) AS n ORDER BY n DESC LIMIT 1``) ranks one
    row: its key was lost, so there the dropped node is passed on as the key. A dropped node whose property
    is read after the WITH and that no later pattern binds is passed on whatever the WITH (the query fails
    as it stands: ``WITH p, count(o) AS n ... RETURN p.nodeSymbol, r.nodeSymbol``)."""
    masked = _blank_strings(query)
    if re.search(r"\b(EXISTS|CALL)\s*\{|\bUNION\b", masked, re.I):
        return query, []
    clauses = list(_CLAUSE_START.finditer(masked))
    edits: list[tuple[int, int, str]] = []
    notes: list[str] = []
    for m in clauses:
        if m.group(1).upper() != "WITH":
            continue
        nxt = next((c.start() for c in clauses if c.start() > m.end()), len(masked))
        projection = masked[m.end() : nxt]
        if "*" in projection:
            continue
        before, rest = masked[: m.start()], masked[nxt:]
        regroups = not _AGGREGATE.search(projection) or _ranks_one_row(projection, rest)
        bound = dict.fromkeys(_PATTERN_VAR.findall(before))
        projected = set(re.findall(r"\bAS\s+([A-Za-z_]\w*)", projection, re.I)) | {
            t.strip() for t in re.sub(r"(?i)^\s*DISTINCT\s+", "", projection).split(",")
        }
        dropped = [
            v
            for v in bound
            if v not in projected
            and not re.search(rf"\bAS\s+{v}\b", rest, re.I)
            and (
                # named bare again: a new variable matching anything (only where no groups change)
                (
                    regroups
                    and re.search(rf"\(\s*{v}\s*\)", rest)
                    and not re.search(rf"\(\s*{v}\s*[:{{]", rest)
                )
                # read after it and bound nowhere after it: the query fails ("Variable not defined") as is
                or (re.search(rf"(?<![.\w]){v}\.\w", rest) and not re.search(rf"\(\s*{v}\b", rest))
            )
        ]
        if dropped:
            at = m.end() + len(re.match(r"\s*(DISTINCT\s+)?", projection, re.I).group(0))
            edits.append((at, at, ", ".join(dropped) + ", "))
            notes.append(
                f"{', '.join(dropped)} was dropped by a WITH and named again after it: passed it on "
                "(a dropped variable matches anything)"
            )
    if not edits:
        return query, []
    return apply_edits(query, edits), notes


_CONTRADICTED_LEG = re.compile(
    r"(?is)\bMATCH\s+\(\s*(?P<a>[A-Za-z_]\w*)(?P<arest>\s*(?::\s*`?\w+`?)?\s*(?:\{[^{}]*\})?\s*)\)"
    r"(?P<leg>\s*<?-\s*\[\s*(?:[A-Za-z_]\w*)?\s*:\s*(?P<t>\w+)\s*\]\s*->?\s*"
    r"\(\s*(?P<b>[A-Za-z_]\w*)?\s*(?::\s*`?(?P<bl>\w+)`?)?\s*(?:\{[^{}]*\})?\s*\))"
    r"(?=\s+WHERE\s+NOT\s+(?:EXISTS\s*\{\s*(?:MATCH\s+)?)?\(\s*(?P=a)\s*\)\s*<?-\s*\[\s*:\s*(?P=t)\s*\]\s*->?\s*"
    r"\(\s*(?::\s*`?(?P<nl>\w+)`?)?\s*\))"
)


def drop_contradicted_leg(query: str) -> tuple[str, list[str]]:
    """``MATCH (a)-[:T]-(b) WHERE NOT EXISTS { (a)-[:T]-() }`` asks for an ``a`` with a ``T`` neighbour that
    has none: it can never match. The negation says what is meant ("the ones with no neighbour"), so the
    required leg goes (``MATCH (a) WHERE NOT ...``). ``(query, notes)``; unchanged when ``b`` is used
    anywhere else, or the negated end names another label than ``b``."""
    masked = _blank_strings(query)
    m = _CONTRADICTED_LEG.search(masked)
    if m is None:
        return query, []
    b, bl, nl = m.group("b"), m.group("bl"), m.group("nl")
    if bl and nl and bl != nl:
        return query, []
    if b and re.search(rf"(?<![\w.`]){b}\b", masked[: m.start("leg")] + masked[m.end("leg") :]):
        return query, []
    return _without_group(query, m, "leg"), [
        f"({m.group('a')})-[:{m.group('t')}]-(...) is required by the MATCH and denied by the NOT: "
        "matched the nodes without it"
    ]


_SINGLE_AGGREGATE = re.compile(
    r"(?is)\bRETURN\s+(?P<distinct>DISTINCT\s+)?(?P<agg>(?:count|sum|avg|min|max)\s*\(\s*(?:DISTINCT\s+)?"
    r"(?P<inner>[^()]*(?:\([^()]*\)[^()]*)*)\))(?P<alias>\s+AS\s+\w+)?\s*;?\s*$"
)


def group_by_the_other_node(query: str) -> tuple[str, list[str]]:
    """For an answer that is a value per group (a dict): ``MATCH (r:Room {class: 'hallway'})-[:CONTAINS*]->
    (o) RETURN count(o)`` gives one total; the one other node variable of the pattern is the group, so
    it returns ``r.nodeSymbol, count(o)``. ``(query, notes)``; unchanged unless the query ends in exactly one
    aggregate with no WITH, ORDER BY or LIMIT and exactly one node variable besides the aggregated ones."""
    masked = _blank_strings(query)
    m = _SINGLE_AGGREGATE.search(masked)
    if m is None or re.search(
        r"\b(WITH|UNWIND|CALL|UNION|ORDER\s+BY|LIMIT)\b|\{\s*(?:OPTIONAL\s+)?MATCH", masked, re.I
    ):
        return query, []
    inner = set(re.findall(r"(?<![\w.$])([A-Za-z_]\w*)", m.group("inner")))
    nodes = [v for v in dict.fromkeys(_PATTERN_VAR.findall(masked[: m.start()])) if v not in inner]
    if not inner or len(nodes) != 1:
        return query, []
    key = nodes[0]
    fixed = query[: m.start()] + f"RETURN {key}.{ont.SYMBOL_KEY} AS {key}, {query[m.start('agg') :]}"
    return fixed, [f"one value per group is asked: grouped {m.group('agg').strip()} by {key}"]


def pin_named_member(query: str, named: Mapping[str, str]) -> tuple[str, list[str]]:
    """The question names one node by symbol (``named``: symbol -> its class) and never names its class on
    its own, but the query filters on the class (``(l:Object {class: 'light'})`` for "light O237"): the
    named node is meant, so the filter becomes its symbol. ``(query, notes)``; unchanged when the symbol is
    in the query already or the class is filtered more than once."""
    notes: list[str] = []
    for symbol, cls in named.items():
        if re.search(rf"'{re.escape(symbol)}'", query):
            continue
        value = re.escape(cypher_string(cls))
        spots = list(
            re.finditer(rf"(?P<key>\b{ont.CLASS_KEY}\s*:\s*|\.\s*{ont.CLASS_KEY}\s*=\s*){value}", query)
        )
        if len(spots) != 1:
            continue
        m = spots[0]
        key = m.group("key").replace(ont.CLASS_KEY, ont.SYMBOL_KEY)
        query = query[: m.start()] + key + cypher_string(symbol) + query[m.end() :]
        notes.append(f"the question names {symbol}, not every {cls}: matched {symbol}")
    return query, notes


_SQL_GROUP_BY = re.compile(
    r"\s+GROUP\s+BY\s+(?:(?!\b(?:ORDER\s+BY|LIMIT|SKIP|RETURN|WITH|MATCH|WHERE|UNION)\b)[^;])*?"
    r"(?=\s+(?:ORDER\s+BY|LIMIT|SKIP|RETURN|WITH|MATCH|WHERE|UNION)\b|\s*;?\s*$)",
    re.I | re.S,
)


def mend_sql_aggregation(query: str) -> tuple[str, list[str]]:
    """SQL's aggregation habits, which are no Cypher, read as the Cypher they mean (``(query, notes)``;
    unchanged when there are none, so a valid query is never touched):

    - ``GROUP BY kind`` goes: a ``WITH``/``RETURN`` groups by its plain (non-aggregated) items already;
    - a comma left out before an aggregate (``WITH o.class AS c count(o) AS n``) is put in;
    - a ``RETURN`` right before a ``WITH`` is a ``WITH``;
    - a ``WITH`` of aggregates over variables the ``WITH`` before it dropped (``WITH o.class AS c [GROUP BY
      c] WITH count(o) AS n``) joins that one;
    - an aggregate ordered on but not projected (``WITH o.class AS c ORDER BY count(*) DESC``) is projected;
    - a query ending in a ``WITH`` returns that clause's grouping items."""
    notes: list[str] = []
    masked = _blank_strings(query)
    spans = [(m.start(), m.end()) for m in _SQL_GROUP_BY.finditer(masked)]
    if spans:
        query = apply_edits(query, [(a, b, "") for a, b in spans])
        notes.append("GROUP BY is SQL: Cypher groups by the items beside the aggregate, so it was dropped")
    commas = [
        (m.end("prev"), m.end("prev"), ",")
        for m in _AGG_AFTER_ITEM.finditer(_blank_strings(query))
        if m.group("word").upper() not in _NOT_AN_ITEM and _in_projection(query, m.start())
    ]
    if commas:
        query = apply_edits(query, commas)
        notes.append("a comma was missing before an aggregate in a WITH/RETURN: put in")
    fixed = _restructured_projections(query)
    if fixed != query:
        query = re.sub(r"\s+", " ", fixed).strip()
        notes.append(
            "the aggregation was written as in SQL: regrouped as Cypher projections (WITH ... RETURN)"
        )
    return query, notes


_AGG_NAMES = r"(?:count|sum|avg|min|max|collect)"
_AGG_AFTER_ITEM = re.compile(rf"(?P<prev>(?P<word>\w+)|\))\s+(?={_AGG_NAMES}\s*\()", re.I)
_NOT_AN_ITEM = frozenset(
    [
        "WITH",
        "RETURN",
        "DISTINCT",
        "AS",
        "BY",
        "AND",
        "OR",
        "NOT",
        "XOR",
        "WHERE",
        "IN",
        "IS",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "ORDER",
        "DESC",
        "ASC",
    ]
)
_AGG_CALL_RE = re.compile(rf"\b{_AGG_NAMES}\s*\(", re.I)
_AGG_FULL_CALL = re.compile(rf"\b{_AGG_NAMES}\s*\((?:[^()]|\([^()]*\))*\)", re.I)


def _in_projection(query: str, at: int) -> bool:
    """Whether ``at`` lies in the item list of a top-level ``WITH``/``RETURN``."""
    clause = None
    for m in _CLAUSE_START.finditer(_blank_strings(query)[:at]):
        clause = m.group(1).upper()
    return clause in ("WITH", "RETURN")


def _top_clauses(query: str) -> list[tuple[str, int, int]]:
    """``(keyword, start, end)`` of each top-level clause of ``query`` (none inside braces)."""
    masked = _blank_strings(query)
    depth, starts = 0, []
    marks = {m.start(): m for m in _CLAUSE_START.finditer(masked)}
    for i, ch in enumerate(masked):
        depth += {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}.get(ch, 0)
        if depth == 0 and i in marks:
            starts.append(marks[i])
    return [
        (
            re.sub(r"\s+", " ", m.group(1).upper()),
            m.start(),
            starts[k + 1].start() if k + 1 < len(starts) else len(query),
        )
        for k, m in enumerate(starts)
    ]


def _item_names(items: str) -> list[tuple[str, str, bool]]:
    """``(expression, name, aggregated)`` per item of a projection's item list."""
    out = []
    for item in _top_level_split(re.sub(r"^\s*DISTINCT\b", "", items, flags=re.I), ","):
        m = re.fullmatch(r"\s*(.+?)\s+AS\s+`?(\w+)`?\s*", item, re.I | re.S)
        expr, name = (m.group(1), m.group(2)) if m else (item.strip(), item.strip().split(".")[-1])
        name = re.sub(r"\W+", "_", name).strip("_") or "value"
        out.append((expr, name, bool(_AGG_CALL_RE.search(expr))))
    return out


def _restructured_projections(query: str) -> str:
    """:func:`mend_sql_aggregation`'s clause-level mends; ``query`` itself when none applies."""
    if re.search(r"\bUNION\b", query, re.I):
        return query
    clauses = _top_clauses(query)
    kinds = [k for k, _, _ in clauses]
    # a RETURN right before a WITH is a WITH (a RETURN after RETURN is no habit but a muddle: left to fail)
    for k, (kind, a, _) in enumerate(clauses):
        if kind == "RETURN" and kinds[k + 1 : k + 2] == ["WITH"] and "RETURN" not in kinds[k + 1 :]:
            items = _aliased(query[a + len("RETURN") : clauses[k][2]])
            return _restructured_projections(query[:a] + "WITH " + items + " " + query[clauses[k][2] :])
    # a WITH of aggregates right after a WITH that dropped what they aggregate joins it
    for k in range(len(clauses) - 1):
        (kind, a, b), (nxt, c, d) = clauses[k], clauses[k + 1]
        if kind != "WITH" or nxt not in ("WITH", "RETURN"):
            continue
        items, later = query[a + 4 : b], _item_names(query[c + len(nxt) : d])
        visible = {name for _, name, _ in _item_names(items)}
        used = {
            v
            for expr, _, agg in later
            if agg
            for v in re.findall(r"(?<![.\w])([A-Za-z_]\w*)\s*(?:\.|\))", expr)
        }
        before = set(re.findall(r"\(\s*([A-Za-z_]\w*)\s*[:){]", query[:a]))
        dropped = sorted((used & before) - visible)
        if not later or not dropped or _AGG_CALL_RE.search(items) or re.match(r"\s*DISTINCT\b", items, re.I):
            continue
        if all(agg for *_, agg in later):  # the aggregate meant for the WITH before: one WITH
            joined = (
                query[:a] + "WITH " + items.strip() + ", " + query[c + len(nxt) : d].strip() + " " + query[d:]
            )
        else:  # grouped by what the WITH before kept: it carries what is aggregated too
            joined = query[:a] + "WITH " + ", ".join(dropped) + ", " + items.strip() + " " + query[b:]
        return _restructured_projections(joined)
    # an aggregate ordered on is projected first
    for k, (kind, a, b) in enumerate(clauses):
        if kind not in ("WITH", "RETURN") or k + 1 >= len(clauses) or clauses[k + 1][0] != "ORDER BY":
            continue
        _, oa, ob = clauses[k + 1]
        agg = _AGG_FULL_CALL.search(query[oa:ob])
        if agg is None:
            continue
        call = agg.group(0)
        names = _item_names(query[a + len(kind) : b])
        if any(re.sub(r"\s", "", expr).lower() == re.sub(r"\s", "", call).lower() for expr, _, _ in names):
            continue  # ordered on a projected aggregate: valid
        items = _aliased(query[a + len(kind) : b])
        head = query[:a] + "WITH " + items + f", {call} AS n_ordered "
        order = query[oa:ob].replace(call, "n_ordered")
        tail_end = (
            clauses[k + 2][2] if k + 2 < len(clauses) and clauses[k + 2][0] in ("LIMIT", "SKIP") else ob
        )
        tail = order + " " + query[ob:tail_end]
        rest = query[tail_end:]
        if kind == "RETURN":
            rest = " RETURN " + ", ".join(name for _, name, _ in names) + " " + rest
        return _restructured_projections(head + tail + rest)
    # a query ending in a WITH returns its grouping items
    last = max((k for k, c in enumerate(clauses) if c[0] in ("WITH", "RETURN")), default=None)
    if (
        last is not None
        and kinds[last] == "WITH"
        and all(x in ("WHERE", "ORDER BY", "SKIP", "LIMIT") for x in kinds[last + 1 :])
    ):
        _, a, b = clauses[last]
        names = _item_names(query[a + 4 : b])
        counted = set(re.findall(rf"{_AGG_FULL_CALL.pattern}\s+AS\s+`?(\w+)", query, re.I))
        keys = [name for _, name, agg in names if not agg and name not in counted]
        keys = keys or [name for _, name, _ in names]
        query = query[:a] + "WITH " + _aliased(query[a + 4 : b]) + " " + query[b:]
        return query.rstrip().rstrip(";") + " RETURN " + ", ".join(keys)
    return query


def _aliased(items: str) -> str:
    """A projection's item list with each expression that is no bare variable named (``o.class`` ->
    ``o.class AS class``), as a ``WITH`` requires."""
    distinct = re.match(r"\s*DISTINCT\s+", items, re.I)
    body = items[distinct.end() :] if distinct else items
    parts = []
    for item in _top_level_split(body, ","):
        expr = item.strip()
        if not re.search(r"\sAS\s+`?\w+`?$", expr, re.I) and not re.fullmatch(r"[A-Za-z_]\w*", expr):
            expr = f"{expr} AS {_item_names(expr)[0][1]}"
        parts.append(expr)
    return ("DISTINCT " if distinct else "") + ", ".join(parts)


def unname_predicate_nodes(query: str) -> tuple[str, list[str]]:
    """A pattern used as a WHERE predicate may not introduce a variable (``WHERE NOT (m)-[:CONTAINS*]->(r:Room)``:
    "r not defined"): a node variable named only there, in no MATCH, WITH or subquery, is dropped and its
    label kept. ``(query, notes)``; unchanged when there is none."""
    masked = _blank_strings(query)
    edits: list[tuple[int, int, str]] = []
    for kind, start, end in _top_clauses(query):
        if kind != "WHERE":
            continue
        for node in re.finditer(r"(?<=[-(\s>])\(\s*([A-Za-z_]\w*)\s*(?=[:)])", masked[start:end]):
            a = start + node.start()
            var = node.group(1)
            if _depth(masked, a) > 0:
                continue  # inside a subquery, which may name its own nodes
            hop = masked[a + node.end() - node.start() :].lstrip()
            around = masked[max(0, a - 2) : a]
            if not (around.endswith("-") or around.endswith(">") or re.match(r"[^)]*\)\s*<?-", hop)):
                continue  # no relationship next to it: a parenthesised expression, not a pattern
            elsewhere = masked[:a] + masked[a + node.end() - node.start() :]
            if re.search(rf"(?<![.\w]){var}\b", elsewhere):
                continue
            edits.append((a + 1, a + node.end() - node.start(), ""))
    if not edits:
        return query, []
    fixed = apply_edits(query, edits)
    return fixed, ["a pattern in WHERE may not name a new node: dropped the variable, kept the label"]


def _depth(text: str, at: int) -> int:
    """How many ``{`` are open at ``at`` in ``text``."""
    return text[:at].count("{") - text[:at].count("}")


def count_per_group_again(query: str) -> tuple[str, list[str]]:
    """``WITH o.class AS c, count(*) AS n RETURN c, count(*)``: the RETURN groups by exactly the keys the WITH
    grouped by, so each group is one row and counting again gives 1; the aggregate meant is the WITH's own,
    by its name. ``(query, notes)``; unchanged otherwise."""
    clauses = _top_clauses(query)
    for k in range(len(clauses) - 1):
        (kind, a, b), (nxt, c, d) = clauses[k], clauses[k + 1]
        if kind != "WITH" or nxt not in ("WITH", "RETURN"):
            continue
        first, then = _item_names(query[a + 4 : b]), _item_names(query[c + len(nxt) : d])
        keys = {name for _, name, agg in first if not agg}
        aggs = {re.sub(r"\s", "", expr).lower(): name for expr, name, agg in first if agg}
        if not keys or {name for _, name, agg in then if not agg} != keys:
            continue
        items = [aggs.get(re.sub(r"\s", "", expr).lower()) if agg else None for expr, _, agg in then]
        if not any(items) or any(agg and not item for (_, _, agg), item in zip(then, items, strict=True)):
            continue
        projected = ", ".join(item or expr for (expr, _, _), item in zip(then, items, strict=True))
        fixed = query[: c + len(nxt)] + " " + projected + " " + query[d:]
        return re.sub(r"\s+", " ", fixed).strip(), [
            "the aggregate was taken again per group of the same keys (1 each): used the WITH's own"
        ]
    return query, []


_RETURNED_CENTER = re.compile(
    r"(?is)\bRETURN\s+(?P<distinct>DISTINCT\s+)?(?P<v>[A-Za-z_]\w*)\.center\b(?P<rest>(?:(?!\bORDER\s+BY\b|\bLIMIT\b)"
    r"[^;])*?)(?=\s+ORDER\s+BY\b|\s+LIMIT\b|\s*;?\s*$)"
)


def symbol_for_position(query: str) -> tuple[str, list[str]]:
    """For an answer that is one name, ``RETURN a.center, b.center, point.distance(...) ORDER BY ...
    LIMIT 1`` answers with a position: the node itself is meant (``RETURN a.nodeSymbol``, same order).
    ``(query, notes)``; unchanged when the returned items name anything the rest of the query uses (``AS``)."""
    masked = _blank_strings(query)
    m = _RETURNED_CENTER.search(masked)
    if m is None or re.search(r"\bAS\b", m.group("rest"), re.I):
        return query, []
    v = m.group("v")
    fixed = query[: m.start()] + f"RETURN {m.group('distinct') or ''}{v}.{ont.SYMBOL_KEY}" + query[m.end() :]
    return fixed, [f"the answer is a node, not where it is: returned {v}.{ont.SYMBOL_KEY}"]


def drop_class_filter(query: str, values: Collection[str]) -> tuple[str, list[str]]:
    """``query`` without its filters on the class ``values`` (``{class: 'seating'}`` in a node's map,
    ``x.class = 'seating'`` in a WHERE), for a filter the question never asks for (copied from an example).
    ``(query, notes)``; unchanged when no such filter is found or one is used any other way."""
    out = query
    notes: list[str] = []
    for value in values:
        lit = rf"'{re.escape(value)}'"
        before = out
        out = re.sub(rf"\s*\{{\s*class\s*:\s*{lit}\s*\}}", "", out)  # (x:Object {class: 'v'})
        out = re.sub(rf"\bclass\s*:\s*{lit}\s*,\s*", "", out)  # {class: 'v', nodeSymbol: ...}
        out = re.sub(rf",\s*class\s*:\s*{lit}\s*(?=\}})", "", out)
        cond = rf"\w+\.class\s*(?:=\s*{lit}|IN\s*\[\s*{lit}\s*\])"  # x.class IN ['v'] is the same filter
        out = re.sub(rf"\s+AND\s+{cond}", "", out, flags=re.I)
        out = re.sub(rf"(\bWHERE\s+){cond}\s+AND\s+", r"\1", out, flags=re.I)
        out = re.sub(rf"\bWHERE\s+{cond}\s*", "", out, flags=re.I)
        if out == before or re.search(lit, out):
            return query, []
        notes.append(f"dropped the filter on {value!r}: the question never asks for it")
    return re.sub(r"\s{2,}", " ", _without_empty_where(out)).strip(), notes


_PINNED_NODE = r"\((\w+)(?::`?\w+`?)*\s*\{[^{}]*'[^']*'[^{}]*\}\)"
_PINNED_ENDS = re.compile(_PINNED_NODE + r"\s*<?-\[:\w*CONNECTED\w*\*[^\]]*\]->?\s*" + _PINNED_NODE, re.I)


def counts_pinned_ends(query: str) -> bool:
    """Whether ``query`` counts the ends of a variable-length path along one layer's edges whose two ends it
    pins by a literal (``(a {class: 'lounge'})-[:ROOM_CONNECTED*]-(b {nodeSymbol: 'R5'}) RETURN count(b)``):
    0 or 1 however far apart they are, where the question asks how many hops."""
    m = _PINNED_ENDS.search(query)
    if m is None:
        return False
    tail = return_clause(query)
    ends = "|".join(re.escape(v) for v in (m.group(1), m.group(2)))
    return bool(re.search(rf"\bcount\s*\(\s*(?:DISTINCT\s+)?(?:{ends}|\*)\s*\)", tail, re.I))


def drop_contradicted_class(
    query: str, classes_of: Callable[[str], Collection[str]]
) -> tuple[str, list[str]]:
    """A node pinned by symbol and filtered on a class it does not have (``(o:Object {class: 'bin'}) WHERE
    o.nodeSymbol = 'O64'`` for the trash can O64): the symbol says which node is meant, so the class filter,
    which can only empty the answer, goes. ``classes_of``: a symbol's classes (lower-case; empty when
    unknown, then nothing changes). ``(query, notes)``; unchanged when the class fits or its value is used
    anywhere else in the query, or the query says OR (``r.class = 'lounge' OR r.nodeSymbol = 'R5'`` pins no
    node)."""
    if re.search(r"\b(?:X?OR)\b", _blank_strings(query), re.I):
        return query, []
    filters = key_filters(query, ont.CLASS_KEY)
    wrong: list[tuple[str, str]] = []
    for var, symbol in key_filters(query, ont.SYMBOL_KEY):
        own = {c.lower() for c in classes_of(symbol)} if symbol else set()
        if not own:
            continue
        for value in (v for on, v in filters if on == var):
            if value.lower() not in own and len(re.findall(rf"'{re.escape(value)}'", query)) == 1:
                wrong.append((symbol, value))
    out, notes = query, []
    for symbol, value in wrong:
        fixed, dropped = drop_class_filter(out, [value])
        if dropped:
            out = fixed
            notes.append(
                f"{symbol} is not of class {value!r}: dropped that filter, the symbol names the node"
            )
    return out, notes


def memberless_scopes(query: str, schema: GraphSchema) -> list[tuple[str, str, list[str]]]:
    """Class filters of ``query`` that no node of their label can pass, on a node it does not return (a
    scope: ``(r:Room {class: 'floor'})-[:CONTAINS*]->(o)``): ``(label, value, that label's classes)`` each.
    Whatever the question, such a scope makes the answer empty (or a count of 0) by construction."""
    found: list[tuple[str, str, list[str]]] = []
    labels = var_labels(query)
    tail = return_clause(query)
    for var, value in key_filters(query, ont.CLASS_KEY):
        if re.search(rf"\b{re.escape(var)}\b", tail):
            continue
        for label in sorted(labels.get(var, ())):
            info = schema.node_properties.get(label, {}).get(ont.CLASS_KEY)
            if info is None or not info.values:
                continue
            if value.casefold() not in {v.casefold() for v in info.values}:
                found.append((label, value, list(info.values)))
    return found
