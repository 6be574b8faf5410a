from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenerag import SceneGraph, SceneGraphError, read_scene_graph, write_scene_graph
from scenerag.graph import ontology as ont


def small_graph() -> SceneGraph:
    g = SceneGraph({"name": "unit"})
    g.add("R1", ont.ROOM, "kitchen", (0, 0, 0), description="a small kitchen")
    g.add("P1", ont.MESH_PLACE, "mesh_place", (1, 0, 0))
    g.add("P2", ont.MESH_PLACE, "mesh_place", (2, 0, 0))
    g.add(
        "O1",
        ont.OBJECT,
        "mug",
        (1, 0.2, 0.9),
        bbox_center=(1, 0.2, 0.9),
        bbox_dim=(0.1, 0.1, 0.12),
        color="red",
    )
    g.add_edge("R1", "P1", ont.CONTAINS)
    g.add_edge("R1", "P2", ont.CONTAINS)
    g.add_edge("P1", "O1", ont.CONTAINS)
    g.add_edge("P2", "O1", ont.CONTAINS)
    g.add_edge("P1", "P2", ont.MESH_PLACE_CONNECTED, weight=1.5)
    return g


def test_structure_queries() -> None:
    g = small_graph()
    assert g.num_nodes == 4 and g.num_edges == 5
    assert {p.symbol for p in g.parents("O1")} == {"P1", "P2"}
    assert {c.symbol for c in g.children("R1")} == {"P1", "P2"}
    assert [n.symbol for n in g.neighbors("P2", ont.MESH_PLACE_CONNECTED)] == ["P1"]
    assert g.label_counts() == {"Room": 1, "MeshPlace": 2, "Object": 1}


def test_undirected_edges_are_stored_once() -> None:
    g = small_graph()
    g.add_edge("P2", "P1", ont.MESH_PLACE_CONNECTED)
    assert g.edge_type_counts()[ont.MESH_PLACE_CONNECTED] == 1


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda g: g.add("O1", ont.OBJECT, "cup", (0, 0, 0)), "duplicate node symbol"),
        (lambda g: g.add_edge("O1", "O404", ont.OBJECT_CONNECTED), "does not exist"),
        (lambda g: g.add("O2", "Bad Label", "cup", (0, 0, 0)), "not an identifier"),
        (lambda g: g.add("O3", ont.OBJECT, "cup", (0, 0)), "3 numbers"),
        (lambda g: g.add("O4", ont.OBJECT, "cup", (0, 0, float("nan"))), "finite"),
        (lambda g: g.add("O5", ont.OBJECT, "cup", (0, 0, 0), center=(1, 2, 3)), "reserved"),
        (lambda g: g.add("O6", ont.OBJECT, "", (0, 0, 0)), "class"),
        (lambda g: g.add("6O", ont.OBJECT, "cup", (0, 0, 0)), "symbol"),
        (lambda g: g.add("O7", ont.OBJECT, "cup", (0, 0, 0), bbox_center=(0, 0, 0)), "bbox"),
        (lambda g: g.add_edge("O1", "O1", ont.OBJECT_CONNECTED), "self-loops"),
    ],
)
def test_invalid_operations_raise_clear_errors(action, message) -> None:  # type: ignore[no-untyped-def]
    g = small_graph()
    before = (g.num_nodes, g.num_edges)
    with pytest.raises(SceneGraphError, match=message):
        action(g)
    assert (g.num_nodes, g.num_edges) == before


def test_open_ontology_new_labels_and_edge_types() -> None:
    g = small_graph()
    g.add("D1", "Door", "door", (0.5, 0, 1), is_open=False, material_tags=["wood", "painted"])
    g.add_edge("D1", "R1", "OPENS_INTO")
    assert g.node("D1").attributes == {"is_open": False, "material_tags": ["wood", "painted"]}
    assert g.has_edge("D1", "R1", "OPENS_INTO")


def test_remove_node_drops_its_edges() -> None:
    g = small_graph()
    g.remove_node("P1")
    assert "P1" not in g
    assert g.num_edges == 2
    assert {p.symbol for p in g.parents("O1")} == {"P2"}


def test_native_json_round_trip(tmp_path: Path) -> None:
    g = small_graph()
    path = tmp_path / "g.json"
    write_scene_graph(g, path)
    back = read_scene_graph(path)
    assert back.metadata == g.metadata
    assert [
        (n.symbol, n.label, n.class_name, n.position, n.bbox_center, n.bbox_dim, n.description, n.attributes)
        for n in back.nodes()
    ] == [
        (n.symbol, n.label, n.class_name, n.position, n.bbox_center, n.bbox_dim, n.description, n.attributes)
        for n in g.nodes()
    ]
    assert sorted((e.key, e.attributes) for e in back.edges()) == sorted(
        (e.key, e.attributes) for e in g.edges()
    )
    assert json.loads(path.read_text())["format"] == "scenerag.scene_graph"


def test_hydra_symbol_encoding() -> None:
    assert ont.hydra_symbol(0x4F00000000000005) == "O5"
    assert ont.hydra_id("P345") == (ord("P") << 56) | 345
    assert ont.hydra_symbol(ont.hydra_id("R12")) == "R12"
    assert ont.sibling_edge_type("MeshPlace") == "MESH_PLACE_CONNECTED"
    assert ont.label_from_layer_name("MESH_PLACES") == "MeshPlace"
    assert ont.label_from_layer_name("street_signs") == "StreetSign"
