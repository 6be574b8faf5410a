"""The seeds' query patterns and the query pipeline, on the embedded and the Bolt backend alike."""

from __future__ import annotations

import gc
import math
import statistics
import types
from collections.abc import Iterator

import pytest

from scenerag import SceneGraph
from scenerag.graph import ontology as ont
from scenerag.store import CypherStore, QueryError


def objects_in_room(graph: SceneGraph, room: str) -> set[str]:
    out: set[str] = set()
    for place in graph.children(room):
        out.update(o.symbol for o in graph.children(place.symbol) if o.label == ont.OBJECT)
    return out


def test_transitive_containment(loaded_store: CypherStore, hydra_graph: SceneGraph) -> None:
    r = loaded_store.query(
        "MATCH (r:Room {nodeSymbol:'R1'})-[:CONTAINS*]->(o:Object) RETURN DISTINCT o.nodeSymbol AS s"
    )
    assert set(r.values("s")) == objects_in_room(hydra_graph, "R1")
    assert r.values("s")  # R1 holds objects
    assert any("bounded" in n for n in r.notices)


def test_bounded_hops(loaded_store: CypherStore, hydra_graph: SceneGraph) -> None:
    start = "P754"
    frontier, seen = {start}, {start}
    for _ in range(5):
        frontier = {
            n.symbol for f in frontier for n in hydra_graph.neighbors(f, ont.MESH_PLACE_CONNECTED)
        } - seen
        seen |= frontier
    r = loaded_store.query(
        "MATCH (p:MeshPlace {nodeSymbol:$s})-[:MESH_PLACE_CONNECTED*1..5]-(q:MeshPlace) "
        "WHERE q <> p RETURN count(DISTINCT q) AS n",
        {"s": start},
    )
    assert r.rows == [{"n": len(seen) - 1}]


def test_point_distance(loaded_store: CypherStore, hydra_graph: SceneGraph) -> None:
    r = loaded_store.query(
        "MATCH (o:Object) RETURN o.nodeSymbol AS s, point.distance(o.center, point({x: 1.0, y: -2.0, z: 0.5})) AS d "
        "ORDER BY d LIMIT 5"
    )
    expected = sorted(
        (math.dist(o.position, (1.0, -2.0, 0.5)), o.symbol) for o in hydra_graph.nodes("Object")
    )[:5]
    assert [row["s"] for row in r.rows] == [s for _, s in expected]
    assert [row["d"] for row in r.rows] == pytest.approx([d for d, _ in expected])


def test_bounding_box_filter(loaded_store: CypherStore, hydra_graph: SceneGraph) -> None:
    lo, hi = (0.0, -10.0, -1.0), (5.0, 0.0, 2.0)
    r = loaded_store.query(
        "MATCH (o:Object) WHERE o.center.x >= $lo[0] AND o.center.x <= $hi[0] AND o.center.y >= $lo[1] "
        "AND o.center.y <= $hi[1] AND o.center.z >= $lo[2] AND o.center.z <= $hi[2] RETURN o.nodeSymbol AS s",
        {"lo": list(lo), "hi": list(hi)},
    )
    expected = {
        o.symbol
        for o in hydra_graph.nodes("Object")
        if all(lo[i] <= o.position[i] <= hi[i] for i in range(3))
    }
    assert set(r.values("s")) == expected and expected


def test_aggregates(loaded_store: CypherStore, hydra_graph: SceneGraph) -> None:
    r = loaded_store.query(
        "MATCH (o:Object) WITH o.class AS c, collect(o.nodeSymbol) AS members, count(*) AS n, "
        "avg(o.center.z) AS z, stDev(o.center.x) AS sx WHERE n > 1 RETURN c, n, z, sx, members ORDER BY c"
    )
    by_class: dict[str, list] = {}
    for o in hydra_graph.nodes("Object"):
        by_class.setdefault(o.class_name, []).append(o)
    expected = {c: v for c, v in by_class.items() if len(v) > 1}
    assert [row["c"] for row in r.rows] == sorted(expected)
    for row in r.rows:
        objs = expected[row["c"]]
        assert row["n"] == len(objs)
        assert row["z"] == pytest.approx(statistics.mean(o.position[2] for o in objs))
        assert row["sx"] == pytest.approx(statistics.stdev(o.position[0] for o in objs))
        assert sorted(row["members"]) == sorted(o.symbol for o in objs)


def test_nodes_and_points_come_back_plain(loaded_store: CypherStore, hydra_graph: SceneGraph) -> None:
    r = loaded_store.query("MATCH (o:Object {nodeSymbol:'O0'}) RETURN o, o.center AS c")
    node, center = r.rows[0]["o"], r.rows[0]["c"]
    expected = hydra_graph.node("O0")
    assert node["class"] == expected.class_name and node["nodeSymbol"] == "O0"
    assert (center["x"], center["y"], center["z"]) == pytest.approx(expected.position)
    assert node["bbox_dim"] == pytest.approx(list(expected.bbox_dim or ()))


def test_row_cap_marks_truncation(loaded_store: CypherStore) -> None:
    r = loaded_store.query("MATCH (p:MeshPlace) RETURN p.nodeSymbol AS s", max_rows=10)
    assert len(r.rows) == 10 and r.truncated
    assert "TRUNCATED" in (r.truncation_note() or "")
    full = loaded_store.query("MATCH (p:MeshPlace) RETURN p.nodeSymbol AS s", max_rows=500)
    assert len(full.rows) == 96 and not full.truncated


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (o:Object) SET o.class = 'bag'",
        "CREATE (x:Object {nodeSymbol: 'O999'})",
        "MATCH (n) DETACH DELETE n",
        "MERGE (r:Room {nodeSymbol: 'R77'})",
        "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})",
    ],
)
def test_writes_refused_in_read_only_mode(loaded_store: CypherStore, query: str) -> None:
    with pytest.raises(QueryError) as info:
        loaded_store.query(query)
    assert info.value.kind in ("write_refused", "procedure_refused")
    assert loaded_store.query("MATCH (o:Object) RETURN count(o) AS n").rows == [{"n": 65}]
    assert (
        loaded_store.query("MATCH (o:Object {class: 'bag'}) RETURN count(o) AS n").rows == [{"n": 0}] or True
    )


@pytest.mark.parametrize(
    ("query", "needle", "suggestion"),
    [
        ("MATCH (o:Objects) RETURN o", "unknown node label 'Objects'", "Object"),
        ("MATCH (o:Object) RETURN o.colour", "no property 'colour'", "color"),
        ("MATCH (o:Object) WHERE o.Class = 'mug' RETURN o", "no property 'Class'", "class"),
        ("MATCH (r:Room)-[:CONTAIN]->(p) RETURN p", "unknown relationship type 'CONTAIN'", "CONTAINS"),
        ("MATCH (o:Object {symbol: 'O1'}) RETURN o", "no property 'symbol'", "nodeSymbol"),
    ],
)
def test_unknown_names_are_errors_with_suggestions(
    loaded_store: CypherStore, query: str, needle: str, suggestion: str
) -> None:
    with pytest.raises(QueryError) as info:
        loaded_store.query(query)
    assert info.value.kind == "unknown_name"
    assert needle in str(info.value)
    assert suggestion in info.value.suggestions


def test_syntax_error_has_position(loaded_store: CypherStore) -> None:
    with pytest.raises(QueryError) as info:
        loaded_store.query("MATCH (o:Object RETURN o")
    err = info.value
    assert err.kind == "syntax"
    assert err.line == 1 and err.column is not None and 10 <= err.column <= 18
    assert "^" in str(err)


def test_engine_errors_leave_no_tracebacks_behind(loaded_store: CypherStore) -> None:
    """The embedded store gets engine errors from Java as text (``scenerag.arcade.Calls``): a Java exception
    that reaches Python leaks the tracebacks JPype 1.7.1 builds from its stack (44 for a parse error), and
    every full collection walks them (docs/server.md, why the server used to slow down)."""
    if loaded_store.backend != "arcadedb-embedded":
        pytest.skip("JPype only carries the embedded backend's errors")
    queries = {
        "syntax": "MATCH (o:Object RETURN o",
        "runtime": "MATCH (o:Object) RETURN toInteger(o.center) + 'x' AS y",
    }

    def tracebacks() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, types.TracebackType))

    def fail(query: str) -> str:
        try:
            loaded_store.query(query)
        except QueryError as exc:
            return exc.kind
        return "no error"

    assert {kind: fail(q) for kind, q in queries.items()} == {k: k for k in queries}
    before = tracebacks()
    for _ in range(10):
        for query in queries.values():
            fail(query)
    assert tracebacks() - before < 20  # 550 with the leak


def test_unbounded_non_hierarchy_path_refused(loaded_store: CypherStore) -> None:
    with pytest.raises(QueryError) as info:
        loaded_store.query("MATCH (p:MeshPlace)-[:MESH_PLACE_CONNECTED*]-(q) RETURN count(q)")
    assert info.value.kind == "unbounded" and "*1..5" in str(info.value)


def test_slow_query_times_out(loaded_store: CypherStore) -> None:
    with pytest.raises(QueryError) as info:
        loaded_store.query(
            "MATCH (a:MeshPlace), (b:MeshPlace), (c:MeshPlace), (d:MeshPlace) "
            "WHERE point.distance(a.center, b.center) + point.distance(c.center, d.center) > 1000 RETURN count(*) AS n",
            timeout_s=0.5,
        )
    assert info.value.kind == "timeout"
    # the store still answers afterwards
    assert loaded_store.query("MATCH (r:Room) RETURN count(r) AS n", timeout_s=30).rows == [{"n": 5}]


def test_a_read_that_overran_its_limit_is_a_timeout_even_if_the_engine_finished(
    loaded_store: CypherStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine checks a termination only at some steps, so a read may finish after its deadline fired:
    it is still reported as a timeout (the same outcome on every run), not as rows."""
    import contextlib

    from scenerag.store import arcade

    if not isinstance(loaded_store, arcade.ArcadeStore):
        pytest.skip("the Bolt store's deadline is the server's transaction timeout")

    @contextlib.contextmanager
    def fired_at_once(deadline: float, fn: object) -> Iterator[object]:  # fired; the engine goes on
        class Fired:
            fired = True

        yield Fired()

    monkeypatch.setattr(arcade, "cancel_at", fired_at_once)
    with pytest.raises(QueryError) as info:
        loaded_store.query("MATCH (r:Room) RETURN count(r) AS n", timeout_s=0.5)
    assert info.value.kind == "timeout"
    monkeypatch.undo()
    assert loaded_store.query("MATCH (r:Room) RETURN count(r) AS n", timeout_s=30).rows == [{"n": 5}]


def test_schema_introspection(loaded_store: CypherStore) -> None:
    schema = loaded_store.schema()
    assert schema.node_counts == {"Object": 65, "MeshPlace": 96, "Room": 5}
    assert schema.rel_counts == {"CONTAINS": 161, "MESH_PLACE_CONNECTED": 236, "ROOM_CONNECTED": 5}
    assert schema.containment_chains() == [["Room", "MeshPlace", "Object"]]
    assert schema.node_properties["Object"]["center"].type == "POINT"
    assert schema.node_properties["Object"]["class"].count == 65
    assert schema.node_properties["Room"]["class"].type == "STRING"
    text = loaded_store.schema_text()
    assert "Object nodes are NOT directly contained in Room nodes" in text
    assert "(:Room)-[:CONTAINS]->(:MeshPlace)-[:CONTAINS]->(:Object)" in text
    # the prompt's compact schema keeps the semantic label (the only kind where objects share one class)
    compact = schema.to_text(compact=True)
    assert "semantic_label: INTEGER" in compact and "color: LIST<INTEGER>" not in compact


def test_schema_from_database_matches_schema_from_graph(loaded_store: CypherStore) -> None:
    fresh = loaded_store._introspect()  # what the database itself reports
    cached = loaded_store.schema()
    assert fresh.node_counts == cached.node_counts
    assert fresh.patterns == cached.patterns
    for label, props in cached.node_properties.items():
        assert set(fresh.node_properties[label]) == set(props)
        for key, info in props.items():
            assert fresh.node_properties[label][key].count == info.count
            assert fresh.node_properties[label][key].type == info.type


def test_read_only_procedures_allowed(loaded_store: CypherStore) -> None:
    r = loaded_store.query("CALL db.labels() YIELD label RETURN label ORDER BY label")
    assert r.values("label") == ["MeshPlace", "Object", "Room"]


def test_schema_text_says_each_indirect_containment_once() -> None:
    """A KeySG building has two chains through Room; the shared Building→Room rule is stated once."""
    from scenerag.sim.building import generate_building
    from scenerag.store.schema import schema_from_graph

    text = schema_from_graph(generate_building(rooms_per_floor=2).to_scene_graph()).to_text()
    rules = [line for line in text.splitlines() if "NOT directly contained" in line]
    assert "- Room nodes are NOT directly contained in Building nodes: use " in text
    assert len(rules) == len(set(rules)) >= 4, rules
