"""Undoable scene updates: snapshot diff, journal, inverse; the update agent; the update/undo CLI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import HYDRA, make_store
from scenerag import SceneGraph
from scenerag.agents.scene_update import SceneUpdateAgent, SceneUpdateConfig, split_statements
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


def test_update_agent_links_checks_and_corrects(
    tmp_path: Path, hydra_graph: SceneGraph, request: pytest.FixtureRequest
) -> None:
    """The update pipeline: the instruction's words are linked to nodes, worked examples come from the
    live graph, and a write that names an unknown label, copies an example's symbol or does not write is
    sent back; the graph is only read."""
    store = make_store("arcade", request, tmp_path)
    try:
        store.load(hydra_graph)
        agent = SceneUpdateAgent(ScriptedChatModel([]), store, SceneUpdateConfig(embedder="none"))
        examples = agent.examples()
        example_symbol = re.findall(r"nodeSymbol: '(O\d+)'", examples[0][1])[0]
        assert example_symbol != "O43" and [q.split()[0] for q, _ in examples][:1] == ["The"]
        assert any("CREATE (p)-[:CONTAINS]->(:Object" in c for _, c in examples)
        model = ScriptedChatModel(
            [
                "MATCH (n:Bicycle {nodeSymbol: 'O43'}) SET n.class = 'bag'",
                f"MATCH (n:Object {{nodeSymbol: '{example_symbol}'}}) SET n.class = 'bag'",
                "MATCH (n:Object {nodeSymbol: 'O43'}) RETURN n",
            ],
            supports_tools=False,
        )
        stages: list[str] = []

        class Recorder:
            def stage(self, name: str, detail: str = "") -> None:
                stages.append(name)

        agent = SceneUpdateAgent(
            model, store, SceneUpdateConfig(embedder="none", max_attempts=3), progress=Recorder()
        )
        result = agent.run_update("the bicycle is actually a bag")
        prompt = model.calls[0].messages[-1].content
        assert "'bicycle' is Object class 'bicycle' (O43)" in prompt
        assert prompt.rstrip().endswith("Update: the bicycle is actually a bag\nCypher:")
        assert "unknown label(s) Bicycle" in model.calls[1].messages[-1].content
        assert f"does not name {example_symbol}" in model.calls[2].messages[-1].content
        assert result.answer == "MATCH (n:Object {nodeSymbol: 'O43'}) RETURN n"
        assert result.error is not None and "does not write" in result.error
        assert stages[:2] == ["linking", "examples"] and stages[-1] == "answer"

        good = ScriptedChatModel(
            ["```cypher\nMATCH (n:Object {nodeSymbol: 'O43'}) SET n.class = 'bag'\n```"], supports_tools=False
        )
        result = SceneUpdateAgent(good, store, SceneUpdateConfig(embedder="none")).run_update(
            "the bicycle is actually a bag"
        )
        assert result.answer == "MATCH (n:Object {nodeSymbol: 'O43'}) SET n.class = 'bag'"
        assert result.error is None and result.llm_calls == 1
        assert store.query("MATCH (o:Object {class: 'bicycle'}) RETURN count(o) AS n").rows == [{"n": 1}]
    finally:
        store.close()


def test_update_agent_returns_at_its_time_limit(
    tmp_path: Path, hydra_graph: SceneGraph, request: pytest.FixtureRequest
) -> None:
    store = make_store("arcade", request, tmp_path)
    try:
        store.load(hydra_graph)

        release = threading.Event()
        returned = threading.Event()

        def slow(messages: object) -> str:
            release.wait(30)  # the model answers only once the agent has given up on it
            returned.set()
            return "MATCH (n:Object {nodeSymbol: 'O43'}) SET n.class = 'bag'"

        agent = SceneUpdateAgent(
            ScriptedChatModel([slow], supports_tools=False), store, SceneUpdateConfig(embedder="none")
        )
        result = agent.run_update("the bicycle is actually a bag", timeout_s=1.0)
        assert not returned.is_set()  # it returned at its limit, while the model call was still running
        assert result.answer is None and result.context["timed_out"] is True
        assert result.error == "no write within the time limit (1 s)"
        release.set()
        assert returned.wait(30)  # the abandoned model call ends before the store closes
        time.sleep(0.5)
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
