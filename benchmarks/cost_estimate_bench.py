"""How well the server's static cost estimate (``scenerag.serve.cost``) predicts which queries are slow.

The server puts a query in the heavy lane when its estimated intermediate rows exceed ``HEAVY_ROWS``. This
script runs a corpus of read queries alone on an embedded store, each ``--runs`` times (median, after a
warm-up), and compares the estimate with the run time:

* the gold ``cypher`` of every question set written for the graph (``benchmarks/questions/*.yaml``): what
  users and the agent actually ask;
* stress queries built from the graph's own schema: label scans, anchored and unanchored 1-hop and
  variable-length expansions of growing depth, two- and three-way cartesian products with a filter,
  shortest paths.

Printed: for thresholds around the default, how many slow queries (over ``--slow-ms``) would go to the
heavy lane (recall), how many fast ones would too (over-cautious), the rank correlation of estimate and
time, and the misclassified queries at the default. The record goes to
``benchmarks/results/cost_estimate_bench.json``. Usage::

    flock /tmp/scenerag-heavy.lock .venv/bin/python benchmarks/cost_estimate_bench.py
    .venv/bin/python benchmarks/cost_estimate_bench.py --graphs hydra --runs 1 --record -
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench_record import BenchRecord, add_record_argument
from scenerag.graph import read_scene_graph
from scenerag.graph.model import SceneGraph
from scenerag.serve.cost import HEAVY_ROWS, estimate_cost
from scenerag.store import CypherStore, QueryError, open_store
from scenerag.store.schema import GraphSchema

BENCH = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SCENERAG_DATA") or BENCH.parents[1] / "shared" / "data")
QUESTIONS = BENCH / "questions"
THRESHOLDS = [1e3, 3e3, 1e4, 2e4, 5e4, 1e5, 3e5, 1e6]


def graphs(names: list[str]) -> dict[str, tuple[SceneGraph, list[str]]]:
    """name -> (graph, its question files)."""
    out: dict[str, tuple[SceneGraph, list[str]]] = {}
    if "hydra" in names:
        out["hydra"] = (read_scene_graph(DATA / "hydra_small_indoor_dsg.json"), ["hydra*_qa.yaml"])
    if "apartment" in names:
        out["apartment"] = (read_scene_graph(DATA / "spark_dsg_apartment_dsg.json"), ["apartment*_qa.yaml"])
    if "building" in names:
        from scenerag.sim.building import generate_building

        out["building"] = (generate_building().to_scene_graph(), ["building*_qa.yaml"])
    if "outdoor" in names:
        from scenerag.sim.outdoor import generate_outdoor_graph

        out["outdoor"] = (generate_outdoor_graph(), [])
    return out


def gold_queries(patterns: list[str]) -> list[str]:
    out: list[str] = []
    for pattern in patterns:
        for path in sorted(QUESTIONS.glob(pattern)):
            data = yaml.safe_load(path.read_text()) or {}
            out += [str(q["cypher"]) for q in data.get("questions", []) if q.get("cypher")]
    return list(dict.fromkeys(out))


def stress_queries(graph: SceneGraph, schema: GraphSchema) -> list[str]:
    """Queries of growing cost built from the graph's labels and relationship types."""
    counts = schema.node_counts
    labels = sorted(counts, key=lambda label: -counts[label])
    big, small = labels[0], labels[-1]
    nav = max(
        (
            (src, rtype, n)
            for (src, rtype, dst), n in schema.patterns.items()
            if src == dst and rtype != "CONTAINS"
        ),
        key=lambda x: x[2],
        default=None,
    )
    some = {label: next(graph.nodes(label)).symbol for label in labels}
    out = [f"MATCH (n:{label}) RETURN count(n) AS n" for label in labels]
    out += [f"MATCH (n:{label}) RETURN n.nodeSymbol AS s, n.center AS c" for label in labels]
    out += [f"MATCH (n:{label} {{nodeSymbol: '{some[label]}'}}) RETURN n.class AS c" for label in labels]
    out += [
        f"MATCH (a:{a}), (b:{b}) WHERE point.distance(a.center, b.center) < 1.0 RETURN count(*) AS n"
        for a in labels
        for b in labels
        if a <= b
    ]
    out += [
        f"MATCH (a:{small}), (b:{small}), (c:{x}) WHERE point.distance(a.center, c.center) < "
        f"point.distance(b.center, c.center) RETURN count(*) AS n"
        for x in labels
    ]
    if nav is not None:
        label, rtype, _ = nav
        anchor = some[label]
        for hops in range(1, 8):
            out.append(
                f"MATCH (a:{label} {{nodeSymbol: '{anchor}'}})-[:{rtype}*1..{hops}]-(b) RETURN count(b) AS n"
            )
        for hops in range(1, 6):
            out.append(f"MATCH (a:{label})-[:{rtype}*1..{hops}]-(b) RETURN count(b) AS n")
        out.append(
            f"MATCH (a:{label} {{nodeSymbol: '{anchor}'}}), (b:{label}) WHERE a <> b "
            f"MATCH p = shortestPath((a)-[:{rtype}*..30]-(b)) RETURN max(length(p)) AS n"
        )
        out.append(f"MATCH (a:{label})-[:{rtype}]-(b:{label})-[:{rtype}]-(c:{label}) RETURN count(*) AS n")
    out.append(f"MATCH (a:{big}), (b:{big}) RETURN a.nodeSymbol AS a, b.nodeSymbol AS b")
    return out


def timed(store: CypherStore, query: str, runs: int, timeout_s: float) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            store.query(query, timeout_s=timeout_s, max_rows=1000)
        except QueryError as exc:
            if exc.kind == "timeout":
                return timeout_s * 1000.0
        samples.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(samples)


def spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        for rank, i in enumerate(order):
            out[i] = float(rank)
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / var if var else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--graphs", nargs="+", default=["hydra", "apartment", "building", "outdoor"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout-s", type=float, default=5.0)
    parser.add_argument("--slow-ms", type=float, default=100.0, help="a query slower than this is 'slow'")
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(args, perception="none", llm="none", heavy_rows=HEAVY_ROWS)
    rows: list[dict[str, Any]] = []
    print(f"load average {os.getloadavg()[0]:.2f}")
    for name, (graph, patterns) in graphs(args.graphs).items():
        with tempfile.TemporaryDirectory(prefix="scenerag-cost-") as tmp:
            store = open_store(Path(tmp) / "db")
            try:
                store.load(graph)
                schema = store.schema()
                corpus = [("gold", q) for q in gold_queries(patterns)]
                corpus += [("stress", q) for q in stress_queries(graph, schema)]
                for _, query in corpus[:10]:  # warm-up: parser, JIT
                    timed(store, query, 1, args.timeout_s)
                for source, query in corpus:
                    try:
                        prepared = store.prepare(query)
                    except QueryError:
                        continue
                    estimate = estimate_cost(prepared.run, schema)
                    ms = timed(store, query, args.runs, args.timeout_s)
                    rows.append(
                        {
                            "graph": name,
                            "source": source,
                            "query": query,
                            "estimate": estimate.rows if math.isfinite(estimate.rows) else None,
                            "ms": round(ms, 2),
                        }
                    )
            finally:
                store.close()
        mine = [r for r in rows if r["graph"] == name]
        print(f"{name}: {graph.summary()}: {len(mine)} queries")

    slow = [r for r in rows if r["ms"] > args.slow_ms]
    fast = [r for r in rows if r["ms"] <= args.slow_ms]

    def heavy(r: dict[str, Any], threshold: float) -> bool:
        return r["estimate"] is None or r["estimate"] > threshold

    print(
        f"\n{len(rows)} queries, {len(slow)} slower than {args.slow_ms:g} ms (run alone, median of {args.runs})"
    )
    print(f"{'threshold':>10} {'slow->heavy':>12} {'fast->heavy':>12} {'gold->heavy':>12}")
    sweep = []
    gold = [r for r in rows if r["source"] == "gold"]
    for threshold in THRESHOLDS:
        caught = sum(heavy(r, threshold) for r in slow)
        cautious = sum(heavy(r, threshold) for r in fast)
        gold_heavy = sum(heavy(r, threshold) for r in gold)
        sweep.append(
            {"threshold": threshold, "slow_heavy": caught, "fast_heavy": cautious, "gold_heavy": gold_heavy}
        )
        mark = "  <- default" if threshold == HEAVY_ROWS else ""
        print(
            f"{threshold:>10.0e} {caught:>5}/{len(slow):<6} {cautious:>5}/{len(fast):<6} "
            f"{gold_heavy:>5}/{len(gold):<6}{mark}"
        )
    finite = [r for r in rows if r["estimate"] is not None]
    rho = spearman([r["estimate"] for r in finite], [r["ms"] for r in finite])
    print(f"rank correlation of estimate and time (Spearman): {rho:.2f} over {len(finite)} estimated queries")
    missed = [r for r in slow if not heavy(r, HEAVY_ROWS)]
    cautious = [r for r in fast if heavy(r, HEAVY_ROWS)]
    print(f"\nslow but cheap-lane at the default ({len(missed)}):")
    for r in sorted(missed, key=lambda r: -r["ms"])[:15]:
        print(f"  {r['ms']:>8.1f} ms  est {r['estimate']:.3g}  [{r['graph']}] {r['query'][:110]}")
    print(f"fast but heavy-lane at the default ({len(cautious)}):")
    for r in sorted(cautious, key=lambda r: r["ms"])[:15]:
        est = "n/a" if r["estimate"] is None else f"{r['estimate']:.3g}"
        print(f"  {r['ms']:>8.1f} ms  est {est}  [{r['graph']}] {r['query'][:110]}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    record.results.update(
        queries=rows,
        sweep=sweep,
        slow_ms=args.slow_ms,
        spearman=rho,
        missed_at_default=len(missed),
        cautious_at_default=len(cautious),
    )
    record.write()


if __name__ == "__main__":
    main()
