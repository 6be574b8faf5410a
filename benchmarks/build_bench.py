"""KeySG build benchmark: per-stage time and peak memory of ``run_build`` on the default synthetic building.

Usage::

    .venv/bin/python benchmarks/build_bench.py                     # 1500 frames, oracle + templates, 3 runs
    .venv/bin/python benchmarks/build_bench.py --runs 1 --evaluate  # plus the ground-truth evaluation
    .venv/bin/python benchmarks/build_bench.py --llm local          # summaries with the local LLM

The sequence is rendered once into ``--cache-dir`` (default ``~/.cache/scenerag/bench``) and reused.
Every build runs in a fresh subprocess with an empty output folder, so each run is a cold build and its
peak RSS is the build's own. Prints per-stage medians / p95 over the runs, the total, the peak memory and
the load average before and after (the machine is shared: note the load when reading the times). Writes
the reports, the evaluation and the run conditions to ``benchmarks/results/build_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench_record import BenchRecord, add_record_argument

DEFAULT_CACHE = Path(os.environ.get("SCENERAG_BENCH_CACHE", Path.home() / ".cache" / "scenerag" / "bench"))


def ensure_sequence(
    cache_dir: Path, *, seed: int = 0, floors: int = 2, rooms_per_floor: int = 6, frames: int = 1500
) -> Path:
    """Render the synthetic building sequence into ``cache_dir`` unless it is already there."""
    from scenerag.sim.building import BuildingConfig, generate_building
    from scenerag.sim.render import write_sequence

    root = cache_dir / f"building-s{seed}-f{floors}-r{rooms_per_floor}-n{frames}"
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    start = time.perf_counter()
    building = generate_building(BuildingConfig(n_floors=floors, rooms_per_floor=rooms_per_floor, seed=seed))
    print(f"rendering {building.summary()} to {root} ({frames} frames) ...", flush=True)
    write_sequence(building, root, layout="replica", n_frames=frames)
    (root / ".complete").touch()
    print(f"rendered in {time.perf_counter() - start:.1f} s", flush=True)
    return root


def building_summary(*, seed: int = 0, floors: int = 2, rooms_per_floor: int = 6) -> str:
    """What the generator builds for these settings (floors, rooms, objects, ...), as it prints it."""
    from scenerag.sim.building import BuildingConfig, generate_building

    return generate_building(
        BuildingConfig(n_floors=floors, rooms_per_floor=rooms_per_floor, seed=seed)
    ).summary()


def _worker(sequence: str, out: str, overrides: str, evaluate: bool) -> None:
    """One cold build in this process; prints the report (and evaluation) as JSON on the last line."""
    from scenerag.build.config import BuildConfig
    from scenerag.build.pipeline import run_build

    cfg = BuildConfig.offline().with_overrides(json.loads(overrides))
    report = run_build(sequence, out, cfg)
    result: dict[str, Any] = {"report": report.to_dict()}
    if evaluate:
        from scenerag.build.evaluate import evaluate_build

        assert report.artifacts is not None
        ev = evaluate_build(report.artifacts, config=cfg)
        result["evaluation"] = ev.to_text()
        result["evaluation_data"] = ev.to_dict()
    print(json.dumps(result, default=str))


def _stats(values: list[float]) -> str:
    arr = np.array(values)
    return f"{statistics.median(values):8.2f} {np.percentile(arr, 95):8.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--floors", type=int, default=2)
    parser.add_argument("--rooms-per-floor", type=int, default=6)
    parser.add_argument("--frames", type=int, default=1500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--evaluate", action="store_true", help="also evaluate the last build")
    parser.add_argument(
        "--llm", default=None, help="summarise with this chat model spec (default: templates)"
    )
    parser.add_argument("--tsdf", action="store_true", help="also fuse an Open3D TSDF surface")
    parser.add_argument(
        "--worker", nargs=4, metavar=("SEQ", "OUT", "OVERRIDES", "EVAL"), help=argparse.SUPPRESS
    )
    add_record_argument(parser)
    args = parser.parse_args(argv)
    if args.worker:
        seq, out, overrides, evaluate = args.worker
        _worker(seq, out, overrides, evaluate == "1")
        return 0
    record = BenchRecord(
        args,
        perception="oracle (ground-truth instance/class images of the rendered sequence)",
        llm=f"live ({args.llm}) room/floor summaries" if args.llm else "none (template summaries)",
        sequence=f"synthetic building, seed {args.seed}, {args.floors} floors x {args.rooms_per_floor} "
        f"rooms per floor, {args.frames} frames (replica layout)",
    )

    seq = ensure_sequence(
        args.cache_dir,
        seed=args.seed,
        floors=args.floors,
        rooms_per_floor=args.rooms_per_floor,
        frames=args.frames,
    )
    overrides: dict[str, Any] = {}
    if args.llm:
        overrides["description"] = {"summarizer": "llm", "llm": args.llm}
    if args.tsdf:
        overrides["reconstruction"] = {"tsdf": True}
    reports = []
    evaluation = evaluation_data = None
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="build-bench-") as out:
            last = run == args.runs - 1
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                str(seq),
                out,
                json.dumps(overrides),
                "1" if (args.evaluate and last) else "0",
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                print(proc.stdout[-2000:], proc.stderr[-4000:], sep="\n")
                return proc.returncode
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            reports.append(result["report"])
            evaluation = result.get("evaluation", evaluation)
            evaluation_data = result.get("evaluation_data", evaluation_data)
            r = result["report"]
            print(
                f"run {run + 1}/{args.runs}: {r['total_seconds']:.1f} s, peak {r['peak_rss_mb']:.0f} MiB, "
                f"load {r['load_average'][0]:.2f} -> {r['load_average'][1]:.2f}",
                flush=True,
            )
    first = reports[0]
    building = building_summary(seed=args.seed, floors=args.floors, rooms_per_floor=args.rooms_per_floor)
    print(
        f"\nsequence: {seq} ({first['counts']['frames']} frames), {os.cpu_count()} cores, {args.runs} cold runs"
    )
    print(f"building: {building}")
    print(f"{'stage':<13} {'median s':>8} {'p95 s':>8}  details (last run)")
    for i, stage in enumerate(first["stages"]):
        times = [r["stages"][i]["seconds"] for r in reports]
        details = ", ".join(
            f"{k}={v}"
            for k, v in reports[-1]["stages"][i]["details"].items()
            if not isinstance(v, (dict, list))
        )
        print(f"{stage['name']:<13} {_stats(times)}  {details}")
    print(f"{'total':<13} {_stats([r['total_seconds'] for r in reports])}")
    print(f"peak RSS (max over runs): {max(r['peak_rss_mb'] for r in reports):.0f} MiB")
    loads = [r["load_average"] for r in reports]
    print(f"load average during runs: {min(v[0] for v in loads):.2f} .. {max(v[1] for v in loads):.2f}")
    print("counts: " + ", ".join(f"{k}={v}" for k, v in reports[-1]["counts"].items()))
    if evaluation:
        print("\n" + evaluation)
    record.results["building"] = building
    record.results["stages_median_s"] = {
        stage["name"]: statistics.median(r["stages"][i]["seconds"] for r in reports)
        for i, stage in enumerate(first["stages"])
    }
    record.results["total_median_s"] = statistics.median(r["total_seconds"] for r in reports)
    record.results["peak_rss_mib"] = max(r["peak_rss_mb"] for r in reports)
    record.results["evaluation"] = evaluation
    record.results["evaluation_data"] = evaluation_data
    record.results["reports"] = reports
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
