from __future__ import annotations

import json
from collections import Counter

from conftest import APARTMENT, HYDRA
from scenerag import SceneGraph, read_scene_graph
from scenerag.graph import ontology as ont


def test_hydra_counts_and_labels(hydra_graph: SceneGraph) -> None:
    assert hydra_graph.label_counts() == {"Object": 65, "MeshPlace": 96, "Room": 5}
    assert hydra_graph.edge_type_counts() == {
        "CONTAINS": 161,
        "MESH_PLACE_CONNECTED": 236,
        "ROOM_CONNECTED": 5,
    }


def test_hydra_symbols_classes_positions(hydra_graph: SceneGraph) -> None:
    raw = json.loads(HYDRA.read_text())
    spaces = raw["metadata"]["labelspaces"]
    objects = dict(spaces["_l2p0"])
    rooms = dict(spaces["_l4p0"])
    by_symbol = {n.symbol: n for n in hydra_graph.nodes()}
    checked = 0
    for rec in raw["nodes"]:
        symbol = ont.hydra_symbol(rec["id"])
        node = by_symbol[symbol]
        attrs = rec["attributes"]
        assert node.position == tuple(attrs["position"])
        if node.label == ont.OBJECT:
            assert symbol.startswith("O")
            assert node.class_name == objects[attrs["semantic_label"]]
            assert node.bbox_center == tuple(attrs["bounding_box"]["world_P_center"])
            assert node.bbox_dim == tuple(attrs["bounding_box"]["dimensions"])
        elif node.label == ont.ROOM:
            assert symbol.startswith("R")
            assert node.class_name == rooms[attrs["semantic_label"]]
        else:
            assert node.label == ont.MESH_PLACE and symbol.startswith("P")
        checked += 1
    assert checked == 166
    assert {n.class_name for n in hydra_graph.nodes("Room")} == {"lounge", "hallway"}
    assert len({n.class_name for n in hydra_graph.nodes("Object")}) == 12


def test_hydra_edges_match_file(hydra_graph: SceneGraph) -> None:
    raw = json.loads(HYDRA.read_text())
    layer = {ont.hydra_symbol(r["id"]): r["layer"] for r in raw["nodes"]}
    for rec in raw["edges"]:
        s, t = ont.hydra_symbol(rec["source"]), ont.hydra_symbol(rec["target"])
        if layer[s] == layer[t]:
            assert hydra_graph.has_edge(
                s, t, hydra_graph.node(s).label and ont.sibling_edge_type(hydra_graph.node(s).label)
            ) or hydra_graph.has_edge(t, s, ont.sibling_edge_type(hydra_graph.node(s).label))
        else:
            parent, child = (
                (s, t)
                if hydra_graph.node(s).label in ("Room",)
                or (hydra_graph.node(s).label == "MeshPlace" and hydra_graph.node(t).label == "Object")
                else (t, s)
            )
            assert hydra_graph.has_edge(parent, child, ont.CONTAINS)


def test_objects_keep_every_parent_place(hydra_graph: SceneGraph) -> None:
    parents = Counter(len(hydra_graph.parents(o.symbol)) for o in hydra_graph.nodes("Object"))
    assert parents == {1: 55, 2: 6, 0: 3, 3: 1}
    assert all(
        p.label == ont.MESH_PLACE for o in hydra_graph.nodes("Object") for p in hydra_graph.parents(o.symbol)
    )
    assert all(len(hydra_graph.parents(p.symbol)) <= 1 for p in hydra_graph.nodes("MeshPlace"))


def test_apartment_import() -> None:
    g = read_scene_graph(APARTMENT)
    assert g.label_counts() == {"Agent": 102, "Building": 1, "Object": 7, "Place": 185, "Room": 1}
    assert g.edge_type_counts() == {"AGENT_CONNECTED": 101, "CONTAINS": 245, "PLACE_CONNECTED": 396}
    assert {n.symbol[0] for n in g.nodes("Place")} == {"p"}
    assert [c.label for c in g.children("B0")] == ["Room"]
    assert all(p.label == "Place" for o in g.nodes("Object") for p in g.parents(o.symbol))
