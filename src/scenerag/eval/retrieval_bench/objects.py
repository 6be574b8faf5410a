"""Table III (object retrieval, HM3DSem protocol): (room, object) and (floor, room, object) queries derived
from the ground truth, Recall@K at 3D-box IoU thresholds, and its table.
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scenerag.eval.retrieval_bench.ground_truth import (
    Box,
    box_iou,
    box_of,
    floor_level,
    floor_phrase,
    room_of,
    target_objects,
)
from scenerag.eval.retrieval_bench.methods import GroundingMethod
from scenerag.eval.retrieval_bench.scenes import PreparedScene
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.retrieval.documents import label_text

RECALL_KS: tuple[int, ...] = (1, 5, 10)
IOU_THRESHOLDS: tuple[float, ...] = (0.0, 0.10, 0.50)
QUERY_KINDS: tuple[str, ...] = ("room-object", "floor-room-object")


@dataclass(frozen=True, slots=True)
class RetrievalQuery:
    """One object-retrieval query and its ground-truth targets (symbols and boxes)."""

    uid: str
    text: str
    kind: str
    object_class: str
    room_type: str
    floor_level: int | None
    targets: tuple[str, ...]


def object_retrieval_queries(
    gt: SceneGraph, *, seed: int = 0, max_per_kind: int | None = None
) -> list[RetrievalQuery]:
    """(room, object) and (floor, room, object) queries over every class/room-type (/floor) combination of
    the ground truth; ``max_per_kind`` samples that many of each kind (seeded)."""
    by_room_class: dict[tuple[str, str], list[str]] = defaultdict(list)
    by_floor_room_class: dict[tuple[int, str, str], list[str]] = defaultdict(list)
    for obj in target_objects(gt):
        room = room_of(gt, obj)
        if room is None:
            continue
        by_room_class[(room.class_name, obj.class_name)].append(obj.symbol)
        by_floor_room_class[(floor_level(room), room.class_name, obj.class_name)].append(obj.symbol)
    queries: list[RetrievalQuery] = []
    for (rtype, cls), members in sorted(by_room_class.items()):
        text = f"the {label_text(cls)} in the {label_text(rtype)}"
        queries.append(
            RetrievalQuery(
                f"ro:{rtype}:{cls}", text, QUERY_KINDS[0], cls, rtype, None, tuple(sorted(members))
            )
        )
    for (level, rtype, cls), members in sorted(by_floor_room_class.items()):
        text = f"the {label_text(cls)} in the {label_text(rtype)} on the {floor_phrase(level)}"
        queries.append(
            RetrievalQuery(
                f"fro:{level}:{rtype}:{cls}", text, QUERY_KINDS[1], cls, rtype, level, tuple(sorted(members))
            )
        )
    if max_per_kind is not None:
        rng = random.Random(seed)
        picked: list[RetrievalQuery] = []
        for kind in QUERY_KINDS:
            mine = [q for q in queries if q.kind == kind]
            picked.extend(sorted(rng.sample(mine, min(max_per_kind, len(mine))), key=lambda q: q.uid))
        queries = picked
    return queries


def recall_hits(
    ranked_boxes: Sequence[Box],
    target_boxes: Sequence[Box],
    ks: Sequence[int] = RECALL_KS,
    thresholds: Sequence[float] = IOU_THRESHOLDS,
) -> dict[str, bool]:
    """``{"R@K@θ": hit}``: whether one of the first K boxes reaches IoU θ with some target (θ = 0: overlap)."""
    best = [max((box_iou(b, t) for t in target_boxes), default=0.0) for b in ranked_boxes[: max(ks)]]
    out: dict[str, bool] = {}
    for k in ks:
        for th in thresholds:
            top = best[:k]
            out[f"R@{k}@{th:.2f}"] = any((iou > 0.0) if th == 0.0 else (iou >= th) for iou in top)
    return out


@dataclass
class RetrievalRecord:
    """One (method variant, query) outcome of the object retrieval benchmark."""

    scene: str
    method: str
    uid: str
    kind: str
    query: str
    hits: dict[str, bool]
    top: list[str]
    retrieval_ms: float
    input_tokens: int
    output_tokens: int
    llm_calls: int
    wall_s: float
    error: str | None = None
    decomposition: dict[str, Any] | None = None


def run_object_retrieval(
    scene: PreparedScene,
    queries: Sequence[RetrievalQuery],
    methods: Mapping[str, GroundingMethod],
    *,
    progress: Callable[[str], None] | None = None,
) -> list[RetrievalRecord]:
    """Run every method on every query of one scene; Recall@K hits against the ground-truth targets."""
    gt_boxes = {n.symbol: box_of(n) for n in target_objects(scene.ground_truth)}
    built_boxes = {
        n.symbol: box_of(n) for n in scene.graph.nodes() if n.label in (ont.OBJECT, ont.FUNCTIONAL_ELEMENT)
    }
    records: list[RetrievalRecord] = []
    for name, method in methods.items():
        for i, q in enumerate(queries):
            outcome = method(q.text)
            targets = [gt_boxes[t] for t in q.targets if t in gt_boxes]
            for variant, ranked in outcome.rankings.items():
                boxes = [built_boxes[s] for s in ranked[: max(RECALL_KS)] if s in built_boxes]
                records.append(
                    RetrievalRecord(
                        scene.spec.name,
                        variant,
                        q.uid,
                        q.kind,
                        q.text,
                        recall_hits(boxes, targets),
                        ranked[:3],
                        outcome.retrieval_ms,
                        outcome.usage.input_tokens,
                        outcome.usage.output_tokens,
                        outcome.llm_calls,
                        outcome.wall_s,
                        outcome.error,
                        outcome.decomposition,
                    )
                )
            if progress is not None:
                progress(
                    f"{scene.spec.name} {name} {i + 1}/{len(queries)}: {q.text} -> {next(iter(outcome.rankings.values()))[:1]}"
                )
    return records


def recall_table(records: Sequence[RetrievalRecord]) -> list[dict[str, Any]]:
    """One row per (method, kind) and per method over all kinds: query count and each Recall@K@θ."""
    groups: dict[tuple[str, str], list[RetrievalRecord]] = defaultdict(list)
    for r in records:
        groups[(r.method, r.kind)].append(r)
        groups[(r.method, "all")].append(r)
    rows = []
    for (method, kind), rs in sorted(groups.items()):
        row: dict[str, Any] = {"method": method, "kind": kind, "queries": len(rs)}
        for key in rs[0].hits:
            row[key] = sum(r.hits[key] for r in rs) / len(rs)
        row["retrieval_ms_p50"] = statistics.median(r.retrieval_ms for r in rs)
        row["input_tokens"] = statistics.fmean(r.input_tokens for r in rs)
        row["llm_calls"] = statistics.fmean(r.llm_calls for r in rs)
        row["wall_s"] = statistics.fmean(r.wall_s for r in rs)
        rows.append(row)
    return rows


def format_recall_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: Recall@1/5/10 at each IoU threshold, per method and query kind."""
    head = (
        "| method | queries | kind | "
        + " | ".join(f"R@{k} θ={th:.2f}" for th in IOU_THRESHOLDS for k in RECALL_KS)
        + " | ms p50 | in tok | s/query |"
    )
    lines = [head, "|" + "---|" * (6 + len(RECALL_KS) * len(IOU_THRESHOLDS))]
    for r in rows:
        cells = " | ".join(f"{100 * r[f'R@{k}@{th:.2f}']:.1f}" for th in IOU_THRESHOLDS for k in RECALL_KS)
        lines.append(
            f"| {r['method']} | {r['queries']} | {r['kind']} | {cells} | {r['retrieval_ms_p50']:.1f} | "
            f"{r['input_tokens']:.0f} | {r['wall_s']:.2f} |"
        )
    return "\n".join(lines)


__all__ = [
    "IOU_THRESHOLDS",
    "QUERY_KINDS",
    "RECALL_KS",
    "RetrievalQuery",
    "RetrievalRecord",
    "format_recall_table",
    "object_retrieval_queries",
    "recall_hits",
    "recall_table",
    "run_object_retrieval",
]
