"""What a graph database holds, for validation and for prompts: ``GraphSchema`` and its text form."""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph

POINT_KEYS = (ont.CENTER_KEY, ont.BBOX_CENTER_KEY)
# Identifiers and free text: never listed as values even when there are few.
UNLISTED_KEYS = frozenset({ont.SYMBOL_KEY, ont.DESCRIPTION_KEY, "cell", "name"})
# Internal helpers kept out of prompts (still queryable): the 10 m grid key behind indexed spatial filters.
PROMPT_HIDDEN_KEYS = frozenset({"cell"})


@dataclass
class PropertyInfo:
    """A property key on one label or relationship type: its value type and how many records have it."""

    name: str
    type: str
    count: int
    #: the distinct values of a low-cardinality string property (e.g. ``class``), sorted; None if unknown/many
    values: list[str] | None = None


@dataclass
class GraphSchema:
    """Labels, relationship types, property keys (type + count) and containment chains present."""

    node_counts: dict[str, int] = field(default_factory=dict)
    rel_counts: dict[str, int] = field(default_factory=dict)
    node_properties: dict[str, dict[str, PropertyInfo]] = field(default_factory=dict)
    rel_properties: dict[str, dict[str, PropertyInfo]] = field(default_factory=dict)
    # (source label, relationship type, target label) -> count
    patterns: dict[tuple[str, str, str], int] = field(default_factory=dict)

    # -- derived --------------------------------------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        return sorted(self.node_counts)

    @property
    def rel_types(self) -> list[str]:
        return sorted(self.rel_counts)

    def property_keys(self, labels: Iterable[str] | None = None, *, rel: bool = False) -> set[str]:
        """Keys present on any of ``labels`` (all labels/types when None or empty)."""
        table = self.rel_properties if rel else self.node_properties
        chosen = list(labels or []) or list(table)
        keys: set[str] = set()
        for label in chosen:
            keys.update(table.get(label, {}))
        return keys

    def containment_chains(self) -> list[list[str]]:
        """Maximal label paths along CONTAINS edges, e.g. ``[['Room', 'MeshPlace', 'Object']]``."""
        children: dict[str, set[str]] = defaultdict(set)
        has_parent: set[str] = set()
        for (src, rtype, dst), _ in self.patterns.items():
            if rtype == ont.CONTAINS and src != dst:
                children[src].add(dst)
                has_parent.add(dst)
        roots = sorted(set(children) - has_parent) or sorted(children)
        chains: list[list[str]] = []

        def walk(path: list[str]) -> None:
            nxt = sorted(c for c in children.get(path[-1], ()) if c not in path)
            if not nxt:
                if len(path) > 1:
                    chains.append(path)
                return
            for c in nxt:
                walk([*path, c])

        for r in roots:
            walk([r])
        return chains

    def hierarchy_depth(self) -> int:
        """Longest containment chain in edges (at least 1); bounds ``[:CONTAINS*]`` exactly."""
        return max((len(c) - 1 for c in self.containment_chains()), default=1) or 1

    def value_owner(self, value: str) -> tuple[str, str, str] | None:
        """``(label, property, exact value)`` of a listed property value matching ``value`` case-insensitively
        (``'Sign'`` -> ``('Object', 'class', 'sign')``), preferring an exact match; None when none."""
        folded = value.casefold()
        best = None
        for label, props in sorted(self.node_properties.items()):
            for key, info in sorted(props.items()):
                for v in info.values or ():
                    if v == value:
                        return (label, key, v)
                    if best is None and v.casefold() in (folded, folded.rstrip("s")):
                        best = (label, key, v)
        return best

    def suggest(self, name: str, candidates: Iterable[str]) -> list[str]:
        cands = list(candidates)
        lower = {c.lower(): c for c in cands}
        if name.lower() in lower:
            return [lower[name.lower()]]
        return difflib.get_close_matches(name, cands, n=3, cutoff=0.6)

    # -- rendering ------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        def prop(p: PropertyInfo) -> dict[str, Any]:
            out: dict[str, Any] = {"type": p.type, "count": p.count}
            if p.values is not None:
                out["values"] = p.values
            return out

        return {
            "version": SCHEMA_VERSION,
            "labels": {
                k: {
                    "count": v,
                    "properties": {p.name: prop(p) for p in self.node_properties.get(k, {}).values()},
                }
                for k, v in sorted(self.node_counts.items())
            },
            "relationship_types": {
                k: {
                    "count": v,
                    "properties": {p.name: prop(p) for p in self.rel_properties.get(k, {}).values()},
                }
                for k, v in sorted(self.rel_counts.items())
            },
            "patterns": [
                {"source": s, "type": t, "target": d, "count": c}
                for (s, t, d), c in sorted(self.patterns.items())
            ],
            "containment_chains": self.containment_chains(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphSchema:
        schema = cls()
        for label, info in data.get("labels", {}).items():
            schema.node_counts[label] = int(info["count"])
            schema.node_properties[label] = {
                k: PropertyInfo(k, v["type"], int(v["count"]), v.get("values"))
                for k, v in info.get("properties", {}).items()
            }
        for rtype, info in data.get("relationship_types", {}).items():
            schema.rel_counts[rtype] = int(info["count"])
            schema.rel_properties[rtype] = {
                k: PropertyInfo(k, v["type"], int(v["count"])) for k, v in info.get("properties", {}).items()
            }
        for p in data.get("patterns", []):
            schema.patterns[(p["source"], p["type"], p["target"])] = int(p["count"])
        return schema

    def to_text(self, *, compact: bool = False) -> str:
        """Prompt-ready description: node labels with properties, relationships, containment rules.

        ``compact`` (the LLM prompt): leaves out raw lists and ids a question never filters by (RGB
        triples, polygons, instance ids; ``bbox_dim`` stays), says "node symbols" for a property whose
        values are symbols, lists at most :data:`PROMPT_LISTED_VALUES` values per property, and on graphs
        with many labels names the properties every label has once.
        """
        described = {
            label: [
                _describe(p, compact=compact)
                for p in sorted(self.node_properties.get(label, {}).values(), key=lambda p: p.name)
                if p.name not in PROMPT_HIDDEN_KEYS and not (compact and _noise(p))
            ]
            for label in self.labels
        }
        shared: list[str] = []
        if compact and len(described) >= SHARED_PROPERTY_MIN_LABELS:
            first, *rest = described.values()
            shared = [d for d in first if all(d in other for other in rest)]
        lines = ["Node labels (count) and properties:"]
        if len(shared) > 2:  # said once instead of on every label (a building has five layers)
            lines.append(f"- every label: {', '.join(shared)}")
        else:
            shared = []
        for label, descs in described.items():
            desc = ", ".join(d for d in descs if d not in shared)
            lines.append(f"- {label} ({self.node_counts[label]}): {desc}")
        lines.append("Relationships (count):")
        for (src, rtype, dst), count in sorted(self.patterns.items()):
            props = self.rel_properties.get(rtype, {})
            extra = f" {{{', '.join(f'{p.name}: {p.type}' for p in props.values())}}}" if props else ""
            lines.append(f"- (:{src})-[:{rtype}{extra}]->(:{dst}) ({count})")
        chains = self.containment_chains()
        if chains:
            lines.append("Containment hierarchy (CONTAINS goes from parent to child):")
            for chain in chains:
                lines.append("- " + "-[:CONTAINS]->".join(f"(:{c})" for c in chain))
            direct = {(s, d) for (s, t, d) in self.patterns if t == ont.CONTAINS}
            indirect: dict[str, list[str]] = {}  # container -> what it holds only through other layers
            for chain in chains:
                for i, top in enumerate(chain):
                    inner = indirect.setdefault(top, [])
                    inner += [d for d in chain[i + 2 :] if (top, d) not in direct and d not in inner]
            pairs = [(top, held) for top, inner in indirect.items() for held in inner]
            if compact and len(pairs) > 2:
                lines.append(
                    "- No direct CONTAINS edge from "
                    + " or from ".join(
                        f"{top} to {', '.join(held)}" for top, held in indirect.items() if held
                    )
                    + ": use -[:CONTAINS*]->."
                )
            else:
                lines += [
                    f"- {held} nodes are NOT directly contained in {top} nodes: "
                    f"use (:{top})-[:CONTAINS*]->(:{held})."
                    for top, held in pairs
                ]
        connected = sorted({t for (_, t, _) in self.patterns if t.endswith("_CONNECTED")})
        if connected:
            lines.append(
                "*_CONNECTED edges join neighbours within a layer and are undirected: match them without an "
                "arrow, (a)-[:" + connected[0] + "]-(b), and bound multi-hop paths (*1..5)."
            )
        has_points = any(k in props for props in self.node_properties.values() for k in POINT_KEYS)
        if has_points:
            lines.append(
                "center and bbox_center are 3D points in metres: point.distance(a.center, b.center), "
                "point({x: 1.0, y: 2.0, z: 0.0}), n.center.x; bbox_dim is [dx, dy, dz]."
            )
        return "\n".join(lines)


def _describe(p: PropertyInfo, *, compact: bool = False) -> str:
    text = f"{p.name}: {p.type}"
    if p.values and compact and all(ont.has_symbol_shape(v) for v in p.values):
        text += " (node symbols)"
    elif p.values and compact and len(p.values) > PROMPT_LISTED_VALUES:
        text += " (values: " + ", ".join(p.values[:PROMPT_LISTED_VALUES]) + f", ... {len(p.values)} in all)"
    elif p.values:
        text += " (values: " + ", ".join(p.values) + ")"
    return text


def _noise(p: PropertyInfo) -> bool:
    """A property the prompt leaves out: a raw list other than bbox_dim, or an integer id (not
    ``semantic_label``: where every object has one class, as in the apartment, it is the only kind)."""
    if p.type.startswith("LIST") and p.name != ont.BBOX_DIM_KEY:
        return True
    return p.type == "INTEGER" and p.name.endswith("_id")


PROMPT_LISTED_VALUES = 12
"""At most this many values of one property are listed in the compact (prompt) schema."""

SHARED_PROPERTY_MIN_LABELS = 4
"""From this many labels on, properties every label has are listed once in the compact schema."""


SCHEMA_VERSION = 2
"""Bumped when ``GraphSchema.to_dict`` changes; cached schemas of another version are recomputed."""

MAX_LISTED_VALUES = 30
"""String properties with at most this many distinct values have them listed in the schema."""


def value_type(value: Any) -> str:
    """Cypher-style type name of a Python value read back from a store."""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "FLOAT"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, dict) and {"x", "y"} <= set(value):
        return "POINT"
    if isinstance(value, (list, tuple)):
        inner = {value_type(v) for v in value}
        return f"LIST<{inner.pop() if len(inner) == 1 else 'ANY'}>"
    return "ANY" if value is not None else "NULL"


def schema_from_graph(graph: SceneGraph) -> GraphSchema:
    """Exact schema of ``graph`` as a store loaded from it will hold it (same property names and types as
    ``store.rows.node_properties``, computed from the node fields directly: ~1 s per million nodes)."""
    schema = GraphSchema()
    counts: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(lambda: [0, None, set()]))
    fixed: dict[str, list[int]] = defaultdict(
        lambda: [0, 0, 0]
    )  # label -> [nodes, with bbox, with description]
    classes: dict[str, set[str] | None] = {}

    def note(table: dict[str, list[Any]], key: str, value: Any) -> None:
        entry = table[key]
        entry[0] += 1
        if entry[1] is None:
            entry[1] = value_type(value)
        seen = entry[2]
        if seen is not None:
            if isinstance(value, str) and key not in UNLISTED_KEYS:
                seen.add(value)
                if len(seen) > MAX_LISTED_VALUES:
                    entry[2] = None
            else:
                entry[2] = None

    for node in graph.nodes():
        label = node.label
        f = fixed[label]
        f[0] += 1
        seen_classes = classes.setdefault(label, set())
        if seen_classes is not None:
            seen_classes.add(node.class_name)
            if len(seen_classes) > MAX_LISTED_VALUES:
                classes[label] = None
        if node.bbox_center is not None and node.bbox_dim is not None:
            f[1] += 1
        if node.description is not None:
            f[2] += 1
        if node.attributes:
            table = counts[label]
            for key, value in node.attributes.items():
                if value is not None:
                    note(table, key, value)
    for label, (n, with_bbox, with_description) in fixed.items():
        props = {
            ont.SYMBOL_KEY: PropertyInfo(ont.SYMBOL_KEY, "STRING", n),
            ont.CLASS_KEY: PropertyInfo(ont.CLASS_KEY, "STRING", n, sorted(classes[label] or ()) or None),
            ont.CENTER_KEY: PropertyInfo(ont.CENTER_KEY, "POINT", n),
            "cell": PropertyInfo("cell", "STRING", n),
        }
        if with_bbox:
            props[ont.BBOX_CENTER_KEY] = PropertyInfo(ont.BBOX_CENTER_KEY, "POINT", with_bbox)
            props[ont.BBOX_DIM_KEY] = PropertyInfo(ont.BBOX_DIM_KEY, "LIST<FLOAT>", with_bbox)
        if with_description:
            props[ont.DESCRIPTION_KEY] = PropertyInfo(ont.DESCRIPTION_KEY, "STRING", with_description)
        for k, (c, t, vals) in counts.get(label, {}).items():
            if k not in props:  # free attributes never shadow the fixed fields (names are reserved)
                props[k] = PropertyInfo(k, t or "ANY", c, sorted(vals) if vals else None)
        schema.node_properties[label] = props
        schema.node_counts[label] = n
    labels = {n.symbol: n.label for n in graph.nodes()}
    patterns = Counter((labels[e.source], e.type, labels[e.target]) for e in graph.edges())
    schema.patterns = dict(patterns)
    for (_, rtype, _), count in patterns.items():
        schema.rel_counts[rtype] = schema.rel_counts.get(rtype, 0) + count
    rel_counts: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(lambda: [0, None]))
    for edge in graph.edges():
        if not edge.attributes:
            continue
        for key, value in edge.attributes.items():
            entry = rel_counts[edge.type][key]
            entry[0] += 1
            if entry[1] is None:
                entry[1] = value_type(value)
    for rtype in schema.rel_counts:
        schema.rel_properties[rtype] = {
            k: PropertyInfo(k, t or "ANY", c) for k, (c, t) in rel_counts.get(rtype, {}).items()
        }
    return schema
