"""A short soak of the real server (issue 26): 8 clients send a mix of good queries, parse errors, unknown
labels, refused writes, an all-pairs query and slow cartesian counts asking ``timeout_s: 3`` while
``/health`` is polled. Liveness must hold (every health check under 1 s), nothing may fail with a 500,
every request gets the answer its kind calls for, and the graph stays intact — over ``POST /cypher`` and
over MCP streamable HTTP (``cypher_query``). Marked slow (~2 x 12 s); ``benchmarks/server_soak.py``
measures the same mix for longer and prints the latency figures.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from conftest import served_heap
from scenerag import SceneGraph
from scenerag.serve import BackgroundServer, SceneService, ServerConfig
from scenerag.serve.http_api import create_app
from scenerag.store import CypherStore, open_store

pytestmark = pytest.mark.slow

CLIENTS = 8
DURATION_S = 12.0
SLOW = (
    "MATCH (a:MeshPlace), (b:MeshPlace), (c:MeshPlace), (d:MeshPlace) "
    "WHERE point.distance(a.center, b.center) + point.distance(c.center, d.center) > 1000 RETURN count(*) AS n"
)
MIX: list[tuple[str, dict[str, Any]]] = [
    ("good", {"query": "MATCH (o:Object {nodeSymbol: 'O10'}) RETURN o.class AS c"}),
    ("good", {"query": "MATCH (r:Room {nodeSymbol: 'R1'})-[:CONTAINS]->(p:MeshPlace) RETURN count(p) AS n"}),
    ("syntax", {"query": "MATCH (o:Object RETURN o"}),
    ("good", {"query": "MATCH (o:Object {class: 'sign'}) RETURN o.nodeSymbol AS s ORDER BY s"}),
    ("unknown", {"query": "MATCH (o:Objekt) RETURN o"}),
    ("write", {"query": "MATCH (o:Object) DETACH DELETE o"}),
    ("allpairs", {"query": "MATCH (a:MeshPlace), (b:MeshPlace) RETURN a.nodeSymbol AS a, b.nodeSymbol AS b"}),
    ("slow", {"query": SLOW, "timeout_s": 3}),
]
#: what each kind may answer: HTTP statuses, or MCP results ("ok" / the tool error's kind)
EXPECTED_HTTP = {
    "good": {"200", "503"},
    "allpairs": {"200", "503"},
    "syntax": {"400"},
    "unknown": {"400"},
    "write": {"403"},
    "slow": {"503", "504"},
}
EXPECTED_MCP = {
    "good": {"ok", "overloaded"},
    "allpairs": {"ok", "overloaded"},
    "syntax": {"syntax"},
    "unknown": {"unknown_name"},
    "write": {"write_refused"},
    "slow": {"overloaded", "timeout"},
}
TOTALS = "MATCH (n) WITH count(n) AS n MATCH ()-[r]->() RETURN n, count(r) AS r"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph) -> Iterator[CypherStore]:
    s = open_store(tmp_path_factory.mktemp("soak") / "db")
    s.load(hydra_graph)
    yield s
    s.close()


def _mcp_call(client: httpx2.Client, body: dict[str, Any], ids: Iterator[int]) -> str:
    arguments = {k: body[k] for k in ("query", "timeout_s") if k in body}
    message = {
        "jsonrpc": "2.0",
        "id": next(ids),
        "method": "tools/call",
        "params": {"name": "cypher_query", "arguments": arguments},
    }
    r = client.post("/mcp", json=message, headers=MCP_HEADERS)
    if r.status_code != 200:
        return f"http {r.status_code}"
    result = r.json().get("result") or {}
    if not result.get("isError"):
        return "ok"
    text = " ".join(c.get("text", "") for c in result.get("content", []))
    match = re.search(r"cypher_query: (\w+)", text)
    return match.group(1) if match else text[:80]


@pytest.mark.parametrize("transport", ["http", "mcp"])
def test_server_stays_live_under_mixed_load(
    store: CypherStore, hydra_graph: SceneGraph, transport: str
) -> None:
    service = SceneService(store, ServerConfig(rate_limit_per_s=None))
    answers: dict[str, Counter[str]] = defaultdict(Counter)
    health: list[tuple[int | str, float]] = []
    lock = threading.Lock()
    with served_heap(), BackgroundServer(create_app(service)) as srv:
        with httpx2.Client(base_url=srv.url, timeout=30) as c:
            before = c.post("/cypher", json={"query": TOTALS}).json()["rows"]
        stop = time.monotonic() + DURATION_S

        def client(index: int) -> None:
            ids = itertools.count(1)
            mix = itertools.islice(itertools.cycle(MIX), index, None)
            with httpx2.Client(base_url=srv.url, timeout=30) as c:
                while time.monotonic() < stop:
                    kind, body = next(mix)
                    if transport == "mcp":
                        answer = _mcp_call(c, body, ids)
                    else:
                        answer = str(c.post("/cypher", json=body).status_code)
                    with lock:
                        answers[kind][answer] += 1

        def poll() -> None:
            with httpx2.Client(base_url=srv.url, timeout=10) as c:
                while time.monotonic() < stop:
                    t0 = time.monotonic()
                    try:
                        status: int | str = c.get("/health").status_code
                    except httpx2.TimeoutException:
                        status = "timeout"
                    health.append((status, time.monotonic() - t0))
                    time.sleep(0.25)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        threads.append(threading.Thread(target=poll))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with httpx2.Client(base_url=srv.url, timeout=30) as c:
            after = c.post("/cypher", json={"query": TOTALS}).json()["rows"]

    assert health and all(status == 200 for status, _ in health), health
    slowest = max(seconds for _, seconds in health)
    assert slowest < 1.0, f"/health took {slowest:.2f} s under load"
    expected = EXPECTED_HTTP if transport == "http" else EXPECTED_MCP
    for kind, counts in answers.items():
        assert set(counts) <= expected[kind], (kind, dict(counts))
    assert all(not a.startswith("5") or a in ("503", "504") for counts in answers.values() for a in counts)
    assert answers["good"]["200" if transport == "http" else "ok"] > 0  # cheap queries got through
    assert before == after == [{"n": hydra_graph.num_nodes, "r": hydra_graph.num_edges}]
