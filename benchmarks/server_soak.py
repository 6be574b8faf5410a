"""Soak test of ``scenerag serve`` under a mixed load: does the server stay responsive?

A real server process (``python -m scenerag.serve``, loopback only, no rate limit, no model) serves the
Hydra example graph. ``--clients`` threads (default 8) each send, for ``--phases`` x ``--phase-s`` seconds, a
repeating mix of ``POST /cypher`` requests (or MCP ``cypher_query`` calls with ``--transport mcp``):

* ``good``: point lookups by symbol, 1-hop neighbours, containment counts, class listings;
* ``syntax``: parse errors; ``unknown``: an unknown label (both answered before the queue);
* ``write``: writes, refused (403) by a read-only server;
* ``allpairs``: every pair of mesh places (cut at the 1,000-row cap);
* ``slow``: a four-way cartesian count with a distance filter, asking ``timeout_s: 3``.

A poller sends ``GET /health`` every ``--health-interval`` seconds (10 s client timeout). Printed per phase:
status counts and p50/p95 latency per kind, health latency, the server's RSS, the CPU seconds of the server
and of the clients, and the server's busiest threads (``/proc/<pid>/task``); at the end, whether the graph
is intact and the issue's bars. The record goes to ``benchmarks/results/server_soak.json``.

``--server-src DIR`` runs the server from another source tree (e.g. ``/work/main/src`` for a before/after);
run it under ``flock /tmp/scenerag-heavy.lock`` on a shared machine. Usage::

    .venv/bin/python benchmarks/server_soak.py                       # 3 x 40 s, 8 clients
    .venv/bin/python benchmarks/server_soak.py --phases 1 --phase-s 20 --record -
    .venv/bin/python benchmarks/server_soak.py --transport mcp --record benchmarks/results/server_soak-mcp.json
    .venv/bin/python benchmarks/server_soak.py --trace /tmp/soak-trace   # + JVM and Python GC logs, lined up

``--trace DIR`` (``soak_trace.py``) logs the server's JVM collections, safepoints and JIT compilations and
its Python collections into DIR, and prints, for each ``/health`` poll over 50 ms, the events overlapping it.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import random
import re
import struct
import subprocess
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

import soak_trace
from bench_record import BenchRecord, add_record_argument
from scenerag.graph import read_scene_graph
from scenerag.graph.model import SceneGraph
from scenerag.store import open_store
from server_bench import start_server

DATA = Path(os.environ.get("SCENERAG_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
DEFAULT_GRAPH = DATA / "hydra_small_indoor_dsg.json"
SLOW_TIMEOUT_S = 3.0
#: request kinds and how many of each one cycle of the mix holds
MIX = {"good": 4, "syntax": 1, "unknown": 1, "write": 1, "allpairs": 1, "slow": 1}
SLOW = (
    "MATCH (a:MeshPlace), (b:MeshPlace), (c:MeshPlace), (d:MeshPlace) "
    "WHERE point.distance(a.center, b.center) + point.distance(c.center, d.center) > 1000 RETURN count(*) AS n"
)
ALL_PAIRS = "MATCH (a:MeshPlace), (b:MeshPlace) RETURN a.nodeSymbol AS a, b.nodeSymbol AS b"
TOTALS = (
    "MATCH (n) WITH count(n) AS nodes, count(DISTINCT n.nodeSymbol) AS symbols "
    "MATCH ()-[r]->() RETURN nodes, symbols, count(r) AS rels"
)
BARS = {
    "health_p99_ms": 100.0,
    "good_p95_ms": 1000.0,
    "parse_error_p95_ms": 50.0,
    "slow_max_ms": 4000.0,
    "rss_spread_mib": 50.0,
}


def percentile(samples: list[float], q: float) -> float:
    if not samples:
        return math.nan
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def request_bodies(graph: SceneGraph, seed: int) -> itertools.cycle[tuple[str, dict[str, Any]]]:
    """One client's endless, shuffled-per-cycle sequence of (kind, /cypher body)."""
    rng = random.Random(seed)
    objects = [n.symbol for n in graph.nodes("Object")]
    places = [n.symbol for n in graph.nodes("MeshPlace")]
    rooms = [n.symbol for n in graph.nodes("Room")]
    classes = sorted({n.class_name for n in graph.nodes("Object")})

    def good() -> dict[str, Any]:
        choice = rng.randrange(4)
        if choice == 0:
            return {
                "query": "MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c, o.center AS p",
                "params": {"s": rng.choice(objects)},
            }
        if choice == 1:
            return {
                "query": "MATCH (p:MeshPlace {nodeSymbol: $s})-[:MESH_PLACE_CONNECTED]-(q) RETURN q.nodeSymbol AS s",
                "params": {"s": rng.choice(places)},
            }
        if choice == 2:
            return {
                "query": "MATCH (r:Room {nodeSymbol: $s})-[:CONTAINS]->(p:MeshPlace) RETURN count(p) AS n",
                "params": {"s": rng.choice(rooms)},
            }
        return {
            "query": "MATCH (o:Object {class: $c}) RETURN o.nodeSymbol AS s ORDER BY s",
            "params": {"c": rng.choice(classes)},
        }

    fixed = {
        "syntax": [{"query": "MATCH (o:Object RETURN o"}, {"query": "MATCH (n) RETRUN n LIMIT 3"}],
        "unknown": [{"query": "MATCH (o:Objekt) RETURN o.nodeSymbol"}, {"query": "MATCH (r:Rooms) RETURN r"}],
        "write": [
            {"query": "CREATE (:Object {nodeSymbol: 'O999999', class: 'box'})", "write": True},
            {"query": "MATCH (o:Object) DETACH DELETE o"},
        ],
        "allpairs": [{"query": ALL_PAIRS}],
        "slow": [{"query": SLOW, "timeout_s": SLOW_TIMEOUT_S}],
    }

    def cycle() -> list[tuple[str, dict[str, Any]]]:
        out = [
            (kind, good() if kind == "good" else rng.choice(fixed[kind]))
            for kind, count in MIX.items()
            for _ in range(count)
        ]
        rng.shuffle(out)
        return out

    def endless() -> Any:
        while True:
            yield from cycle()

    return endless()  # type: ignore[return-value]


@dataclass
class Phase:
    """What one phase measured."""

    index: int
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    health_ms: list[float] = field(default_factory=list)
    health_status: Counter[str] = field(default_factory=Counter)
    rss_mib: float | None = None
    rss_samples: list[float] = field(default_factory=list)
    rss_parts: dict[str, float] = field(default_factory=dict)
    jvm: dict[str, Any] = field(default_factory=dict)
    timeline: list[list[float]] = field(default_factory=list)
    threads: list[dict[str, Any]] = field(default_factory=list)
    cpu_s: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, status: str, ms: float) -> None:
        with self.lock:
            self.latencies[kind].append(ms)
            self.statuses[kind][status] += 1

    def summary(self) -> dict[str, Any]:
        kinds = {
            kind: {
                "n": len(ms),
                "status": dict(sorted(self.statuses[kind].items())),
                "p50_ms": round(percentile(ms, 0.5), 1),
                "p95_ms": round(percentile(ms, 0.95), 1),
                "max_ms": round(max(ms), 1),
            }
            for kind, ms in sorted(self.latencies.items())
        }
        return {
            "phase": self.index,
            "kinds": kinds,
            "health": {
                "n": len(self.health_ms),
                "status": dict(self.health_status),
                "p50_ms": round(percentile(self.health_ms, 0.5), 1),
                "p95_ms": round(percentile(self.health_ms, 0.95), 1),
                "p99_ms": round(percentile(self.health_ms, 0.99), 1),
                "max_ms": round(max(self.health_ms, default=math.nan), 1),
            },
            "rss_mib": self.rss_mib,
            "rss_range_mib": [min(self.rss_samples), max(self.rss_samples)] if self.rss_samples else None,
            "rss_parts_mib": self.rss_parts,
            "jvm": self.jvm,
            "slow_health": [row for row in self.timeline if row[1] > 50.0],
            "timeline": {"columns": list(TIMELINE_COLUMNS), "rows": self.timeline},
            "cpu_s": self.cpu_s,
            "threads": self.threads,
        }


def perf_counters(pid: int) -> dict[str, Any]:
    """The HotSpot performance counters of JVM process ``pid`` (``/tmp/hsperfdata_<user>/<pid>``, which
    the JVM keeps up to date in shared memory; reading it touches nothing in the server): name -> value.
    Empty when the file is missing or unreadable."""
    import getpass

    path = Path(tempfile.gettempdir()) / f"hsperfdata_{getpass.getuser()}" / str(pid)
    try:
        data = path.read_bytes()
        if struct.unpack_from(">I", data, 0)[0] != 0xCAFEC0C0:
            return {}
        order = "<" if data[4] == 1 else ">"
        entry, count = struct.unpack_from(order + "ii", data, 24)
        out: dict[str, Any] = {}
        for _ in range(count):
            length, name_at, vector, kind, _f, _u, _v, data_at = struct.unpack_from(
                order + "iiiBBBBi", data, entry
            )
            name = data[entry + name_at : data.index(b"\0", entry + name_at)].decode()
            if vector == 0 and kind == ord("J"):
                out[name] = struct.unpack_from(order + "q", data, entry + data_at)[0]
            entry += length
        return out
    except (OSError, struct.error, ValueError):
        return {}


def jvm_figures(counters: dict[str, Any]) -> dict[str, float]:
    """The Java heap from the performance counters (MiB; GC counts and seconds since the JVM started):
    eden, survivor and old-generation capacity (committed) and use, metaspace, young and full GCs."""
    if not counters:
        return {}
    mib = 1024 * 1024
    hz = counters.get("sun.os.hrt.frequency", 1e9)

    def c(name: str) -> float:
        return float(counters.get(name, 0))

    return {
        "eden_mib": round(c("sun.gc.generation.0.space.0.capacity") / mib, 1),
        "eden_used_mib": round(c("sun.gc.generation.0.space.0.used") / mib, 1),
        "survivor_mib": round(
            (c("sun.gc.generation.0.space.1.capacity") + c("sun.gc.generation.0.space.2.capacity")) / mib, 1
        ),
        "old_mib": round(c("sun.gc.generation.1.capacity") / mib, 1),
        "old_used_mib": round(c("sun.gc.generation.1.space.0.used") / mib, 1),
        "metaspace_mib": round(c("sun.gc.metaspace.capacity") / mib, 1),
        "young_gcs": c("sun.gc.collector.0.invocations"),
        "young_gc_s": round(c("sun.gc.collector.0.time") / hz, 2),
        "full_gcs": c("sun.gc.collector.1.invocations"),
        "full_gc_s": round(c("sun.gc.collector.1.time") / hz, 2),
    }


def rss_breakdown(pid: int, heap_bytes: int = 0) -> dict[str, float]:
    """The server's resident memory by kind of mapping (MiB): the Java heap (the anonymous mappings of the
    one contiguous reservation of ``heap_bytes``, the JVM's maximum heap, when given), the other anonymous
    memory (malloc arenas, Python's object arenas, thread stacks, JIT code, metaspace), the brk heap
    (Python's and the C library's small allocations), and file-backed pages (libraries, the database)."""
    out = {"java_heap": 0.0, "anon": 0.0, "brk_heap": 0.0, "files": 0.0}
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return out
    mappings: list[list[Any]] = []  # [start, end, kind, rss KiB]
    for line in text.splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:  # a mapping's header line
            name = head[5] if len(head) > 5 else ""
            start, end = (int(x, 16) for x in head[0].split("-"))
            kind = "brk_heap" if name == "[heap]" else "files" if name.startswith("/") else "anon"
            mappings.append([start, end, kind, 0])
        elif line.startswith("Rss:") and mappings:
            mappings[-1][3] = int(head[1])
    if heap_bytes:  # contiguous anonymous runs; the one as large as the maximum heap is the Java heap
        run: list[list[Any]] = []
        for m in [*mappings, [0, 0, "end", 0]]:
            if run and (m[2] != "anon" or m[0] != run[-1][1]):
                if abs((run[-1][1] - run[0][0]) - heap_bytes) <= heap_bytes // 50:
                    for part in run:
                        part[2] = "java_heap"
                run = []
            if m[2] == "anon":
                run.append(m)
    for _, _, kind, rss in mappings:
        if kind in out:
            out[kind] += rss / 1024
    return {k: round(v, 1) for k, v in out.items()}


#: one row per /health poll: seconds into the phase, health ms, RSS, Java heap RSS, eden, old, old used
#: (MiB), young and full GCs so far, and the poll's wall-clock start (epoch s, to line up with ``--trace`` logs)
TIMELINE_COLUMNS = (
    "t_s",
    "health_ms",
    "rss_mib",
    "java_heap_rss_mib",
    "eden_mib",
    "old_mib",
    "old_used_mib",
    "young_gcs",
    "full_gcs",
    "wall_s",
)


def max_heap_bytes(counters: dict[str, Any]) -> int:
    return int(
        counters.get("sun.gc.generation.0.maxCapacity", 0)
        + counters.get("sun.gc.generation.1.maxCapacity", 0)
    )


def thread_ticks(pid: int) -> dict[int, tuple[str, int]]:
    """CPU clock ticks (user + system) of each thread of process ``pid``: {tid: (name, ticks)}. Java threads
    carry their (15-character) names; Python's threads are all called after the executable."""
    out: dict[int, tuple[str, int]] = {}
    tasks = Path(f"/proc/{pid}/task")
    with contextlib.suppress(OSError):
        for task in tasks.iterdir():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (task / "stat").read_text()
                fields = stat.rsplit(")", 1)[1].split()
                out[int(task.name)] = ((task / "comm").read_text().strip(), int(fields[11]) + int(fields[12]))
    return out


def process_ticks(pid: int) -> int:
    """CPU clock ticks (user + system) of process ``pid`` so far (0 when it is gone)."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    return 0


def thread_cpu(
    pid: int, before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], top: int = 10
) -> list[dict[str, Any]]:
    """The ``top`` threads of ``pid`` by CPU seconds used between two ``thread_ticks`` snapshots; the
    process's main thread is named ``main``, threads that started in between are marked ``new``."""
    hz = os.sysconf("SC_CLK_TCK")
    rows = []
    for tid, (name, ticks) in after.items():
        used = (ticks - before.get(tid, (name, 0))[1]) / hz
        if used <= 0:
            continue
        rows.append(
            {
                "tid": tid,
                "name": "main" if tid == pid else name,
                "cpu_s": round(used, 2),
                **({"new": True} if tid not in before else {}),
            }
        )
    rows.sort(key=lambda r: -r["cpu_s"])
    return rows[:top]


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


class McpCaller:
    """``cypher_query`` over MCP streamable HTTP (stateless JSON responses), one JSON-RPC POST per call."""

    def __init__(self, client: httpx2.Client) -> None:
        self.client = client
        self.ids = itertools.count(1)
        self.headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}

    def call(self, body: dict[str, Any], timeout: float) -> tuple[str, dict[str, Any]]:
        arguments = {"query": body["query"], "params": body.get("params") or {}}
        if "timeout_s" in body:
            arguments["timeout_s"] = body["timeout_s"]
        message = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": "tools/call",
            "params": {"name": "cypher_query", "arguments": arguments},
        }
        r = self.client.post("/mcp", json=message, headers=self.headers, timeout=timeout)
        if r.status_code != 200:
            return str(r.status_code), {}
        payload = r.json()
        result = payload.get("result") or {}
        if "error" in payload:
            return "rpc_error", payload
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            return f"tool_error:{tool_error_kind(text)}", result
        return "ok", result


def tool_error_kind(text: str) -> str:
    """The kind a tool error names: 'Error executing tool cypher_query: syntax error: ...' -> 'syntax'."""
    match = re.search(r"cypher_query: (\w+)", text)
    return match.group(1) if match else "?"


def run_phase(
    url: str, graph: SceneGraph, args: argparse.Namespace, phase: Phase, seed: int, server_pid: int
) -> None:
    # Every thread makes its client and opens its connection first; the phase's clock starts once all have
    # (the barrier's action), so a phase measures the server, not the clients' own start.
    clock: dict[str, float] = {}

    def start_clock() -> None:
        clock["start"] = time.monotonic()
        clock["stop"] = clock["start"] + args.phase_s

    ready = threading.Barrier(args.clients + 1, action=start_clock)
    heap_bytes = max_heap_bytes(perf_counters(server_pid))
    jvm_before = jvm_figures(perf_counters(server_pid))
    threads_before = thread_ticks(server_pid)
    server_before, clients_before = process_ticks(server_pid), process_ticks(os.getpid())

    def client(index: int) -> None:
        bodies = request_bodies(graph, seed * 100 + index)
        with httpx2.Client(base_url=url, timeout=30) as c:
            mcp = McpCaller(c) if args.transport == "mcp" else None
            c.get("/health")
            ready.wait()
            stop = clock["stop"]
            while time.monotonic() < stop:
                kind, body = next(bodies)
                t0 = time.perf_counter()
                try:
                    if mcp is not None:
                        status, _ = mcp.call(body, 30)
                    else:
                        status = str(c.post("/cypher", json=body).status_code)
                except httpx2.TimeoutException:
                    status = "client_timeout"
                except httpx2.HTTPError as exc:
                    status = type(exc).__name__
                phase.add(kind, status, (time.perf_counter() - t0) * 1000.0)

    def poll_health() -> None:
        with httpx2.Client(base_url=url, timeout=10) as c:
            c.get("/health")
            ready.wait()
            start, stop = clock["start"], clock["stop"]
            while time.monotonic() < stop:
                wall = time.time()
                t0 = time.perf_counter()
                try:
                    status = str(c.get("/health").status_code)
                except httpx2.TimeoutException:
                    status = "client_timeout"
                except httpx2.HTTPError as exc:
                    status = type(exc).__name__
                ms = (time.perf_counter() - t0) * 1000.0
                rss = rss_mib(server_pid)
                jvm = jvm_figures(perf_counters(server_pid))
                java_rss = rss_breakdown(server_pid, heap_bytes)["java_heap"]
                with phase.lock:
                    phase.health_ms.append(ms)
                    phase.health_status[status] += 1
                    if rss is not None:
                        phase.rss_samples.append(rss)
                    phase.timeline.append(
                        [
                            round(time.monotonic() - start, 1),
                            round(ms, 1),
                            rss or 0.0,
                            java_rss,
                            *(jvm.get(k, 0.0) for k in TIMELINE_COLUMNS[4:-1]),
                            round(wall, 3),
                        ]
                    )
                time.sleep(max(0.0, args.health_interval - ms / 1000.0))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    threads.append(threading.Thread(target=poll_health))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    phase.rss_mib = rss_mib(server_pid)
    phase.rss_parts = rss_breakdown(server_pid, heap_bytes)
    jvm_after = jvm_figures(perf_counters(server_pid))
    phase.jvm = {
        **{k: v for k, v in jvm_after.items() if not k.startswith(("young", "full"))},
        **{
            k: round(jvm_after[k] - jvm_before.get(k, 0), 2)
            for k in jvm_after
            if k.startswith(("young", "full"))
        },
    }
    hz = os.sysconf("SC_CLK_TCK")
    phase.threads = thread_cpu(server_pid, threads_before, thread_ticks(server_pid))
    phase.cpu_s = {
        "server": round((process_ticks(server_pid) - server_before) / hz, 1),
        "clients": round((process_ticks(os.getpid()) - clients_before) / hz, 1),
    }


def print_phase(summary: dict[str, Any]) -> None:
    low, high = summary["rss_range_mib"] or (None, None)
    parts = ", ".join(f"{k} {v:.0f}" for k, v in summary["rss_parts_mib"].items())
    print(
        f"\nphase {summary['phase']} (server RSS {summary['rss_mib']} MiB at the end: {parts}; {low}-{high} during)"
    )
    print(f"  {'kind':<9} {'n':>5} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9}  statuses")
    for kind, k in summary["kinds"].items():
        statuses = ", ".join(f"{s}: {n}" for s, n in k["status"].items())
        print(
            f"  {kind:<9} {k['n']:>5} {k['p50_ms']:>9.1f} {k['p95_ms']:>9.1f} {k['max_ms']:>9.1f}  {statuses}"
        )
    cpu = summary["cpu_s"]
    print(
        f"  CPU s: server {cpu['server']}, clients {cpu['clients']}; server threads: "
        + ", ".join(f"{t['name']}{'*' if t.get('new') else ''} {t['cpu_s']:.1f}" for t in summary["threads"])
    )
    jvm = summary.get("jvm") or {}
    if jvm:
        print(
            f"  Java heap: eden {jvm['eden_mib']:.0f}, survivors {jvm['survivor_mib']:.0f}, old {jvm['old_mib']:.0f} "
            f"({jvm['old_used_mib']:.0f} used) MiB committed; {jvm['young_gcs']:.0f} young GCs "
            f"({jvm['young_gc_s']:.2f} s), {jvm['full_gcs']:.0f} full ({jvm['full_gc_s']:.2f} s) in the phase"
        )
    h = summary["health"]
    statuses = ", ".join(f"{s}: {n}" for s, n in h["status"].items())
    print(
        f"  {'/health':<9} {h['n']:>5} {h['p50_ms']:>9.1f} {h['p95_ms']:>9.1f} {h['max_ms']:>9.1f}  "
        f"{statuses}; p99 {h['p99_ms']:.1f} ms"
    )


def print_trace(traced: dict[str, Any]) -> None:
    """The ``--trace`` findings: each kind of event over the run, then each slow poll and what overlapped it."""
    print("\ntrace (whole run):")
    for kind, row in traced["summary"].items():
        print(f"  {kind:<10} {row['n']:>6} events, longest {row['max_ms']:.1f} ms")
    for poll in traced["slow_polls"]:
        print(f"  slow poll {poll['poll_ms']:.0f} ms: {poll['jit_compilations']} JIT compilations in it")
        for e in poll["events"]:
            where = e.get("what") or e.get("thread") or ""
            print(f"    {e['t_rel_ms']:>8.1f} ms  {e['ev']:<9} {e.get('ms', 0):>7.1f} ms  {where}")
            for t in e.get("threads", []):
                print(f"             {t['thread']} (nice {t['nice']}): {' < '.join(t['stack'][:3])}")


def totals(url: str) -> dict[str, int]:
    with httpx2.Client(base_url=url, timeout=60) as c:
        r = c.post("/cypher", json={"query": TOTALS})
        r.raise_for_status()
        return {k: int(v) for k, v in r.json()["rows"][0].items()}


def start_soak_server(db: Path, args: argparse.Namespace) -> tuple[subprocess.Popen[bytes], str]:
    """The server under test: no rate limit, no model; from ``--server-src`` when given."""
    env = dict(os.environ)
    if args.server_src:
        env["PYTHONPATH"] = str(Path(args.server_src).resolve())
    if args.trace:
        env = soak_trace.server_env(args.trace, env, sampler=args.trace_sampler)
    extra = ["--query-slots", str(args.query_slots)] if args.query_slots else []
    return start_server(db, "--rate-limit", "0", "--llm", "none", *extra, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--graph", type=Path, default=DEFAULT_GRAPH, help="scene-graph file (Hydra example)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--phases", type=int, default=3)
    parser.add_argument("--phase-s", type=float, default=40.0)
    parser.add_argument("--health-interval", type=float, default=1.0)
    parser.add_argument("--transport", choices=("http", "mcp"), default="http")
    parser.add_argument(
        "--query-slots", type=int, default=None, help="server's --query-slots (default: cores)"
    )
    parser.add_argument(
        "--server-src", default=None, help="run the server from this source tree (PYTHONPATH)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--trace",
        type=Path,
        default=None,
        metavar="DIR",
        help="diagnosis: JVM GC/safepoint/JIT logs and a Python GC and GIL-gap probe in the server, written "
        "to DIR and lined up with the slow /health polls (benchmarks/soak_trace.py)",
    )
    parser.add_argument(
        "--trace-sampler",
        action="store_true",
        help="with --trace: also a thread in the server that logs every time it could not run for 20 ms "
        "(the GIL held elsewhere, or no core), with every Python thread's stack",
    )
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(args, perception="none", llm="none", transport=args.transport, mix=MIX)
    graph = read_scene_graph(args.graph)
    print(
        f"soak: {args.clients} clients x {args.phases} phases x {args.phase_s:g} s over {args.transport}, "
        f"graph {graph.summary()}; load average {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="scenerag-soak-") as tmp:
        db = Path(tmp) / "db"
        with open_store(db) as store:
            store.load(graph)
        server, url = start_soak_server(db, args)
        try:
            before = totals(url)
            summaries = []
            for i in range(args.phases):
                phase = Phase(i + 1)
                run_phase(url, graph, args, phase, args.seed + i, server.pid)
                summaries.append(phase.summary())
                print_phase(summaries[-1])
            after = totals(url)
            with httpx2.Client(base_url=url, timeout=10) as c:
                health = c.get("/health").json()
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    intact = (
        before
        == after
        == {
            "nodes": graph.num_nodes,
            "symbols": graph.num_nodes,
            "rels": graph.num_edges,
        }
    )
    print(f"\ngraph before {before}, after {after}: {'intact' if intact else 'CHANGED'}")

    # bars, over all phases (per-phase figures above)
    all_health = [s["health"]["p99_ms"] for s in summaries]
    good = max(s["kinds"].get("good", {}).get("p95_ms", math.nan) for s in summaries)
    parse = max(s["kinds"].get("syntax", {}).get("p95_ms", math.nan) for s in summaries)
    slow_max = max(s["kinds"].get("slow", {}).get("max_ms", math.nan) for s in summaries)
    rss = [s["rss_mib"] for s in summaries if s["rss_mib"] is not None]
    five_hundreds = sum(
        n
        for s in summaries
        for k in s["kinds"].values()
        for st, n in k["status"].items()
        if st.startswith("5") and st not in ("503", "504")
    )
    checks = {
        "health_p99_ms": (max(all_health), max(all_health) <= BARS["health_p99_ms"]),
        "good_p95_ms": (good, good <= BARS["good_p95_ms"]),
        "parse_error_p95_ms": (parse, parse <= BARS["parse_error_p95_ms"]),
        "slow_max_ms": (slow_max, slow_max <= BARS["slow_max_ms"]),
        "rss_spread_mib": (
            max(rss) - min(rss) if rss else math.nan,
            bool(rss) and max(rss) - min(rss) <= BARS["rss_spread_mib"],
        ),
        "graph_intact": (intact, intact),
        "no_500": (five_hundreds, five_hundreds == 0),
    }
    print("\nbars (worst phase):")
    for name, (value, ok) in checks.items():
        bar = BARS.get(name)
        shown = f"{value:.1f}" if isinstance(value, float) else str(value)
        print(
            f"  {name:<20} {shown:>10}  {'(bar ' + str(bar) + ')' if bar else '':<14} {'ok' if ok else 'MISSED'}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.trace:
        wall = TIMELINE_COLUMNS.index("wall_s")
        polls = [(row[wall], row[1]) for s in summaries for row in s["timeline"]["rows"]]
        traced = {
            "summary": soak_trace.summary(args.trace),
            "slow_polls": soak_trace.align(args.trace, polls),
        }
        record.results["trace"] = traced
        print_trace(traced)
    record.results.update(
        phases=summaries,
        graph_before=before,
        graph_after=after,
        graph_intact=intact,
        bars={
            name: {"value": value, "bar": BARS.get(name), "met": ok} for name, (value, ok) in checks.items()
        },
        server_admission=health.get("details", {}).get("admission"),
        server_src=args.server_src or "this checkout",
    )
    record.write()


if __name__ == "__main__":
    main()
