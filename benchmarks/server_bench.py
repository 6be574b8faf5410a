"""HTTP server benchmark: requests/s and p50/p95 latency of ``POST /cypher`` with 1, 4 and 8 concurrent
clients, against a real server process (``python -m scenerag.serve``) on a synthetic outdoor graph.

Usage::

    .venv/bin/python benchmarks/server_bench.py                       # 16k-place outdoor graph
    .venv/bin/python benchmarks/server_bench.py --places 100000 --requests 300
    .venv/bin/python benchmarks/server_bench.py --graph scene.json    # any native scene-graph file

Each client thread keeps one HTTP connection and sends a mix of small read queries (point lookup by
symbol, 1-hop neighbours, region containment count) with random symbols. Also printed: the same queries
run directly on the store in-process (the floor under the HTTP figures), and ``/retrieve_subgraph``
latency (lexical search) from one client. Client and server share this machine's cores. The figures and the
run's conditions go to ``benchmarks/results/server_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2

from bench_record import BenchRecord, add_record_argument
from scenerag.graph import read_scene_graph
from scenerag.graph.model import SceneGraph
from scenerag.serve import free_port
from scenerag.sim.outdoor import generate_outdoor_graph
from scenerag.store import open_store

LOOKUP = "MATCH (p:Place {nodeSymbol: $s}) RETURN p.class AS c, p.center AS center"
NEIGHBOURS = "MATCH (p:Place {nodeSymbol: $s})-[:PLACE_CONNECTED]-(q:Place) RETURN q.nodeSymbol AS s"
REGION = "MATCH (r:Room {nodeSymbol: $s})-[:CONTAINS]->(p:Place) RETURN count(p) AS n"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def request_mix(graph: SceneGraph, n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    places = [p.symbol for p in graph.nodes("Place")]
    rooms = [r.symbol for r in graph.nodes("Room")]
    if not places or not rooms:
        raise SystemExit("the graph needs Place and Room nodes (use the outdoor generator or a Hydra graph)")
    out = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            out.append({"query": LOOKUP, "params": {"s": rng.choice(places)}})
        elif kind == 1:
            out.append({"query": NEIGHBOURS, "params": {"s": rng.choice(places)}})
        else:
            out.append({"query": REGION, "params": {"s": rng.choice(rooms)}})
    return out


def start_server(
    db: Path, *args: str, env: dict[str, str] | None = None, timeout_s: float = 180.0
) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m scenerag.serve --db DB --port <free> ARGS...`` in a child process, once it answers
    ``/health``; returns the process and its URL (its log goes to ``<db>/../server.log``)."""
    port = free_port()
    command = [sys.executable, "-m", "scenerag.serve", "--db", str(db), "--port", str(port), *args]
    log = open(Path(db).parent / "server.log", "wb")  # noqa: SIM115 (kept open for the server's life)
    server = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env={**(env or os.environ), "PYTHONUNBUFFERED": "1"}
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx2.get(url + "/health", timeout=2).status_code == 200:
                return server, url
        except httpx2.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise SystemExit(f"the server did not start: see {Path(db).parent / 'server.log'}")
        time.sleep(0.2)


def run_clients(url: str, clients: int, bodies: list[list[dict[str, Any]]]) -> tuple[float, list[float], int]:
    """Wall time, per-request latencies (ms) and error count of ``clients`` threads sending their bodies."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    start_gate = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        with httpx2.Client(base_url=url, timeout=60) as c:
            c.get("/health")  # open the connection before the clock starts
            start_gate.wait()
            for body in bodies[index]:
                t0 = time.perf_counter()
                r = c.post("/cypher", json=body)
                latencies[index].append((time.perf_counter() - t0) * 1000.0)
                if r.status_code != 200:
                    errors[index] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    start_gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return wall, [x for xs in latencies for x in xs], sum(errors)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--graph", type=Path, help="a native scene-graph JSON file (default: synthetic outdoor)"
    )
    parser.add_argument("--places", type=int, default=15_944, help="outdoor graph size (places)")
    parser.add_argument("--clients", default="1,4,8", help="comma-separated client counts")
    parser.add_argument("--requests", type=int, default=400, help="requests per client per run")
    parser.add_argument("--seed", type=int, default=0)
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(
        args,
        graph=str(args.graph) if args.graph else f"synthetic outdoor, {args.places} places",
        clients="threads in this process; server in a child process on the same cores",
    )
    results = record.results
    client_counts = [int(c) for c in args.clients.split(",")]

    if args.graph:
        graph = read_scene_graph(args.graph)
    else:
        graph = generate_outdoor_graph(
            n_places=args.places, n_regions=max(1, args.places // 128), seed=args.seed
        )
    print(f"graph: {graph.summary()}")
    results["graph"] = graph.summary()
    workdir = Path(tempfile.mkdtemp(prefix="scenerag-server-bench-"))
    db = workdir / "db"
    store = open_store(db)
    store.load(graph)
    direct = []
    for body in request_mix(graph, 600, args.seed + 99):
        t0 = time.perf_counter()
        store.query(body["query"], body["params"])
        direct.append((time.perf_counter() - t0) * 1000.0)
    direct = direct[100:]  # after warm-up
    print(
        f"in-process store.query (no HTTP): p50 {statistics.median(direct):.2f} ms, p95 {percentile(direct, 0.95):.2f} ms"
    )
    results["in_process_ms"] = [statistics.median(direct), percentile(direct, 0.95)]
    store.close()

    server, url = start_server(db, "--rate-limit", "0", "--llm", "none")
    try:
        run_clients(url, 2, [request_mix(graph, 150, args.seed + 1 + i) for i in range(2)])  # warm-up (JIT)

        print(f"\nPOST /cypher, {args.requests} requests per client (mix: lookup / 1-hop / region count)")
        print(f"{'clients':>7} {'req/s':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>6}")
        for clients in client_counts:
            bodies = [
                request_mix(graph, args.requests, args.seed + 1000 * clients + i) for i in range(clients)
            ]
            wall, latencies, errors = run_clients(url, clients, bodies)
            print(
                f"{clients:>7} {len(latencies) / wall:>9.1f} {statistics.median(latencies):>8.2f} "
                f"{percentile(latencies, 0.95):>8.2f} {percentile(latencies, 0.99):>8.2f} {errors:>6}"
            )
            results.setdefault("cypher", []).append(
                {
                    "clients": clients,
                    "requests_per_s": len(latencies) / wall,
                    "latency_ms": {
                        "p50": statistics.median(latencies),
                        "p95": percentile(latencies, 0.95),
                        "p99": percentile(latencies, 0.99),
                    },
                    "errors": errors,
                }
            )

        texts = ["tree near the road", "parked car", "bench", "building entrance", "lamp post"]
        samples = []
        with httpx2.Client(base_url=url, timeout=60) as c:
            for i in range(25):
                t0 = time.perf_counter()
                r = c.post("/retrieve_subgraph", json={"text": texts[i % len(texts)], "k": 10})
                samples.append((time.perf_counter() - t0) * 1000.0)
                if r.status_code != 200:
                    print("retrieve_subgraph failed:", r.text[:200])
                    break
        print(
            f"\nPOST /retrieve_subgraph (lexical, k=10, 1 client, {graph.num_nodes} nodes): "
            f"p50 {statistics.median(samples):.1f} ms, p95 {percentile(samples, 0.95):.1f} ms"
        )
        results["retrieve_subgraph_ms"] = [statistics.median(samples), percentile(samples, 0.95)]
    finally:
        server.terminate()
        server.wait(timeout=30)
    record.write()


if __name__ == "__main__":
    main()
