"""Undoable scene updates: snapshot diff, journal, inverse; the update agent; the update/undo CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HYDRA, make_store
from scenerag import SceneGraph
from scenerag.agents.scene_update import SceneUpdateAgent, split_statements
from scenerag.llm import ScriptedChatModel
from scenerag.store.journal import UndoJournal, diff, snapshot

WRITES = [
    "MATCH (o:Object {nodeSymbol: 'O43'}) SET o.class = 'bag', o.note = 'relabelled'",
    "MATCH (p:MeshPlace {nodeSymbol: 'P59110'}) CREATE (p)-[:CONTAINS]->(:Object {nodeSymbol: 'O9000', class: 'mug', center: point({x: 1.0, y: 2.0, z: 0.5})})",
    "MATCH (:MeshPlace)-[r:CONTAINS]->(o:Object {nodeSymbol: 'O3'}) DELETE r",
    "MATCH (o:Object {nodeSymbol: 'O285'}) DETACH DELETE o",
]


@pytest.mark.parametrize("backend", ["arcade", "bolt"])
def test_diff_and_undo_restore_the_graph(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, hydra_graph: SceneGraph
) -> None:
    store = make_store(backend, request, tmp_path)
    try:
        store.load(hydra_graph)
        original = snapshot(store)
        journal = UndoJournal(tmp_path / "undo")
        for w in WRITES:
            before = snapshot(store)
            store.query(w, read_only=False)
            journal.push(diff(before, snapshot(store)), w, [w])
        d = diff(original, snapshot(store))
        assert d.changed_nodes["O43"]["class"] == ("bicycle", "bag")
        assert set(d.added_nodes) == {"O9000"} and set(d.removed_nodes) == {"O285"}
        assert ("P59110", "CONTAINS", "O9000") in d.added_edges
        assert any(t == "CONTAINS" and b == "O3" for (_, t, b) in d.removed_edges)
        lines = "\n".join(d.lines())
        assert '~ O43.class: "bicycle" -> "bag"' in lines and "- node O285 (Object)" in lines
        for _ in WRITES:
            journal.pop(store)
        assert diff(original, snapshot(store)).empty
        r = store.query(
            "MATCH (a:Object), (b:Object {nodeSymbol: 'O285'}) WHERE a.nodeSymbol = 'O43' "
            "RETURN point.distance(a.center, b.center) AS d"
        )
        assert r.rows and r.rows[0]["d"] > 0  # restored centres are points again
        with pytest.raises(Exception, match="nothing to undo"):
            journal.pop(store)
    finally:
        store.close()


def test_split_statements() -> None:
    assert split_statements("MATCH (n) SET n.a = 'x;y'; MATCH (m) DELETE m;") == [
        "MATCH (n) SET n.a = 'x;y'",
        "MATCH (m) DELETE m",
    ]


def test_update_agent_finds_node_then_writes(
    tmp_path: Path, hydra_graph: SceneGraph, request: pytest.FixtureRequest
) -> None:
    store = make_store("arcade", request, tmp_path)
    try:
        store.load(hydra_graph)

        def act(a: str, t: str) -> str:
            return json.dumps({"thought": "t", "action": a, "input": t})

        model = ScriptedChatModel(
            [
                act("tool", "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol"),
                act("answer", "MATCH (o:Object) RETURN count(o)"),
                act("answer", "O43 is a bag"),
                act("answer", "MATCH (o:Object {nodeSymbol: 'O43'}) SET o.class = 'bag'"),
            ],
            supports_tools=False,
        )
        result = SceneUpdateAgent(model, store).run_update("the bicycle is actually a bag")
        # a read query given as the answer runs as a lookup; prose is rejected; the write is the answer
        assert [t.input for t in result.tools][-1] == "MATCH (o:Object) RETURN count(o)"
        assert "does not write" in model.calls[3].messages[-1].content
        assert (
            result.answer == "MATCH (o:Object {nodeSymbol: 'O43'}) SET o.class = 'bag'"
            and result.error is None
        )
        assert store.query("MATCH (o:Object {class: 'bicycle'}) RETURN count(o) AS n").rows == [{"n": 1}]
    finally:
        store.close()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenerag.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_update_and_undo_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run_cli("load", str(HYDRA), "--db", db).returncode == 0
    write = "MATCH (o:Object {nodeSymbol: 'O43'}) SET o.class = 'bag'"
    dry = run_cli("update", "the bicycle is a bag", "--db", db, "--cypher", write)
    assert dry.returncode == 0 and "not applied" in dry.stdout
    applied = run_cli("update", "the bicycle is a bag", "--db", db, "--cypher", write, "--allow-write")
    assert applied.returncode == 0, applied.stderr
    assert '~ O43.class: "bicycle" -> "bag"' in applied.stdout
    count = "MATCH (o:Object {class: 'bicycle'}) RETURN count(o) AS n"
    assert '"n": 0' in run_cli("cypher", count, "--db", db, "--json").stdout
    undone = run_cli("undo", "--db", db)
    assert undone.returncode == 0 and "reverted: the bicycle is a bag" in undone.stdout
    assert '"n": 1' in run_cli("cypher", count, "--db", db, "--json").stdout
    again = run_cli("undo", "--db", db)
    assert again.returncode != 0 and "nothing to undo" in again.stderr and "Traceback" not in again.stderr
