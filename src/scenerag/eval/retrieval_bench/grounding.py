"""Table IV (referring-expression grounding, Nr3D spirit): unambiguous spatial, colour and size expressions
derived from the ground truth, scored by the ground-truth object the prediction's box overlaps most, and
its table.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scenerag.eval.retrieval_bench.ground_truth import (
    best_ground_truth_match,
    box_of,
    floor_level,
    floor_phrase,
    room_of,
    target_objects,
)
from scenerag.eval.retrieval_bench.methods import GroundingMethod
from scenerag.eval.retrieval_bench.scenes import PreparedScene
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.documents import label_text

GROUNDING_IOU = 0.25
GROUNDING_CATEGORIES: tuple[str, ...] = ("spatial", "colour", "size")


@dataclass(frozen=True, slots=True)
class ReferringExpression:
    """A referring expression for one ground-truth target with same-class distractors in its room."""

    uid: str
    text: str
    category: str
    mentions_class: bool
    target: str
    room: str
    distractors: int


_GENERIC_NOUNS = ("object", "thing", "item")


def _room_phrase(gt: SceneGraph, room: Node) -> str | None:
    """``"the kitchen"`` (plus the floor when the type repeats in the building), None when ambiguous on its
    floor."""
    rooms = list(gt.nodes(ont.ROOM))
    same_type = [r for r in rooms if r.class_name == room.class_name]
    same_floor = [r for r in same_type if floor_level(r) == floor_level(room)]
    if len(same_floor) > 1:
        return None
    text = f"the {label_text(room.class_name)}"
    if len(same_type) > 1:
        text += f" on the {floor_phrase(floor_level(room))}"
    return text


def _volume(node: Node) -> float:
    return float(np.prod(node.bbox_dim)) if node.bbox_dim is not None else 0.0


def referring_expressions(gt: SceneGraph, *, seed: int = 0) -> list[ReferringExpression]:
    """Spatial, colour and size expressions, each with and without the target's class, for every target
    whose class has a distractor in its room and for which the expression is unambiguous there:

    - colour: "the red chair in the kitchen" (colour unique among the room's chairs) / "the red object in
      the kitchen" (unique among all its objects);
    - size: "the big/small chair ..." (largest/smallest of its class by volume, 1.5× margin) / "the biggest
      thing ..." (among all objects of the room);
    - spatial: "the mug on the table" (the only one of its class on that support) or "the chair next to /
      closest to the table" (closest of its class to an anchor whose class is unique in the room, 0.3 m
      margin) / "the object on ..." / "the thing closest to ..." (closest of all the room's objects).
    """
    rng = random.Random(seed)
    objects = target_objects(gt)
    by_room: dict[str, list[Node]] = defaultdict(list)
    for obj in objects:
        room = room_of(gt, obj)
        if room is not None:
            by_room[room.symbol].append(obj)
    out: list[ReferringExpression] = []

    def add(category: str, with_class: bool, target: Node, room: Node, text: str, n_distractors: int) -> None:
        uid = f"{category}:{'cls' if with_class else 'nocls'}:{target.symbol}"
        out.append(
            ReferringExpression(uid, text, category, with_class, target.symbol, room.symbol, n_distractors)
        )

    for room_symbol, members in sorted(by_room.items()):
        room = gt.node(room_symbol)
        where = _room_phrase(gt, room)
        if where is None:
            continue
        classes = Counter(o.class_name for o in members)
        for target in sorted(members, key=lambda n: n.symbol):
            same = [o for o in members if o.class_name == target.class_name and o.symbol != target.symbol]
            if not same:
                continue
            name = label_text(target.class_name)
            noun = rng.choice(_GENERIC_NOUNS)
            others = [o for o in members if o.symbol != target.symbol]
            color = label_text(str(target.attributes.get("color", "")))
            if color and all(label_text(str(o.attributes.get("color", ""))) != color for o in same):
                add("colour", True, target, room, f"the {color} {name} in {where}", len(same))
                if all(label_text(str(o.attributes.get("color", ""))) != color for o in others):
                    add("colour", False, target, room, f"the {color} {noun} in {where}", len(same))
            vol = _volume(target)
            same_vols = [_volume(o) for o in same]
            other_vols = [_volume(o) for o in others]
            if vol > 0 and all(vol >= 1.5 * v for v in same_vols):
                add("size", True, target, room, f"the big {name} in {where}", len(same))
                if all(vol >= 1.5 * v for v in other_vols):
                    add("size", False, target, room, f"the biggest {noun} in {where}", len(same))
            elif vol > 0 and all(v >= 1.5 * vol for v in same_vols):
                add("size", True, target, room, f"the small {name} in {where}", len(same))
                if all(v >= 1.5 * vol for v in other_vols):
                    add("size", False, target, room, f"the smallest {noun} in {where}", len(same))
            support = target.attributes.get("on")
            if isinstance(support, str) and support in gt and classes[gt.node(support).class_name] == 1:
                anchor = gt.node(support)
                if all(o.attributes.get("on") != support for o in same):
                    add(
                        "spatial",
                        True,
                        target,
                        room,
                        f"the {name} on the {label_text(anchor.class_name)} in {where}",
                        len(same),
                    )
                    if all(o.attributes.get("on") != support for o in others):
                        add(
                            "spatial",
                            False,
                            target,
                            room,
                            f"the {noun} on the {label_text(anchor.class_name)} in {where}",
                            len(same),
                        )
                continue
            anchors = [
                a
                for a in others
                if a.class_name != target.class_name
                and classes[a.class_name] == 1
                and a.attributes.get("on") is None
            ]
            for anchor in sorted(anchors, key=lambda a: math.dist(a.position, target.position)):
                d_target = math.dist(anchor.position, target.position)
                if min(math.dist(anchor.position, o.position) for o in same) - d_target < 0.3:
                    continue
                relation = "next to" if d_target < 1.5 else "closest to"
                add(
                    "spatial",
                    True,
                    target,
                    room,
                    f"the {name} {relation} the {label_text(anchor.class_name)} in {where}",
                    len(same),
                )
                rest = [o for o in others if o.symbol != anchor.symbol]
                if rest and min(math.dist(anchor.position, o.position) for o in rest) - d_target >= 0.3:
                    add(
                        "spatial",
                        False,
                        target,
                        room,
                        f"the {noun} closest to the {label_text(anchor.class_name)} in {where}",
                        len(same),
                    )
                break
    return out


@dataclass
class GroundingRecord:
    """One (method variant, expression) outcome of the grounding benchmark."""

    scene: str
    method: str
    uid: str
    category: str
    mentions_class: bool
    text: str
    predicted: str | None
    correct: bool
    iou: float
    input_tokens: int
    llm_calls: int
    wall_s: float
    retrieval_ms: float
    error: str | None = None


def run_grounding(
    scene: PreparedScene,
    expressions: Sequence[ReferringExpression],
    methods: Mapping[str, GroundingMethod],
    *,
    progress: Callable[[str], None] | None = None,
) -> list[GroundingRecord]:
    """Run every method on every expression; correct when the prediction's best ground-truth match (by
    box IoU, at least :data:`GROUNDING_IOU`) is the target."""
    gt_boxes = {n.symbol: box_of(n) for n in target_objects(scene.ground_truth)}
    built = {n.symbol: n for n in scene.graph.nodes() if n.label in (ont.OBJECT, ont.FUNCTIONAL_ELEMENT)}
    records: list[GroundingRecord] = []
    for name, method in methods.items():
        for i, expr in enumerate(expressions):
            outcome = method(expr.text)
            for variant, ranked in outcome.rankings.items():
                predicted = ranked[0] if ranked else None
                match, iou = (None, 0.0)
                if predicted in built:
                    match, iou = best_ground_truth_match(box_of(built[predicted]), gt_boxes)
                records.append(
                    GroundingRecord(
                        scene.spec.name,
                        variant,
                        expr.uid,
                        expr.category,
                        expr.mentions_class,
                        expr.text,
                        predicted,
                        match == expr.target and iou >= GROUNDING_IOU,
                        iou,
                        outcome.usage.input_tokens,
                        outcome.llm_calls,
                        outcome.wall_s,
                        outcome.retrieval_ms,
                        outcome.error,
                    )
                )
            if progress is not None:
                progress(f"{scene.spec.name} {name} {i + 1}/{len(expressions)}: {expr.text}")
    return records


def grounding_table(records: Sequence[GroundingRecord]) -> list[dict[str, Any]]:
    """Accuracy per method: overall, per category, with / without the target class."""
    by_method: dict[str, list[GroundingRecord]] = defaultdict(list)
    for r in records:
        by_method[r.method].append(r)
    rows = []
    for method, rs in sorted(by_method.items()):
        row: dict[str, Any] = {"method": method, "expressions": len(rs), "overall": _acc(rs)}
        for cat in GROUNDING_CATEGORIES:
            row[cat] = _acc([r for r in rs if r.category == cat])
            row[f"{cat}_n"] = sum(r.category == cat for r in rs)
        row["with_class"] = _acc([r for r in rs if r.mentions_class])
        row["without_class"] = _acc([r for r in rs if not r.mentions_class])
        row["input_tokens"] = statistics.fmean(r.input_tokens for r in rs)
        row["wall_s"] = statistics.fmean(r.wall_s for r in rs)
        rows.append(row)
    return rows


def _acc(rs: Sequence[GroundingRecord]) -> float | None:
    return sum(r.correct for r in rs) / len(rs) if rs else None


def format_grounding_table(rows: Sequence[Mapping[str, Any]]) -> str:
    def pct(v: float | None) -> str:
        return "–" if v is None else f"{100 * v:.1f}"

    lines = [
        "| method | n | overall | spatial | colour | size | with class | w/o class | in tok | s/expr |",
        "|" + "---|" * 10,
    ]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['expressions']} | {pct(r['overall'])} | {pct(r['spatial'])} ({r['spatial_n']}) | "
            f"{pct(r['colour'])} ({r['colour_n']}) | {pct(r['size'])} ({r['size_n']}) | {pct(r['with_class'])} | "
            f"{pct(r['without_class'])} | {r['input_tokens']:.0f} | {r['wall_s']:.2f} |"
        )
    return "\n".join(lines)


__all__ = [
    "GROUNDING_CATEGORIES",
    "GROUNDING_IOU",
    "GroundingRecord",
    "ReferringExpression",
    "format_grounding_table",
    "grounding_table",
    "referring_expressions",
    "run_grounding",
]
