"""Graph-store benchmark: load time and query latency on synthetic outdoor graphs (embedded ArcadeDB).

Usage::

    .venv/bin/python benchmarks/store_bench.py                 # 16k and 1M places
    .venv/bin/python benchmarks/store_bench.py --sizes 15944   # one size
    .venv/bin/python benchmarks/store_bench.py --backend bolt  # through the neo4j driver to an ArcadeDB server

Writes the rows and the run's conditions (machine load included) to ``benchmarks/results/store_bench.json``
(``--record PATH``; see ``bench_record.py``).

Prints, per size: generation time; the time of the first load (for the first size, that of a fresh JVM:
class loading and JIT warm-up included) and the median of the further ``--loads`` (wall and CPU); p50/p95
of transitive containment (room -> objects through places), 5-hop place neighbourhood, 10 m radius
queries (plain and through the ``cell`` grid index), the client-side query overhead, and the resident
memory of the process (Python + JVM).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_record import BenchRecord, add_record_argument
from scenerag.sim.outdoor import generate_outdoor_graph
from scenerag.store import CypherStore, open_store
from scenerag.store.rows import cells_within

TRANSITIVE = "MATCH (r:Room {nodeSymbol: $r})-[:CONTAINS*]->(o:Object) RETURN count(DISTINCT o) AS n"
HOPS5 = "MATCH (p:Place {nodeSymbol: $p})-[:PLACE_CONNECTED*1..5]-(q:Place) RETURN count(DISTINCT q) AS n"
RADIUS_PLAIN = "MATCH (p:Place) WHERE point.distance(p.center, point({x: $x, y: $y, z: 0.0})) <= 10.0 RETURN count(p) AS n"
RADIUS_CELL = (
    "MATCH (p:Place) WHERE p.cell IN $cells AND point.distance(p.center, point({x: $x, y: $y, z: 0.0})) <= 10.0 "
    "RETURN count(p) AS n"
)


def rss_mib() -> float:
    """Current resident set size of this process (Python + the embedded JVM), MiB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """CPU seconds of this process, all threads (Python + JVM): the machine-load-independent cost."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return statistics.median(ordered), p95


def timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def bench_size(
    n_places: int, backend: str, bolt_uri: str | None, repeats: int, loads: int, tmp: Path
) -> dict[str, Any]:
    n_regions = max(1, round(124 * n_places / 15_944)) if n_places > 15_944 else 124
    n_objects = max(1, round(314 * n_places / 15_944)) if n_places > 15_944 else 314
    start = time.perf_counter()
    graph = generate_outdoor_graph(n_places=n_places, n_regions=n_regions, n_objects=n_objects)
    gen_s = time.perf_counter() - start
    store: CypherStore = (
        open_store(bolt_uri) if backend == "bolt" and bolt_uri else open_store(tmp / f"db-{n_places}")
    )
    try:
        load_s, load_cpu_s = [], []
        for _ in range(loads):
            start, cpu0 = time.perf_counter(), cpu_s()
            store.load(graph)
            load_s.append(time.perf_counter() - start)
            load_cpu_s.append(cpu_s() - cpu0)
        rng = random.Random(0)
        rooms = [f"R{rng.randrange(n_regions)}" for _ in range(repeats)]
        places = [f"P{rng.randrange(n_places)}" for _ in range(repeats)]
        centres = [graph.node(p).position for p in places]
        # warm up the query caches and the JIT
        for i in range(min(20, repeats)):
            store.query(TRANSITIVE, {"r": rooms[i]})
            store.query(HOPS5, {"p": places[i]})
            store.query(
                RADIUS_CELL,
                {
                    "x": centres[i][0],
                    "y": centres[i][1],
                    "cells": cells_within(centres[i][0], centres[i][1], 10.0),
                },
            )
        it = iter(range(10**9))
        trans = timed(lambda: store.query(TRANSITIVE, {"r": rooms[next(it) % repeats]}), repeats)
        it = iter(range(10**9))
        hops = timed(lambda: store.query(HOPS5, {"p": places[next(it) % repeats]}), repeats)

        def radius_cell() -> None:
            x, y, _ = centres[next(it) % repeats]
            store.query(RADIUS_CELL, {"x": x, "y": y, "cells": cells_within(x, y, 10.0)})

        it = iter(range(10**9))
        rad_cell = timed(radius_cell, repeats)

        def radius_plain() -> None:
            x, y, _ = centres[next(it) % repeats]
            store.query(RADIUS_PLAIN, {"x": x, "y": y})

        it = iter(range(10**9))
        rad_plain = timed(radius_plain, max(3, repeats // 20))
        # Engine time alone: the same transitive query measured inside the result (client overhead excluded).
        engine = [store.query(TRANSITIVE, {"r": r}).elapsed_ms for r in rooms]
        return {
            "places": n_places,
            "nodes": graph.num_nodes,
            "edges": graph.num_edges,
            "gen_s": gen_s,
            "load_first_s": load_s[0],
            "load_s": statistics.median(load_s[1:] or load_s),
            "load_cpu_s": statistics.median(load_cpu_s[1:] or load_cpu_s),
            "transitive": percentiles(trans),
            "transitive_engine": percentiles(engine),
            "hops5": percentiles(hops),
            "radius_cell": percentiles(rad_cell),
            "radius_plain": percentiles(rad_plain),
            "rss_mib": rss_mib(),
        }
    finally:
        store.close()
        del graph


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[15_944, 1_000_000], help="place counts")
    ap.add_argument("--repeats", type=int, default=200, help="queries per measurement")
    ap.add_argument(
        "--loads",
        type=int,
        default=3,
        help="loads per size: the first is reported apart, then the median of the rest",
    )
    ap.add_argument("--backend", choices=["arcade", "bolt"], default="arcade")
    ap.add_argument("--bolt-uri", default=os.environ.get("SCENERAG_BENCH_BOLT"))
    add_record_argument(ap)
    args = ap.parse_args()
    record = BenchRecord(args, backend=args.backend, graphs="synthetic outdoor (generate_outdoor_graph)")
    tmp = Path(tempfile.mkdtemp(prefix="scenerag-bench-"))
    rows = []
    try:
        for n in args.sizes:
            print(f"-- {n:,} places ...", file=sys.stderr, flush=True)
            rows.append(bench_size(n, args.backend, args.bolt_uri, args.repeats, args.loads, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times include contention)"
    )
    print(
        f"\nbackend: {args.backend}; {os.cpu_count()} cores; latencies in ms (p50 / p95), {args.repeats} queries each"
    )
    header = (
        f"{'places':>10} {'nodes':>10} {'edges':>10} {'gen s':>7} {'load 1st':>8} {'load s':>7} {'load cpu':>8} {'transitive':>15} "
        f"{'(engine)':>15} {'5-hop':>15} {'10 m (cell)':>15} {'10 m (scan)':>15} {'RSS MiB':>8}"
    )
    print(header)
    for r in rows:

        def fmt(p: tuple[float, float]) -> str:
            return f"{p[0]:.2f} / {p[1]:.2f}"

        print(
            f"{r['places']:>10,} {r['nodes']:>10,} {r['edges']:>10,} {r['gen_s']:>7.1f} {r['load_first_s']:>8.1f} {r['load_s']:>7.1f} {r['load_cpu_s']:>8.1f} "
            f"{fmt(r['transitive']):>15} {fmt(r['transitive_engine']):>15} {fmt(r['hops5']):>15} "
            f"{fmt(r['radius_cell']):>15} {fmt(r['radius_plain']):>15} {r['rss_mib']:>8.0f}"
        )
    record.results["units"] = "seconds (gen_s, load_*), ms (latencies: [p50, p95]), MiB (rss_mib)"
    record.results["rows"] = rows
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
