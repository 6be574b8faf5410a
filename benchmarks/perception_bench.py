"""KeySG perception benchmark: object recall/precision of the oracle and the geometric (non-oracle) segmenter.

Usage::

    .venv/bin/python benchmarks/perception_bench.py                  # default building, seed 0
    .venv/bin/python benchmarks/perception_bench.py --seeds 0 1 2    # several buildings
    .venv/bin/python benchmarks/perception_bench.py --frames 240 --floors 2 --rooms-per-floor 2 --seeds 3

Conditions: a synthetic building rendered to posed RGB-D (``scenerag.sim``; 320x240, exact depth and
poses); the same build (scan, floors, rooms, keyframes: stages shared through the build cache) with two
perceptions of the keyframes: ``oracle`` (the renderer's instance masks, class labels and colour names)
and ``geometric`` (``segmenter="geometric"``: the fused depth map with floor/wall/ceiling planes removed,
clustered into class-agnostic instances; nothing from the ground truth). Objects are matched to the
ground-truth objects (objects, doors, stairs; functional elements apart) by 3D IoU on 5 cm voxels of the
observed ground-truth surface (Hungarian matching; precision and recall at IoU 0.25 and 0.5) and by
centroid distance (Hungarian on centroids, a match within 0.3 m). Label accuracy is meaningless for the
geometric row (every object is "object"). Template summaries, no LLM. Writes the rows and the conditions
to ``benchmarks/results/perception_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench_record import BenchRecord, add_record_argument
from build_bench import DEFAULT_CACHE, ensure_sequence  # the same renders, in the same cache

PERCEPTIONS = ("oracle", "geometric")


def centroid_matching(
    objects: dict[int, Any], gt_points: dict[int, np.ndarray], max_distance: float
) -> tuple[float, float, float]:
    """Precision, recall and mean distance of a one-to-one (Hungarian) matching of predicted object
    centroids to ground-truth centroids (of their observed voxels); a pair counts within ``max_distance``."""
    from scipy.optimize import linear_sum_assignment

    preds = [o.center for o in objects.values() if o.kind != "functional" and len(o.points)]
    gts = [p.mean(axis=0) for p in gt_points.values() if len(p)]
    if not preds or not gts:
        return 0.0, 0.0, float("nan")
    d = np.linalg.norm(np.asarray(preds)[:, None, :] - np.asarray(gts)[None, :, :], axis=2)
    rows, cols = linear_sum_assignment(np.where(d <= max_distance, d, 1e6))
    ok = d[rows, cols] <= max_distance
    hits = int(ok.sum())
    mean = float(d[rows, cols][ok].mean()) if hits else float("nan")
    return hits / len(preds), hits / len(gts), mean


def recall_by_class(
    objects: dict[int, Any], gt: Any, labelled: Any, threshold: float = 0.25
) -> dict[str, list[int]]:
    """Ground-truth class -> [matched at IoU >= threshold, observed]."""
    from scenerag.build.evaluate import _match_objects

    matching = _match_objects(objects, gt, labelled)
    matched = {g for p, g in matching.match.items() if matching.ious.get(p, {}).get(g, 0.0) >= threshold}
    inst = gt.instances
    out: dict[str, list[int]] = {}
    for g, keys in labelled.sets(gt.scene_objects()).items():
        if len(keys) < 2:
            continue
        row = out.setdefault(str(inst[g]["class"]), [0, 0])
        row[0] += int(g in matched)
        row[1] += 1
    return dict(sorted(out.items()))


def run_scene(seq: Path, out: Path, geometric_options: dict[str, Any]) -> list[dict[str, Any]]:
    from scenerag.build.config import BuildConfig
    from scenerag.build.evaluate import GroundTruth, evaluate_functional, evaluate_objects, label_voxels
    from scenerag.build.pipeline import run_build
    from scenerag.build.reconstruct import key_coords

    rows = []
    gt = labelled = labelled_fine = gt_points = None
    for perception in PERCEPTIONS:
        seg: dict[str, Any] = {"segmenter": perception}
        if perception == "geometric":
            seg["options"] = geometric_options
        cfg = BuildConfig.offline(segmentation=seg)
        start = time.perf_counter()
        report = run_build(seq, out, cfg)
        seconds = time.perf_counter() - start
        art = report.artifacts
        assert art is not None
        if gt is None:
            gt = GroundTruth.from_sequence(art.sequence)
            labelled = label_voxels(art.sequence, 0.05, pixel_stride=4)
            labelled_fine = label_voxels(
                art.sequence, 0.02, pixel_stride=2, only_ids=gt.functional_elements()
            )
            gt_points = {
                g: (key_coords(k) + 0.5) * labelled.voxel_size
                for g, k in labelled.sets(gt.scene_objects()).items()
                if len(k) >= 2
            }
        objects = evaluate_objects(art.objects, gt, labelled)
        functional = evaluate_functional(art.objects, gt, labelled_fine, labelled)
        cp, cr, cd = centroid_matching(art.objects, gt_points, 0.3)
        stage = report.stage("objects")
        rows.append(
            {
                "perception": perception,
                "n_pred": objects.n_pred,
                "n_gt": objects.n_gt,
                "precision": objects.precision,
                "recall": objects.recall,
                "mean_iou_matched": objects.mean_iou_matched,
                "label_accuracy": objects.label_accuracy if perception == "oracle" else None,
                "over_segmented": objects.over_segmented,
                "centroid_0.3m": {"precision": round(cp, 4), "recall": round(cr, 4), "mean_m": round(cd, 3)},
                "functional_pred": functional.n_pred,
                "functional_gt": functional.n_gt,
                "functional_R@1/0": functional.recall_at.get("R@1/0"),
                "objects_stage_s": round(stage.seconds, 2),
                "objects_stage": {k: v for k, v in stage.details.items()},
                "build_s": round(seconds, 2),
                "keyframes": report.counts["keyframes"],
                "recall_by_class@0.25": recall_by_class(art.objects, gt, labelled),
            }
        )
    return rows


def _fmt(row: dict[str, Any]) -> str:
    c = row["centroid_0.3m"]
    la = "-" if row["label_accuracy"] is None else f"{row['label_accuracy']:.3f}"
    return (
        f"{row['perception']:<10} {row['n_pred']:>5} {row['n_gt']:>5} "
        f"{row['precision']['0.25']:>7.3f} {row['recall']['0.25']:>7.3f} "
        f"{row['precision']['0.5']:>7.3f} {row['recall']['0.5']:>7.3f} {row['mean_iou_matched']:>6.3f} "
        f"{c['precision']:>7.3f} {c['recall']:>7.3f} {la:>6} {row['over_segmented']:>5} "
        f"{row['functional_pred']:>4}/{row['functional_gt']:<4} {row['objects_stage_s']:>7.1f}"
    )


HEADER = (
    f"{'perception':<10} {'pred':>5} {'gt':>5} {'P@.25':>7} {'R@.25':>7} {'P@.5':>7} {'R@.5':>7} "
    f"{'mIoU':>6} {'P@c.3m':>7} {'R@c.3m':>7} {'label':>6} {'over':>5} {'func p/gt':>9} {'obj s':>7}"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--floors", type=int, default=2)
    parser.add_argument("--rooms-per-floor", type=int, default=6)
    parser.add_argument("--frames", type=int, default=1500)
    parser.add_argument(
        "--geometric-options", default="{}", help="JSON options of the geometric segmenter (GeometricParams)"
    )
    add_record_argument(parser)
    args = parser.parse_args(argv)
    options = json.loads(args.geometric_options)
    record = BenchRecord(
        args,
        perception="oracle (renderer instance masks + class labels + colour names) vs geometric "
        "(fused depth map, planes removed, class-agnostic clusters; no ground truth, no model)",
        llm="none (template summaries)",
        sequence=f"synthetic buildings (scenerag.sim), seeds {args.seeds}, {args.floors} floors x "
        f"{args.rooms_per_floor} rooms per floor, {args.frames} frames 320x240, exact depth and poses",
        matching="3D IoU on 5 cm voxels of the observed ground-truth surface (Hungarian), and centroid "
        "distance <= 0.3 m (Hungarian); ground truth = objects, doors, stairs observed in >= 2 voxels",
    )
    all_rows: list[dict[str, Any]] = []
    for seed in args.seeds:
        seq = ensure_sequence(
            args.cache_dir,
            seed=seed,
            floors=args.floors,
            rooms_per_floor=args.rooms_per_floor,
            frames=args.frames,
        )
        with tempfile.TemporaryDirectory(prefix="perception-bench-") as out:
            rows = run_scene(seq, Path(out), options)
        for r in rows:
            r["scene"] = seq.name
        all_rows += rows
        print(f"\n{seq.name}: {rows[0]['keyframes']} keyframes, synthetic building, template summaries")
        print(HEADER)
        for r in rows:
            print(_fmt(r))
        geo = next(r for r in rows if r["perception"] == "geometric")
        missed = sorted(
            ((c, v[1] - v[0], v[1]) for c, v in geo["recall_by_class@0.25"].items() if v[0] < v[1]),
            key=lambda t: -t[1],
        )
        print(
            "geometric misses by class (missed/observed): " + ", ".join(f"{c} {m}/{n}" for c, m, n in missed)
        )
        print(
            f"geometric map: {json.dumps({k: v for k, v in geo['objects_stage'].get('map', {}).items() if k != 'plane_list'})}"
        )
    means = []
    if len(args.seeds) > 1:
        print("\nmean over scenes")
        print(HEADER)
        for p in PERCEPTIONS:
            rs = [r for r in all_rows if r["perception"] == p]
            mean = {
                "perception": p,
                "n_pred": round(np.mean([r["n_pred"] for r in rs])),
                "n_gt": round(np.mean([r["n_gt"] for r in rs])),
                "precision": {t: float(np.mean([r["precision"][t] for r in rs])) for t in ("0.25", "0.5")},
                "recall": {t: float(np.mean([r["recall"][t] for r in rs])) for t in ("0.25", "0.5")},
                "mean_iou_matched": float(np.mean([r["mean_iou_matched"] for r in rs])),
                "label_accuracy": None
                if p != "oracle"
                else float(np.mean([r["label_accuracy"] for r in rs])),
                "over_segmented": round(np.mean([r["over_segmented"] for r in rs])),
                "centroid_0.3m": {
                    k: float(np.mean([r["centroid_0.3m"][k] for r in rs])) for k in ("precision", "recall")
                },
                "functional_pred": round(np.mean([r["functional_pred"] for r in rs])),
                "functional_gt": round(np.mean([r["functional_gt"] for r in rs])),
                "objects_stage_s": float(np.mean([r["objects_stage_s"] for r in rs])),
            }
            print(_fmt(mean))
            means.append(mean)
    record.results["rows"] = all_rows
    record.results["mean_over_scenes"] = means
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
