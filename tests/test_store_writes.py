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
