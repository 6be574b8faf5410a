"""The grammar local models decode Cypher under, built from the live Hydra schema: labels, relationship
types in the directions the graph has, property keys and stored values only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scenerag import SceneGraph
from scenerag.agents.cypher_grammar import cypher_grammar, question_strings
from scenerag.lang.gbnf import Grammar
from scenerag.store import CypherStore, open_store


@pytest.fixture(scope="module")
def grammar(tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph) -> Iterator[Grammar]:
    store: CypherStore = open_store(tmp_path_factory.mktemp("grammar") / "db")
    store.load(hydra_graph)
    symbols = {n.symbol for n in hydra_graph.nodes()}
    classes = {n.class_name for n in hydra_graph.nodes() if n.class_name}
    yield cypher_grammar(store.schema(), symbols | classes | question_strings("Are there any doors?"))
    store.close()


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (r:Room {class: 'lounge'})-[:CONTAINS*]->(o:Object {class: 'sign'}) RETURN DISTINCT o.nodeSymbol",
        "MATCH (o:Object)<-[:CONTAINS]-(p:MeshPlace) RETURN p.nodeSymbol, count(o) AS n ORDER BY n DESC LIMIT 1",
        "MATCH (a:Object {nodeSymbol: 'O43'}), (b:Object) WHERE a <> b AND point.distance(a.center, b.center) < 2.5 "
        "RETURN b.nodeSymbol",
        "MATCH (r:Room)-[:CONTAINS]->(o:Object) RETURN o",  # rooms hold objects through places: repaired later
        "MATCH (a:Room)-[:ROOM_CONNECTED]-(b) WHERE NOT EXISTS { MATCH (b)-[:CONTAINS*]->(:Object {class: 'bed'}) } "
        "RETURN b.nodeSymbol",
        "MATCH (o:Object) WHERE o.class = 'door' RETURN count(o)",  # the question's own word: absent, 0
        "MATCH (o:Object {class: 'doors'}) RETURN count(o)",  # in a pattern too (no label holds it)
        "MATCH (r:Room {class: 'doors'}) RETURN count(r)",
        "match (n) where n:Room return count(n)",
        "MATCH p = shortestPath((a:MeshPlace {nodeSymbol: 'P59110'})-[:MESH_PLACE_CONNECTED*]-(b:MeshPlace)) "
        "RETURN length(p)",
    ],
)
def test_correct_queries_are_in_the_language(grammar: Grammar, query: str) -> None:
    assert grammar.accepts(query), query[: grammar.longest_prefix(query)]


@pytest.mark.parametrize(
    "query, stops_before",
    [
        ("MATCH (l:Light) RETURN l", "Light"),  # a class written as a label
        ("MATCH (o:Object)-[:CONTAINS]->(r:Room) RETURN r", "Room"),  # objects hold nothing
        ("MATCH (o:Object)-[:NEAR]-(b) RETURN b", "NEAR"),  # no such relationship type
        ("MATCH (o:Object {material: 'wood'}) RETURN o", "material"),  # no such key on objects
        (
            "MATCH (o:Object) WHERE o.class = 'lamp' RETURN o",
            "lamp",
        ),  # a value neither graph nor question has
        ("MATCH (o:Object) RETURN o.label", "label"),  # no such property
        ("MATCH (o:Object {nodeSymbol: 'doors'}) RETURN o", "doors"),  # a question word is no symbol
        # a class only another label holds, in a node's pattern: it would match nothing
        ("MATCH (b:MeshPlace {class: 'bicycle'})<-[:CONTAINS]-(r:Room) RETURN r", "bicycle"),
        ("MATCH (r:Room {class: 'sign'}) RETURN r", "sign"),
        ("MATCH (o:Object {class: 'lounge'}) RETURN o", "lounge"),
        ("SELECT * FROM objects", "SELECT"),  # not a read clause
    ],
)
def test_invented_names_cannot_be_written(grammar: Grammar, query: str, stops_before: str) -> None:
    assert not grammar.accepts(query)
    assert grammar.longest_prefix(query) <= query.index(stops_before) + 1
