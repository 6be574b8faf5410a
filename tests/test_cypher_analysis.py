from __future__ import annotations

import pytest

from scenerag.store.cypher import analyze, bound_var_lengths, error_position


@pytest.mark.parametrize(
    ("query", "writes"),
    [
        ("MATCH (o:Object) RETURN o", []),
        ("MATCH (o:Object) WHERE o.class = 'CREATE' RETURN o // DELETE everything", []),
        ("MATCH (o:Object) /* SET */ RETURN o.class AS set_name", []),
        ("MATCH (o:Object) SET o.class = 'bag'", ["SET"]),
        ("create (x:Object {nodeSymbol: 'O9'})", ["CREATE"]),
        ("MATCH (n) DETACH DELETE n", ["DETACH", "DELETE"]),
        ("MERGE (a:Room {nodeSymbol: 'R9'})", ["MERGE"]),
        ("MATCH (n) REMOVE n.class", ["REMOVE"]),
        ("LOAD CSV FROM 'file:///x' AS row RETURN row", ["LOAD"]),
        ("MATCH (n) CALL { WITH n SET n.x = 1 } IN TRANSACTIONS", ["SET", "IN TRANSACTIONS"]),
        ("MATCH (o:Object) WITH {set: 1} AS m RETURN m.set", []),
    ],
)
def test_write_detection_ignores_strings_comments_and_map_keys(query: str, writes: list[str]) -> None:
    assert analyze(query).write_clauses == writes


def test_procedures_names_and_var_lengths() -> None:
    q = (
        "MATCH (r:Room {nodeSymbol:'R1'})-[:CONTAINS*]->(o:Object)-[c:OBJECT_CONNECTED*1..3]-(p) "
        "WHERE o.class = 'mug' AND point.distance(o.center, point({x: 1, y: 2, z: 0})) < 3 "
        "CALL db.labels() YIELD label RETURN o.nodeSymbol, c, label"
    )
    a = analyze(q)
    assert a.procedures == ["db.labels"]
    assert set(a.labels) == {"Room", "Object"}
    assert set(a.rel_types) == {"CONTAINS", "OBJECT_CONNECTED"}
    assert a.node_vars["o"] == {"Object"} and a.node_vars["p"] == set()
    assert ("o", "class") in a.property_refs and ("o", "center") in a.property_refs
    assert ("point", "distance") not in a.property_refs
    assert ("node", frozenset({"Room"}), "nodeSymbol") in a.pattern_keys
    assert [(v.types, v.lower, v.upper) for v in a.var_lengths] == [
        (("CONTAINS",), 1, None),
        (("OBJECT_CONNECTED",), 1, 3),
    ]
    rewritten = bound_var_lengths(q, [(v, 4) for v in a.unbounded])
    assert "[:CONTAINS*1..4]->" in rewritten
    assert rewritten.replace("*1..4", "*") == q


@pytest.mark.parametrize(
    ("rel", "bounds"),
    [
        ("[*]", (1, None)),
        ("[:T*2..]", (2, None)),
        ("[:T*3]", (3, 3)),
        ("[:T*..4]", (1, 4)),
        ("[:T*0..2]", (0, 2)),
    ],
)
def test_var_length_forms(rel: str, bounds: tuple[int, int | None]) -> None:
    (v,) = analyze(f"MATCH (a)-{rel}-(b) RETURN b").var_lengths
    assert (v.lower, v.upper) == bounds


def test_list_literals_are_not_relationships() -> None:
    a = analyze("WITH [1, 2, 3] AS xs MATCH (o:Object) WHERE o.class IN ['a', 'b'] RETURN xs[0]")
    assert a.rel_types == [] and a.var_lengths == []


def test_error_positions() -> None:
    assert error_position("Syntax error at line 1:16 - mismatched input") == (1, 17)
    assert error_position("Invalid input 'RETURN': expected (line 2, column 5 (offset: 30))") == (2, 5)
    assert error_position("no position here") is None


def test_a_function_namespace_is_no_unbound_variable() -> None:
    from scenerag.agents.cypher_check import unbound_variables

    apoc = "MATCH (o:Object) WITH o.class AS c, count(o) AS n RETURN apoc.map.fromPairs(collect([c, n]))"
    assert unbound_variables(apoc) == []
    assert unbound_variables("MATCH (o:Object) RETURN r.nodeSymbol") == ["r"]
    # a name used as a namespace and read as a node once is still unbound
    assert unbound_variables("MATCH (o:Object) RETURN apoc.x(o), apoc.nodeSymbol") == ["apoc"]
