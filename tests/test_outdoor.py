"""Tests of the synthetic outdoor scene-graph generator (``scenerag.sim.outdoor``)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.sim.outdoor import OBJECT_CLASSES, OutdoorGraphConfig, generate_outdoor_graph


@pytest.fixture(scope="module")
def default_graph() -> SceneGraph:
    return generate_outdoor_graph()


def _place_index(graph: SceneGraph) -> dict[str, int]:
    return {n.symbol: i for i, n in enumerate(graph.nodes(ont.PLACE))}


def test_default_counts(default_graph: SceneGraph) -> None:
    counts = default_graph.label_counts()
    assert counts[ont.ROOM] == 124
    assert counts[ont.PLACE] == 15_944
    assert counts[ont.OBJECT] == 314
    assert default_graph.num_nodes == 124 + 15_944 + 314
    assert default_graph.metadata["generator"] == "outdoor"
    assert default_graph.metadata["seed"] == 0


def test_symbols_and_classes(default_graph: SceneGraph) -> None:
    assert {n.symbol for n in default_graph.nodes(ont.ROOM)} == {f"R{i}" for i in range(124)}
    assert "P0" in default_graph and "P15943" in default_graph and "P15944" not in default_graph
    assert "O313" in default_graph and "O314" not in default_graph
    object_classes = {c for c, _, _ in OBJECT_CLASSES}
    for node in default_graph.nodes(ont.OBJECT):
        assert node.class_name in object_classes
        assert node.bbox_center == node.position
        assert node.bbox_dim is not None and min(node.bbox_dim) > 0
        assert 0.0 <= node.position[2] <= 2.0
    for node in default_graph.nodes(ont.PLACE):
        assert node.class_name == "place"
        assert abs(node.position[2]) <= 0.3
    assert len({n.class_name for n in default_graph.nodes(ont.ROOM)}) > 1
    for node in default_graph.nodes():
        node.validate()  # every generated node satisfies the model's contract


def test_every_place_has_one_parent_region(default_graph: SceneGraph) -> None:
    parents = Counter(
        e.target for e in default_graph.edges(ont.CONTAINS) if default_graph.node(e.source).label == ont.ROOM
    )
    assert all(default_graph.node(s).label == ont.PLACE for s in parents)
    assert len(parents) == 15_944
    assert set(parents.values()) == {1}
    # every region contains at least one place, and sits at the mean of its places
    region = default_graph.node("R0")
    places = default_graph.children("R0")
    assert places
    mean = np.mean([p.position for p in places], axis=0)
    assert np.allclose(region.position, mean)


def test_place_degree_and_connectivity(default_graph: SceneGraph) -> None:
    index = _place_index(default_graph)
    edges = list(default_graph.edges(ont.PLACE_CONNECTED))
    src = np.array([index[e.source] for e in edges])
    dst = np.array([index[e.target] for e in edges])
    n = len(index)
    assert not np.any(src == dst)
    keys = np.minimum(src, dst) * n + np.maximum(src, dst)
    assert len(np.unique(keys)) == len(edges), "one edge per undirected pair"
    mean_degree = 2 * len(edges) / n
    assert 3.0 <= mean_degree <= 6.0
    adjacency = coo_matrix((np.ones(len(edges)), (src, dst)), shape=(n, n))
    _, labels = connected_components(adjacency, directed=False)
    assert np.bincount(labels).max() >= 0.95 * n


def test_neighbouring_places_are_about_spacing_apart(default_graph: SceneGraph) -> None:
    lengths = [
        np.linalg.norm(
            np.subtract(default_graph.node(e.source).position, default_graph.node(e.target).position)
        )
        for e in default_graph.edges(ont.PLACE_CONNECTED)
    ]
    assert 1.0 <= float(np.median(lengths)) <= 3.0
    xs = [n.position[0] for n in default_graph.nodes(ont.PLACE)]
    side = np.sqrt(15_944) * 2.0
    assert 0.8 * side <= max(xs) - min(xs) <= 1.2 * side


def test_region_adjacency(default_graph: SceneGraph) -> None:
    region_of = {
        e.target: e.source
        for e in default_graph.edges(ont.CONTAINS)
        if default_graph.node(e.source).label == ont.ROOM
    }
    expected = {
        frozenset((region_of[e.source], region_of[e.target]))
        for e in default_graph.edges(ont.PLACE_CONNECTED)
        if region_of[e.source] != region_of[e.target]
    }
    got = [frozenset((e.source, e.target)) for e in default_graph.edges(ont.ROOM_CONNECTED)]
    assert len(got) == len(set(got))
    assert set(got) == expected
    assert expected


def test_objects_have_place_parents_and_some_have_two(default_graph: SceneGraph) -> None:
    multi = 0
    for obj in default_graph.nodes(ont.OBJECT):
        parents = default_graph.parents(obj.symbol)
        assert 1 <= len(parents) <= 2
        assert all(p.label == ont.PLACE for p in parents)
        for p in parents:
            assert np.hypot(p.position[0] - obj.position[0], p.position[1] - obj.position[1]) < 3.0
        multi += len(parents) == 2
    assert multi >= 1
    assert 0.05 * 314 <= multi <= 0.15 * 314


def test_determinism() -> None:
    a = generate_outdoor_graph(n_places=3000, n_regions=12, n_objects=30, seed=7)
    b = generate_outdoor_graph(OutdoorGraphConfig(n_places=3000, n_regions=12, n_objects=30, seed=7))
    c = generate_outdoor_graph(n_places=3000, n_regions=12, n_objects=30, seed=8)
    for sym in ("P0", "P1234", "P2999", "R3", "O5"):
        assert a.node(sym).position == b.node(sym).position
        assert a.node(sym).class_name == b.node(sym).class_name
    assert a.edge_type_counts() == b.edge_type_counts()
    assert {e.key for e in a.edges()} == {e.key for e in b.edges()}
    assert any(a.node(s).position != c.node(s).position for s in ("P0", "P1234", "P2999"))
    assert a.node("O5").position != c.node("O5").position


def test_small_config() -> None:
    graph = generate_outdoor_graph(n_places=2000, n_regions=10, n_objects=20)
    counts = graph.label_counts()
    assert (counts[ont.ROOM], counts[ont.PLACE], counts[ont.OBJECT]) == (10, 2000, 20)
    assert graph.metadata["config"]["n_places"] == 2000
    for sym in ("R0", "R9"):
        assert graph.children(sym)


def test_tiny_and_bad_configs() -> None:
    graph = generate_outdoor_graph(n_places=2, n_regions=1, n_objects=0)
    assert graph.label_counts() == Counter({ont.PLACE: 2, ont.ROOM: 1})
    with pytest.raises(ValueError):
        generate_outdoor_graph(n_places=10, n_regions=11)
    with pytest.raises(ValueError):
        generate_outdoor_graph(mean_spacing_m=0.0)
    with pytest.raises(TypeError):
        generate_outdoor_graph(n_place=10)  # unknown override
