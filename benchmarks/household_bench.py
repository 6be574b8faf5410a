"""Household simulator speed: world build, one action, scene-graph export and incremental diff, per
distractor setting; and the length of the scripted solver's plans per difficulty.

    .venv/bin/python benchmarks/household_bench.py

The rows and the run's conditions go to ``benchmarks/results/household_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_record import BenchRecord, add_record_argument
from scenerag.sim.household import (
    LAYOUT_STYLES,
    TASKS,
    HouseholdEnv,
    LayoutConfig,
    SceneGraphTracker,
    build_world,
    solve,
)


def p50_p95_ms(samples: list[float]) -> list[float]:
    ordered = sorted(samples)
    return [statistics.median(ordered) * 1e3, ordered[int(0.95 * (len(ordered) - 1))] * 1e3]


def ms(samples: list[float]) -> str:
    p50, p95 = p50_p95_ms(samples)
    return f"{p50:.2f} / {p95:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_record_argument(parser)
    record = BenchRecord(parser.parse_args(), llm="none", layout="island, seed 0 (builds: seeds 0-9)")
    rows = []
    print(
        f"{'distractors':>11} {'objects':>8} {'build ms':>9} {'action ms p50/p95':>18} {'export ms p50/p95':>18} {'diff ms p50/p95':>16} {'graph nodes':>12}"
    )
    for n in (0, 290, 1135):
        builds = []
        for seed in range(10):
            start = time.perf_counter()
            build_world(LayoutConfig("island", seed, n))
            builds.append(time.perf_counter() - start)
        env = HouseholdEnv("island", 0, n)
        tracker = SceneGraphTracker(env)
        tracker.update()
        acts, exports, diffs = [], [], []
        graph = env.scene_graph()
        for _ in range(len(env.world.places)):
            start = time.perf_counter()
            env.execute("randomlyexplore", {})
            acts.append(time.perf_counter() - start)
            start = time.perf_counter()
            graph = env.scene_graph()
            exports.append(time.perf_counter() - start)
            start = time.perf_counter()
            tracker.update()
            diffs.append(time.perf_counter() - start)
        print(
            f"{n:>11} {len(env.world.objects):>8} {statistics.median(builds) * 1e3:>9.1f} {ms(acts):>18} {ms(exports):>18} {ms(diffs):>16} {graph.num_nodes:>12}"
        )
        rows.append(
            {
                "distractors": n,
                "objects": len(env.world.objects),
                "build_ms_median": statistics.median(builds) * 1e3,
                "action_ms": p50_p95_ms(acts),
                "export_ms": p50_p95_ms(exports),
                "diff_ms": p50_p95_ms(diffs),
                "graph_nodes": graph.num_nodes,
            }
        )
    record.results["rows"] = rows
    lengths: dict[str, list[int]] = {"easy": [], "hard": []}
    for style in LAYOUT_STYLES:
        for task in TASKS:
            lengths[task.difficulty].append(len(solve(HouseholdEnv(style, 0), task)))
    for level, values in lengths.items():
        print(
            f"solver plans, {level}: mean {statistics.mean(values):.1f} steps, max {max(values)} ({len(values)} task x layout)"
        )
    record.results["solver_plan_steps"] = {
        level: {"mean": statistics.mean(v), "max": max(v), "plans": len(v)} for level, v in lengths.items()
    }
    record.write()


if __name__ == "__main__":
    main()
