"""``retrieve_subgraph`` of a server started on a database directory is semantic by default, with the
embedder and the index ``scenerag search`` uses; ``embedder="none"`` is lexical."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from scenerag import SceneGraph
from scenerag.retrieval import read_source_record, vectors_dir
from scenerag.serve import BackgroundServer, build_app
from scenerag.store import open_store


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph) -> Path:
    path = tmp_path_factory.mktemp("subgraph") / "db"
    store = open_store(path)
    store.load(hydra_graph)
    store.close()
    return path


def retrieve(db: Path, text: str, **app_options: object) -> dict:
    app = build_app(db, **app_options)  # type: ignore[arg-type]
    try:
        with BackgroundServer(app) as server, httpx2.Client(base_url=server.url, timeout=60) as client:
            health = client.get("/health").json()["details"]
            r = client.post("/retrieve_subgraph", json={"text": text, "k": 5})
            assert r.status_code == 200, r.text
            return {"health": health, **r.json()}
    finally:
        app.state.service.store.close()


def test_semantic_by_default(db: Path, hydra_graph: SceneGraph) -> None:
    body = retrieve(db, "something to sit on")
    assert body["search"] == "semantic" and body["health"]["search"] == "semantic"
    hits = [h["symbol"] for h in body["hits"]]
    assert hits and all(hydra_graph.node(s).class_name == "seating" for s in hits)
    returned = {n["symbol"] for n in body["nodes"]}
    places = {p.symbol for s in hits for p in hydra_graph.parents(s)}
    rooms = {r.symbol for p in places for r in hydra_graph.parents(p)}
    assert (
        places and rooms and places | rooms | set(hits) == returned
    )  # the seating with its places and rooms
    chair = retrieve(db, "chair")
    assert chair["hits"] and all(hydra_graph.node(h["symbol"]).class_name == "seating" for h in chair["hits"])
    # the index was kept where `scenerag index` keeps it, with the state of the database it reflects
    assert read_source_record(vectors_dir(db))["embedder"] == "minilm"
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "scenerag.cli", "search", "something to sit on", "--db", str(db), "-k", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0 and "seating" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "scenerag.cli", "index", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("up to date: 166 nodes indexed"), proc.stdout


def test_lexical_with_embedder_none(db: Path) -> None:
    body = retrieve(db, "something to sit on", embedder="none")
    assert body["search"] == "lexical" and body["hits"] == []
