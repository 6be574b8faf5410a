"""Schema introspection with plain Cypher, so every backend (ArcadeDB, Neo4j, Memgraph) shares it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scenerag.store.schema import MAX_LISTED_VALUES, UNLISTED_KEYS, GraphSchema, PropertyInfo, value_type

RunFn = Callable[[str], list[dict[str, Any]]]

NODE_COUNTS = "MATCH (n) RETURN labels(n) AS labels, count(*) AS c"
NODE_KEYS = (
    "MATCH (n) UNWIND keys(n) AS k "
    "RETURN labels(n) AS labels, k AS key, count(*) AS c, head(collect(properties(n)[k])) AS sample"
)
PATTERNS = "MATCH (a)-[r]->(b) RETURN labels(a) AS s, type(r) AS t, labels(b) AS d, count(*) AS c"
REL_KEYS = (
    "MATCH ()-[r]->() UNWIND keys(r) AS k "
    "RETURN type(r) AS t, k AS key, count(*) AS c, head(collect(properties(r)[k])) AS sample"
)


def _label(labels: Any) -> str:
    if isinstance(labels, (list, tuple)):
        return str(labels[0]) if labels else "_Unlabelled"
    return str(labels)


def introspect(run: RunFn) -> GraphSchema:
    """Build a ``GraphSchema`` by running four aggregate queries through ``run``."""
    schema = GraphSchema()
    for row in run(NODE_COUNTS):
        label = _label(row["labels"])
        schema.node_counts[label] = schema.node_counts.get(label, 0) + int(row["c"])
    for row in run(NODE_KEYS):
        label = _label(row["labels"])
        props = schema.node_properties.setdefault(label, {})
        prev = props.get(row["key"])
        count = int(row["c"]) + (prev.count if prev else 0)
        props[row["key"]] = PropertyInfo(row["key"], value_type(row["sample"]), count)
    for row in run(PATTERNS):
        key = (_label(row["s"]), str(row["t"]), _label(row["d"]))
        schema.patterns[key] = schema.patterns.get(key, 0) + int(row["c"])
        schema.rel_counts[key[1]] = schema.rel_counts.get(key[1], 0) + int(row["c"])
    for row in run(REL_KEYS):
        props = schema.rel_properties.setdefault(str(row["t"]), {})
        props[row["key"]] = PropertyInfo(row["key"], value_type(row["sample"]), int(row["c"]))
    for rtype in schema.rel_counts:
        schema.rel_properties.setdefault(rtype, {})
    for label, props in schema.node_properties.items():
        for key, info in props.items():
            if info.type != "STRING" or key in UNLISTED_KEYS or not _plain(label) or not _plain(key):
                continue
            rows = run(
                f"MATCH (n:`{label}`) WHERE n.`{key}` IS NOT NULL RETURN DISTINCT n.`{key}` AS v LIMIT {MAX_LISTED_VALUES + 1}"
            )
            values = [r["v"] for r in rows if isinstance(r["v"], str)]
            if len(values) == len(rows) and 0 < len(values) <= MAX_LISTED_VALUES:
                info.values = sorted(values)
    return schema


def _plain(name: str) -> bool:
    return "`" not in name
