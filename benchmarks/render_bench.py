"""Synthetic RGB-D benchmark: building generation, trajectory planning, rendering and writing speed.

Usage::

    .venv/bin/python benchmarks/render_bench.py                    # default building, 1500 frames, replica
    .venv/bin/python benchmarks/render_bench.py --layouts replica generic --sample 200
    .venv/bin/python benchmarks/render_bench.py --width 640 --height 480 --no-full

Prints generation and planning time, per-frame render time (median / p95, frames/s), per-frame write time
of each layout on a sample of frames, and the wall time of the full default sequence (render + write +
ground truth) into a temporary folder, plus its size on disk. The figures and the run's conditions go to
``benchmarks/results/render_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_record import BenchRecord, add_record_argument
from scenerag.sim.building import BuildingConfig, generate_building
from scenerag.sim.render import (
    LAYOUTS,
    WRITERS,
    BuildingRenderer,
    default_intrinsics,
    layout_intrinsics,
    plan_trajectory,
    write_sequence,
)


def _stats(ms: list[float]) -> str:
    arr = np.array(ms)
    return (
        f"median {statistics.median(ms):7.2f} ms  p95 {np.percentile(arr, 95):7.2f} ms  "
        f"({1000.0 / statistics.median(ms):6.1f} frames/s)"
    )


def _ms(ms: list[float]) -> dict[str, float]:
    return {
        "median_ms": statistics.median(ms),
        "p95_ms": float(np.percentile(np.array(ms), 95)),
        "frames_per_s": 1000.0 / statistics.median(ms),
    }


def _du(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--floors", type=int, default=BuildingConfig.n_floors)
    parser.add_argument("--rooms-per-floor", type=int, default=BuildingConfig.rooms_per_floor)
    parser.add_argument("--frames", type=int, default=1500, help="frames of the full sequence")
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=240)
    parser.add_argument("--sample", type=int, default=150, help="frames timed per stage")
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=LAYOUTS)
    parser.add_argument("--full-layout", default="replica", choices=LAYOUTS)
    parser.add_argument("--no-full", action="store_true", help="skip the full-sequence run")
    add_record_argument(parser)
    args = parser.parse_args(argv)
    record = BenchRecord(args, renderer="Open3D ray casting")
    results = record.results

    t0 = time.perf_counter()
    building = generate_building(
        BuildingConfig(n_floors=args.floors, rooms_per_floor=args.rooms_per_floor, seed=args.seed)
    )
    t_gen = time.perf_counter() - t0
    print(f"building: {building.summary()}  generated in {t_gen:.2f} s")
    results["building"] = building.summary()
    results["generate_s"] = t_gen
    t0 = time.perf_counter()
    trajectory = plan_trajectory(building, n_frames=args.frames)
    t_plan = time.perf_counter() - t0
    path_m = float(np.linalg.norm(np.diff(trajectory.positions, axis=0), axis=1).sum())
    print(
        f"trajectory: {len(trajectory)} frames, {trajectory.times[-1]:.0f} s of robot time, {path_m:.0f} m, "
        f"planned in {t_plan:.2f} s"
    )
    results["trajectory"] = {"frames": len(trajectory), "path_m": path_m, "plan_s": t_plan}

    intrinsics = default_intrinsics(args.width, args.height)
    t0 = time.perf_counter()
    renderer = BuildingRenderer(building, intrinsics)
    print(f"ray-casting scene built in {time.perf_counter() - t0:.2f} s (incl. importing open3d)")
    picks = np.linspace(0, len(trajectory) - 1, min(args.sample, len(trajectory))).astype(int)
    frames, render_ms = [], []
    for i in picks:
        t0 = time.perf_counter()
        frame = renderer.render(trajectory.poses[i], int(i))
        render_ms.append((time.perf_counter() - t0) * 1000)
        frames.append(frame)
    print(f"render            {_stats(render_ms)}")
    results["render"] = _ms(render_ms)

    with tempfile.TemporaryDirectory(prefix="render-bench-") as tmp:
        for layout in args.layouts:
            k = layout_intrinsics(layout, intrinsics)
            write_ms = []
            with WRITERS[layout](Path(tmp) / layout, k) as writer:
                for frame in frames:
                    t0 = time.perf_counter()
                    writer.write(frame)
                    write_ms.append((time.perf_counter() - t0) * 1000)
            both = [r + w for r, w in zip(render_ms, write_ms, strict=True)]
            print(f"write {layout:<8}    {_stats(write_ms)}   render+write {_stats(both)}")
            results.setdefault("write", {})[layout] = {"write": _ms(write_ms), "render_and_write": _ms(both)}
        del frames

        if not args.no_full:
            out = Path(tmp) / "full"
            t0 = time.perf_counter()
            write_sequence(
                building, out, layout=args.full_layout, trajectory=trajectory, intrinsics=intrinsics
            )
            t_full = time.perf_counter() - t0
            print(
                f"full sequence ({args.full_layout}, {len(trajectory)} frames + ground truth): "
                f"{t_full:.1f} s "
                f"({len(trajectory) / t_full:.1f} frames/s), {_du(out):.0f} MiB on disk; "
                f"with generation and planning {t_full + t_gen + t_plan:.1f} s"
            )
            results["full_sequence"] = {
                "layout": args.full_layout,
                "frames": len(trajectory),
                "seconds": t_full,
                "frames_per_s": len(trajectory) / t_full,
                "mib_on_disk": _du(out),
                "with_generation_and_planning_s": t_full + t_gen + t_plan,
            }
            shutil.rmtree(out, ignore_errors=True)
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
