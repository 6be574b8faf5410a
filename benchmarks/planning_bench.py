"""Time planning (problem build + Fast Downward) on synthetic outdoor graphs of 50, 500 and 16k places.

Each instance asks for ``(and (holding O_a) (visited-room R_b) (visited-place P_c))`` with random
symbols and start (the same instances for every mode). Modes: the corridor reduction (default) and
the whole graph (``reduce=False``, only up to ``--full-max-places`` places). Prints, per size and mode,
the median places kept, median / p95 seconds to build the problem and to run the Fast Downward process,
the median total (build + solve: feasibility check, PDDL text, Fast Downward, plan validation), plan
length, and how many instances were solved; every solved plan is validated by the simulator.

    .venv/bin/python benchmarks/planning_bench.py [--instances 7] [--full-max-places 500] [--time-limit 120]

The rows and the run's conditions go to ``benchmarks/results/planning_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import dataclass

from bench_record import BenchRecord, add_record_argument
from scenerag.graph.model import SceneGraph
from scenerag.planning import build_problem, simulate_plan, solve
from scenerag.sim.outdoor import generate_outdoor_graph

SIZES: tuple[tuple[str, int], ...] = (("50", 50), ("500", 500), ("16k", 15_944))


@dataclass
class Sample:
    places: int
    build_s: float
    solve_s: float
    search_s: float
    steps: int
    solved: bool


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def make_graph(n_places: int) -> SceneGraph:
    return generate_outdoor_graph(
        n_places=n_places, n_regions=max(2, n_places // 128), n_objects=max(5, n_places // 50), seed=7
    )


def instances(graph: SceneGraph, count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    places = sorted(n.symbol for n in graph.nodes("Place"))
    objects = sorted(n.symbol for n in graph.nodes("Object"))
    rooms = sorted(n.symbol for n in graph.nodes("Room"))
    out = []
    for _ in range(count):
        goal = (
            f"(and (holding {rng.choice(objects)}) (visited-room {rng.choice(rooms)}) "
            f"(visited-place {rng.choice(places)}))"
        )
        out.append((goal, rng.choice(places)))
    return out


def run(graph: SceneGraph, goal: str, start: str, *, reduce: bool, time_limit_s: float) -> Sample:
    started = time.perf_counter()
    problem = build_problem(graph, goal, start=start, reduce=reduce)
    build_s = time.perf_counter() - started
    result = solve(problem, time_limit_s=time_limit_s)
    if result.solved:
        assert simulate_plan(problem, result.plan).valid, "invalid plan"
    return Sample(
        len(problem.places), build_s, result.elapsed_s, result.search_s, len(result.plan), result.solved
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=7)
    parser.add_argument("--full-max-places", type=int, default=500)
    parser.add_argument("--time-limit", type=float, default=120.0)
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(
        args, llm="none (ground-truth goals)", graphs="synthetic outdoor (generate_outdoor_graph, seed 7)"
    )
    rows = []

    header = (
        f"{'graph':>6} {'mode':>9} {'kept':>6} {'build med':>10} {'build p95':>10} {'FD med':>8} "
        f"{'FD p95':>8} {'total med':>10} {'steps':>6} {'solved':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, n_places in SIZES:
        graph = make_graph(n_places)
        cases = instances(graph, args.instances, seed=n_places)
        for reduce in (True, False):
            if not reduce and n_places > args.full_max_places:
                continue
            samples = [
                run(graph, goal, start, reduce=reduce, time_limit_s=args.time_limit) for goal, start in cases
            ]
            builds = [s.build_s for s in samples]
            searches = [s.search_s for s in samples]
            totals = [s.build_s + s.solve_s for s in samples]
            print(
                f"{name:>6} {'corridors' if reduce else 'full':>9} "
                f"{statistics.median(s.places for s in samples):>6.0f} "
                f"{statistics.median(builds):>10.3f} {p95(builds):>10.3f} "
                f"{statistics.median(searches):>8.3f} {p95(searches):>8.3f} {statistics.median(totals):>10.3f} "
                f"{statistics.median(s.steps for s in samples):>6.0f} "
                f"{sum(s.solved for s in samples):>4}/{len(samples)}"
            )
            rows.append(
                {
                    "graph": name,
                    "mode": "corridors" if reduce else "full",
                    "places_kept_median": statistics.median(s.places for s in samples),
                    "build_s": [statistics.median(builds), p95(builds)],
                    "fast_downward_s": [statistics.median(searches), p95(searches)],
                    "total_s_median": statistics.median(totals),
                    "steps_median": statistics.median(s.steps for s in samples),
                    "solved": sum(s.solved for s in samples),
                    "instances": len(samples),
                }
            )
    record.results["rows"] = rows
    record.write()


if __name__ == "__main__":
    main()
