"""Write mode, atomic loads and failure handling, on both backends."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scenerag import SceneGraph
from scenerag.errors import StoreError
from scenerag.graph import ontology as ont
from scenerag.store import CypherStore, open_store
from scenerag.store.export import export_graph


def test_set_and_create_in_write_mode(fresh_store: CypherStore) -> None:
    r = fresh_store.query(
        "MATCH (o:Object {nodeSymbol:'O0'}) SET o.class = 'bag' RETURN o.class AS c", read_only=False
    )
    assert r.rows == [{"c": "bag"}]
    assert fresh_store.query("MATCH (o:Object {nodeSymbol:'O0'}) RETURN o.class AS c").rows == [{"c": "bag"}]
    fresh_store.query(
        "MATCH (p:MeshPlace {nodeSymbol:'P754'}) "
        "CREATE (p)-[:CONTAINS]->(:Object {nodeSymbol:'O900', class:'mug', center: point({x: 1.0, y: 2.0, z: 0.8})})",
        read_only=False,
    )
    r = fresh_store.query(
        "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {nodeSymbol:'O900'}) "
        "RETURN p.nodeSymbol AS p, point.distance(o.center, point({x: 1.0, y: 2.0, z: 0.0})) AS d"
    )
    assert r.rows == [{"p": "P754", "d": pytest.approx(0.8)}]
    # the schema follows the writes
    assert fresh_store.schema().node_counts["Object"] == 66


def small(n_objects: int) -> SceneGraph:
    g = SceneGraph()
    g.add("R1", ont.ROOM, "kitchen", (0, 0, 0))
    for i in range(n_objects):
        g.add(f"O{i}", ont.OBJECT, "cup", (i, 0, 0))
        g.add_edge("R1", f"O{i}", ont.CONTAINS)
    return g


def test_load_keeps_every_property(fresh_store: CypherStore) -> None:
    """Free attributes of every JSON type, descriptions, bboxes, grid cells and edge properties survive a
    load (and an export) on both backends; nodes without extras get none."""
    g = SceneGraph()
    g.add("R1", ont.ROOM, "kitchen", (-0.5, 19.99, 0.0), description="a small kitchen")
    g.add(
        "O1",
        ont.OBJECT,
        "mug",
        (1.25, -3.5, 0.75),
        bbox_center=(1.25, -3.5, 0.8),
        bbox_dim=(0.1, 0.1, 0.12),
        count=3,
        ratio=0.5,
        open=False,
        tags=["ceramic", "blue"],
    )
    g.add("O2", ont.OBJECT, "plate", (2.0, 2.0, 0.7))
    g.add_edge("R1", "O1", ont.CONTAINS)
    g.add_edge("R1", "O2", ont.CONTAINS)
    g.add_edge("O1", "O2", "NEAR", distance=1.5, via="table")
    fresh_store.load(g)
    rows = fresh_store.query(
        "MATCH (n) RETURN n.nodeSymbol AS s, properties(n) AS p ORDER BY s", max_rows=10
    ).rows
    props = {r["s"]: r["p"] for r in rows}
    assert props["R1"] == {
        "nodeSymbol": "R1",
        "class": "kitchen",
        "center": {"x": -0.5, "y": 19.99, "z": 0.0},
        "cell": "-1_1",
        "description": "a small kitchen",
    }
    assert props["O1"] == {
        "nodeSymbol": "O1",
        "class": "mug",
        "center": {"x": 1.25, "y": -3.5, "z": 0.75},
        "cell": "0_-1",
        "bbox_center": {"x": 1.25, "y": -3.5, "z": 0.8},
        "bbox_dim": [0.1, 0.1, 0.12],
        "count": 3,
        "ratio": 0.5,
        "open": False,
        "tags": ["ceramic", "blue"],
    }
    assert set(props["O2"]) == {"nodeSymbol", "class", "center", "cell"}
    edge = fresh_store.query(
        "MATCH (a)-[r:NEAR]->(b) RETURN a.nodeSymbol AS a, b.nodeSymbol AS b, r.distance AS d, r.via AS v"
    )
    assert edge.rows == [{"a": "O1", "b": "O2", "d": 1.5, "v": "table"}]
    contained = fresh_store.query(
        "MATCH (:Room {nodeSymbol: 'R1'})-[:CONTAINS]->(o) RETURN o.nodeSymbol AS s ORDER BY s"
    )
    assert contained.rows == [{"s": "O1"}, {"s": "O2"}]
    back = export_graph(fresh_store)
    assert back.node("O1").attributes == {
        "count": 3,
        "ratio": 0.5,
        "open": False,
        "tags": ["ceramic", "blue"],
    }
    assert back.node("R1").description == "a small kitchen"


def test_failed_load_keeps_previous_graph(fresh_store: CypherStore) -> None:
    def explode(stage: str, done: int, total: int) -> None:
        if stage == "edges":
            raise RuntimeError("simulated crash during edges")

    with pytest.raises(StoreError, match="previous graph is unchanged"):
        fresh_store.load(small(50), progress=explode)
    assert fresh_store.query("MATCH (o:Object) RETURN count(o) AS n").rows == [{"n": 65}]
    assert fresh_store.query("MATCH (r:Room) RETURN count(r) AS n").rows == [{"n": 5}]
    fresh_store.load(small(3))
    assert fresh_store.query("MATCH (o:Object) RETURN count(o) AS n").rows == [{"n": 3}]
    assert fresh_store.schema().node_counts == {"Room": 1, "Object": 3}


def test_killed_load_leaves_previous_graph(tmp_path: Path, hydra_graph: SceneGraph) -> None:
    db = tmp_path / "db"
    store = open_store(db)
    store.load(hydra_graph)
    store.close()
    script = textwrap.dedent(
        f"""
        import os, signal
        from scenerag.graph import SceneGraph
        from scenerag.store import open_store
        g = SceneGraph()
        g.add("R1", "Room", "hall", (0, 0, 0))
        for i in range(20000):
            g.add(f"P{{i}}", "Place", "place", (i, 0, 0))
            g.add_edge("R1", f"P{{i}}", "CONTAINS")
        store = open_store({str(db)!r})
        def die(stage, done, total):
            if stage == "edges":
                os.kill(os.getpid(), signal.SIGKILL)
        store.load(g, progress=die)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=300, env=os.environ.copy()
    )
    assert proc.returncode == -9
    assert len(list(db.glob("gen-*"))) == 2  # the half-written generation is still on disk
    store = open_store(db, create=False)
    try:
        assert store.query("MATCH (o:Object) RETURN count(o) AS n").rows == [{"n": 65}]
        assert len(list(db.glob("gen-*"))) == 1  # and is cleaned up on the next open
    finally:
        store.close()


def test_open_missing_database_is_clear(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no scenerag database"):
        open_store(tmp_path / "missing", create=False)


def test_empty_store_query_is_clear(tmp_path: Path) -> None:
    store = open_store(tmp_path / "empty")
    try:
        with pytest.raises(StoreError, match="empty"):
            store.query("MATCH (n) RETURN n")
    finally:
        store.close()


def test_dead_bolt_endpoint_is_clear() -> None:
    with pytest.raises(StoreError, match="cannot reach the Bolt server"):
        open_store("bolt://127.0.0.1:1")
