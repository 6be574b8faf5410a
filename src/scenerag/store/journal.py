"""Undoable writes: snapshot the graph before and after a write, show the diff, and keep the inverse in
a journal so ``undo`` can restore the previous graph.

Snapshots read every node and relationship through Cypher, so they suit interactive edits of graphs up to
a few hundred thousand elements (``MAX_SNAPSHOT_ELEMENTS``); larger graphs are refused with a clear error
rather than made slow. Nodes are identified by ``nodeSymbol``; the journal lives in ``<db>/undo/`` for
an embedded database and under ``~/.cache/scenerag/undo/<uri hash>/`` for a Bolt server.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenerag.errors import StoreError
from scenerag.store.base import CypherStore

MAX_SNAPSHOT_ELEMENTS = 500_000
NODES = "MATCH (n) RETURN n.nodeSymbol AS s, labels(n) AS l, properties(n) AS p"
EDGES = "MATCH (a)-[r]->(b) RETURN a.nodeSymbol AS a, type(r) AS t, b.nodeSymbol AS b, properties(r) AS p"
COUNT = "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN count(DISTINCT n) AS n, count(r) AS r"

EdgeKey = tuple[str, str, str]


@dataclass
class Snapshot:
    """Every node (symbol -> (label, properties)) and relationship ((a, type, b) -> properties)."""

    nodes: dict[str, tuple[str, dict[str, Any]]]
    edges: dict[EdgeKey, dict[str, Any]]


@dataclass
class GraphDiff:
    """What a write changed; ``inverse()`` undoes it."""

    added_nodes: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    removed_nodes: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    #: symbol -> {key: (before, after)}; a missing side is None
    changed_nodes: dict[str, dict[str, tuple[Any, Any]]] = field(default_factory=dict)
    added_edges: dict[EdgeKey, dict[str, Any]] = field(default_factory=dict)
    removed_edges: dict[EdgeKey, dict[str, Any]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (
            self.added_nodes
            or self.removed_nodes
            or self.changed_nodes
            or self.added_edges
            or self.removed_edges
        )

    def lines(self) -> list[str]:
        """Human-readable diff, one change per line (``+`` added, ``-`` removed, ``~`` changed)."""
        out = [f"+ node {s} ({lab})" for s, (lab, _) in sorted(self.added_nodes.items())]
        out += [f"- node {s} ({lab})" for s, (lab, _) in sorted(self.removed_nodes.items())]
        for s, changes in sorted(self.changed_nodes.items()):
            for key, (before, after) in sorted(changes.items()):
                out.append(f"~ {s}.{key}: {json.dumps(before)} -> {json.dumps(after)}")
        out += [f"+ edge ({a})-[:{t}]->({b})" for (a, t, b) in sorted(self.added_edges)]
        out += [f"- edge ({a})-[:{t}]->({b})" for (a, t, b) in sorted(self.removed_edges)]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "added_nodes": {s: [lab, p] for s, (lab, p) in self.added_nodes.items()},
            "removed_nodes": {s: [lab, p] for s, (lab, p) in self.removed_nodes.items()},
            "changed_nodes": {s: {k: list(v) for k, v in c.items()} for s, c in self.changed_nodes.items()},
            "added_edges": [[a, t, b, p] for (a, t, b), p in self.added_edges.items()],
            "removed_edges": [[a, t, b, p] for (a, t, b), p in self.removed_edges.items()],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GraphDiff:
        return cls(
            added_nodes={s: (v[0], v[1]) for s, v in d["added_nodes"].items()},
            removed_nodes={s: (v[0], v[1]) for s, v in d["removed_nodes"].items()},
            changed_nodes={s: {k: (v[0], v[1]) for k, v in c.items()} for s, c in d["changed_nodes"].items()},
            added_edges={(a, t, b): p for a, t, b, p in d["added_edges"]},
            removed_edges={(a, t, b): p for a, t, b, p in d["removed_edges"]},
        )


def snapshot(store: CypherStore) -> Snapshot:
    """Read the whole graph (refused above ``MAX_SNAPSHOT_ELEMENTS`` nodes + relationships)."""
    counts = store.query(COUNT, timeout_s=120).rows[0]
    total = int(counts["n"]) + int(counts["r"])
    if total > MAX_SNAPSHOT_ELEMENTS:
        raise StoreError(
            f"the graph has {total:,} nodes and relationships; undoable updates snapshot at most "
            f"{MAX_SNAPSHOT_ELEMENTS:,}",
            hint="run the write with `scenerag cypher --write` (not undoable) or update a smaller graph",
        )
    cap = total + 10
    nodes: dict[str, tuple[str, dict[str, Any]]] = {}
    for row in store.query(NODES, timeout_s=300, max_rows=cap).rows:
        if row["s"] is None:
            raise StoreError("a node has no nodeSymbol; undoable updates need every node to have one")
        labels = row["l"] or ["_"]
        nodes[str(row["s"])] = (labels[0] if isinstance(labels, list) else str(labels), dict(row["p"] or {}))
    edges: dict[EdgeKey, dict[str, Any]] = {}
    for row in store.query(EDGES, timeout_s=300, max_rows=cap).rows:
        edges[(str(row["a"]), str(row["t"]), str(row["b"]))] = dict(row["p"] or {})
    return Snapshot(nodes, edges)


def diff(before: Snapshot, after: Snapshot) -> GraphDiff:
    d = GraphDiff()
    for s, (label, props) in after.nodes.items():
        if s not in before.nodes:
            d.added_nodes[s] = (label, props)
            continue
        old = before.nodes[s][1]
        changes = {k: (old.get(k), props.get(k)) for k in set(old) | set(props) if old.get(k) != props.get(k)}
        if changes:
            d.changed_nodes[s] = changes
    d.removed_nodes = {s: v for s, v in before.nodes.items() if s not in after.nodes}
    d.added_edges = {k: v for k, v in after.edges.items() if k not in before.edges}
    d.removed_edges = {k: v for k, v in before.edges.items() if k not in after.edges}
    return d


def _is_point(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"x", "y", "z"}


def _set_clause(var: str, props: Mapping[str, Any], param: str) -> tuple[str, dict[str, Any]]:
    """``SET var.k = $param_i, ...`` with points rebuilt with ``point()`` (a map would lose the point type)."""
    parts, params = [], {}
    for i, (k, v) in enumerate(sorted(props.items())):
        name = f"{param}{i}"
        params[name] = v
        if v is None:
            parts.append(f"{var}.`{k}` = null")
        elif _is_point(v):
            parts.append(f"{var}.`{k}` = point(${name})")
        else:
            parts.append(f"{var}.`{k}` = ${name}")
    return ("SET " + ", ".join(parts)) if parts else "", params


def apply_inverse(store: CypherStore, d: GraphDiff) -> None:
    """Undo ``d``: drop what it added, restore what it removed or changed."""

    def write(q: str, params: dict[str, Any] | None = None) -> None:
        store.query(q, params or {}, read_only=False, timeout_s=60)

    for a, t, b in d.added_edges:
        write(f"MATCH (x {{nodeSymbol: $a}})-[r:`{t}`]->(y {{nodeSymbol: $b}}) DELETE r", {"a": a, "b": b})
    for s in d.added_nodes:
        write("MATCH (n {nodeSymbol: $s}) DETACH DELETE n", {"s": s})
    for label, props in d.removed_nodes.values():
        clause, params = _set_clause("n", props, "p")
        write(f"CREATE (n:`{label}`) {clause}", params)
    for s, changes in d.changed_nodes.items():
        clause, params = _set_clause("n", {k: before for k, (before, _) in changes.items()}, "p")
        params["sym"] = changes.get("nodeSymbol", (s, s))[1] if "nodeSymbol" in changes else s
        write(f"MATCH (n {{nodeSymbol: $sym}}) {clause}", params)
    for (a, t, b), props in d.removed_edges.items():
        clause, params = _set_clause("r", props, "p")
        params.update({"a": a, "b": b})
        write(
            f"MATCH (x {{nodeSymbol: $a}}), (y {{nodeSymbol: $b}}) CREATE (x)-[r:`{t}`]->(y) {clause}", params
        )


class UndoJournal:
    """A stack of applied diffs on disk (one JSON file per write, newest last)."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)

    @classmethod
    def for_target(cls, target: str) -> UndoJournal:
        """``<db>/undo`` for a database directory, a per-URI cache folder for a Bolt server."""
        if "://" in target:
            digest = hashlib.sha256(target.split("@")[-1].encode()).hexdigest()[:16]
            base = Path(os.environ.get("SCENERAG_CACHE", Path.home() / ".cache" / "scenerag"))
            return cls(base / "undo" / digest)
        return cls(Path(target) / "undo")

    def clear(self) -> None:
        """Forget every entry (after a new graph was loaded they no longer apply)."""
        for path in self.entries():
            path.unlink()

    def entries(self) -> list[Path]:
        return sorted(self.dir.glob("*.json")) if self.dir.is_dir() else []

    def push(self, d: GraphDiff, description: str, queries: list[str]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        n = len(self.entries()) + 1
        path = self.dir / f"{n:06d}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {"time": time.time(), "description": description, "queries": queries, "diff": d.to_dict()}
            )
        )
        tmp.replace(path)
        return path

    def pop(self, store: CypherStore) -> dict[str, Any]:
        """Undo the newest entry on ``store``; return it. Raises ``StoreError`` when there is nothing to undo."""
        entries = self.entries()
        if not entries:
            raise StoreError(f"nothing to undo (no journal entries in {self.dir})")
        data = json.loads(entries[-1].read_text())
        apply_inverse(store, GraphDiff.from_dict(data["diff"]))
        entries[-1].unlink()
        return data
