"""Many clients at once against a real server: 8 clients x 500 read queries (``-m slow``; 8 x 120 by default)
with no error and no data change,
and readers running beside a writer (the read-write lock keeps every read whole and every write applied).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from scenerag import SceneGraph
from scenerag.serve import BackgroundServer, SceneService, ServerConfig
from scenerag.serve.http_api import create_app
from scenerag.store import CypherStore, open_store

CLIENTS = 8
QUERIES_PER_CLIENT = 500  # the full run (~20-35 s here) is marked slow; the quick one always runs
QUICK_QUERIES_PER_CLIENT = 120
TOTALS = "MATCH (n) WITH count(n) AS n MATCH ()-[r]->() RETURN n, count(r) AS r"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph) -> Iterator[CypherStore]:
    s = open_store(tmp_path_factory.mktemp("concurrency") / "db")
    s.load(hydra_graph)
    yield s
    s.close()


def expected_answers(
    graph: SceneGraph,
) -> list[tuple[dict[str, object], Callable[[list[dict[str, object]]], bool]]]:
    """Read queries with the answer each must give (checked on every response)."""
    objects = graph.label_counts()["Object"]
    signs = sorted(n.symbol for n in graph.nodes("Object") if n.class_name == "sign")
    room = next(graph.nodes("Room"))
    room_places = sorted(p.symbol for p in graph.children(room.symbol))
    return [
        ({"query": "MATCH (o:Object) RETURN count(o) AS n"}, lambda rows: rows == [{"n": objects}]),
        (
            {
                "query": "MATCH (o:Object {class: $c}) RETURN o.nodeSymbol AS s ORDER BY s",
                "params": {"c": "sign"},
            },
            lambda rows: sorted(r["s"] for r in rows) == signs,
        ),
        (
            {
                "query": "MATCH (:Room {nodeSymbol: $r})-[:CONTAINS]->(p) RETURN p.nodeSymbol AS s",
                "params": {"r": room.symbol},
            },
            lambda rows: sorted(r["s"] for r in rows) == room_places,
        ),
    ]


def totals(client: httpx2.Client) -> tuple[int, int]:
    row = client.post("/cypher", json={"query": TOTALS}).json()["rows"][0]
    return int(row["n"]), int(row["r"])


@pytest.mark.parametrize(
    "queries_per_client",
    [
        pytest.param(QUICK_QUERIES_PER_CLIENT, id="8x120"),
        pytest.param(QUERIES_PER_CLIENT, id="8x500", marks=pytest.mark.slow),
    ],
)
def test_many_concurrent_readers(
    store: CypherStore, hydra_graph: SceneGraph, queries_per_client: int
) -> None:
    checks = expected_answers(hydra_graph)
    service = SceneService(store, ServerConfig(rate_limit_per_s=None))
    failures: list[str] = []
    done = [0] * CLIENTS

    with BackgroundServer(create_app(service)) as srv:

        def client_run(index: int) -> None:
            with httpx2.Client(base_url=srv.url, timeout=60) as c:
                for i in range(queries_per_client):
                    body, ok = checks[(index + i) % len(checks)]
                    r = c.post("/cypher", json=body)
                    if r.status_code != 200 or not ok(r.json()["rows"]):
                        failures.append(f"client {index} query {i}: {r.status_code} {r.text[:200]}")
                    done[index] += 1

        with httpx2.Client(base_url=srv.url) as c:
            before = totals(c)
            with ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(client_run, range(CLIENTS)))
            after = totals(c)

    assert failures == []
    assert done == [queries_per_client] * CLIENTS
    assert before == after == (hydra_graph.num_nodes, hydra_graph.num_edges)


def test_readers_beside_one_writer(tmp_path: Path, hydra_graph: SceneGraph) -> None:
    store = open_store(tmp_path / "db")
    store.load(hydra_graph)
    writes, readers, reads = 25, 4, 60
    try:
        service = SceneService(store, ServerConfig(allow_write=True, rate_limit_per_s=None))
        with BackgroundServer(create_app(service)) as srv:
            seen: list[list[int]] = [[] for _ in range(readers)]
            failures: list[str] = []
            writer_done = threading.Event()

            def reader(index: int) -> None:
                with httpx2.Client(base_url=srv.url, timeout=60) as c:
                    for _ in range(reads):
                        r = c.post("/cypher", json={"query": "MATCH (o:Object) RETURN count(o) AS n"})
                        if r.status_code != 200:
                            failures.append(r.text[:200])
                            continue
                        seen[index].append(int(r.json()["rows"][0]["n"]))

            def writer() -> None:
                with httpx2.Client(base_url=srv.url, timeout=60) as c:
                    for i in range(writes):
                        query = "CREATE (:Object {nodeSymbol: $s, class: 'box', center: point({x: 0.0, y: 0.0, z: 0.0})})"
                        r = c.post(
                            "/cypher", json={"query": query, "params": {"s": f"O{90000 + i}"}, "write": True}
                        )
                        if r.status_code != 200:
                            failures.append(r.text[:200])
                writer_done.set()

            with ThreadPoolExecutor(readers + 1) as pool:
                jobs = [pool.submit(reader, i) for i in range(readers)] + [pool.submit(writer)]
                for job in jobs:
                    job.result()
            with httpx2.Client(base_url=srv.url) as c:
                final = totals(c)
        assert failures == [] and writer_done.is_set()
        objects = hydra_graph.label_counts()["Object"]
        for counts in seen:  # each reader saw whole writes only, never going backwards
            assert len(counts) == reads and counts == sorted(counts)
            assert all(objects <= n <= objects + writes for n in counts)
        assert final == (hydra_graph.num_nodes + writes, hydra_graph.num_edges)
    finally:
        store.close()
