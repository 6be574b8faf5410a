"""Keyframe ablation on the default synthetic building: method x object recall x geometric coverage x
sampling ratio (the KeySG paper's table), from ground-truth visibility.

Usage::

    .venv/bin/python benchmarks/keyframe_ablation.py
    .venv/bin/python benchmarks/keyframe_ablation.py --sweep           # also HDBSCAN settings sweeps
    .venv/bin/python benchmarks/keyframe_ablation.py --clip-model /path/to/clip-vit-base-patch32

The sequence is rendered once into the cache (see ``build_bench.py``); the scan, floor, room and
association stages are built (cached) in ``--out``. Prints the table and checks the quality bar: the
HDBSCAN selector keeps >= 95% of the best baseline's object recall with >= 5x fewer frames than the room
frames it chose from (the candidates; not fewer than that baseline, whose frame count is printed beside).
Writes the rows and the run conditions to ``benchmarks/results/keyframe_ablation.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_record import BenchRecord, add_record_argument
from build_bench import DEFAULT_CACHE, building_summary, ensure_sequence


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=None, help="build folder (default: in the cache)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int, default=1500)
    parser.add_argument("--min-pixels", type=int, default=30, help="pixels for an object to count as seen")
    parser.add_argument("--clip-model", default=None, help="local CLIP folder for the visual baseline")
    parser.add_argument("--sweep", action="store_true", help="sweep min_samples / noise novelty / weight")
    add_record_argument(parser)
    args = parser.parse_args(argv)
    record = BenchRecord(
        args,
        perception="oracle (ground-truth instance images; object visibility from them)",
        llm="none",
        sequence=f"synthetic building, seed {args.seed}, 2 floors x 6 rooms per floor, {args.frames} frames",
    )

    from scenerag.build.config import BuildConfig
    from scenerag.build.evaluate import GroundTruth, keyframe_ablation
    from scenerag.build.pipeline import run_build

    seq = ensure_sequence(args.cache_dir, seed=args.seed, frames=args.frames)
    out = args.out or (args.cache_dir / f"{seq.name}-build")
    cfg = BuildConfig.offline()
    start = time.perf_counter()
    report = run_build(seq, out, cfg)
    print(f"build ready in {time.perf_counter() - start:.1f} s ({out})")
    record.results["building"] = building_summary(seed=args.seed)
    print(f"building: {record.results['building']}, {args.frames} frames")
    assert report.artifacts is not None
    gt = GroundTruth.from_sequence(report.artifacts.sequence)
    encoder = None
    if args.clip_model:
        from scenerag.build.keyframes import ClipImageEncoder

        encoder = ClipImageEncoder(args.clip_model)
    rows = keyframe_ablation(
        report.artifacts, gt, cfg.keyframes, clip_encoder=encoder, min_pixels=args.min_pixels
    )
    print(f"\n{'method':<36} {'keyframes':>9} {'recall':>7} {'coverage':>8} {'ratio':>6} {'s':>6}  note")
    for r in rows:
        print(
            f"{r.method:<36} {r.n_keyframes:>9} {r.object_recall:>7.3f} {r.coverage:>8.3f} {r.ratio:>6.3f} "
            f"{r.seconds:>6.2f}  {r.note}"
        )
    ours = rows[0]
    baselines = [
        r for r in rows[1:] if not r.method.startswith(("hdbscan", "all")) and not math.isnan(r.object_recall)
    ]
    best = max(baselines, key=lambda r: r.object_recall)
    keep = ours.object_recall / best.object_recall if best.object_recall else float("nan")
    fewer = 1.0 / ours.ratio if ours.ratio else float("inf")
    print(
        f"\nHDBSCAN keeps {keep:.1%} of the best baseline's recall ({best.method}: {best.object_recall:.3f}) "
        f"with {fewer:.1f}x fewer frames than the room frames ({best.n_keyframes / max(ours.n_keyframes, 1):.1f}x "
        f"fewer than that baseline); bar: >= 95% and >= 5x -> {'met' if keep >= 0.95 and fewer >= 5 else 'NOT met'}"
    )
    record.results["rows"] = rows
    record.results["hdbscan_keeps_of_best_baseline_recall"] = keep
    record.results["best_baseline"] = best.method
    record.results["fewer_frames_than_room_frames"] = fewer
    record.results["fewer_frames_than_best_baseline"] = best.n_keyframes / max(ours.n_keyframes, 1)
    if args.sweep:
        record.results["sweep"] = []
        print("\nsweep (HDBSCAN rows only):")
        for changes in (
            {"min_samples": 2, "noise": "keep"},
            {"min_samples": 5, "noise": "keep"},
            {"noise_novelty": 0.2},
            {"noise_novelty": 0.4},
            {"noise_novelty": 0.5},
            {"rotation_weight": 1.0},
            {"rotation_weight": 3.0},
            {"min_cluster_size": 8},
        ):
            kcfg = cfg.keyframes.model_copy(update=changes)
            row = keyframe_ablation(report.artifacts, gt, kcfg, min_pixels=args.min_pixels, baselines=False)[
                0
            ]
            print(
                f"  {changes!s:<40} keyframes {row.n_keyframes:>5}  recall {row.object_recall:.3f}  "
                f"coverage {row.coverage:.3f}  ratio {row.ratio:.3f}"
            )
            record.results["sweep"].append({"changes": changes, "row": row})
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
