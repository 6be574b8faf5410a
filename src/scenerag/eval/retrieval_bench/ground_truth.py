"""What the benchmarks score against: axis-aligned 3D boxes and their IoU, the ground-truth objects a query
may target, and the phrases (floors, plurals) generated queries and questions use.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.hierarchical import ordinal_word

NON_TARGET_KINDS = frozenset({"structure"})
STRUCTURE_CLASSES = frozenset({"door", "stairs", "wall", "floor", "ceiling"})


# -- 3D boxes -------------------------------------------------------------------------------------------
Box = tuple[np.ndarray, np.ndarray]


def box_of(node: Node) -> Box:
    """Axis-aligned box ``(min, max)`` of a node (its bbox, or a 10 cm cube at its position)."""
    if node.bbox_center is not None and node.bbox_dim is not None:
        center, dim = np.asarray(node.bbox_center, float), np.asarray(node.bbox_dim, float)
    else:
        center, dim = np.asarray(node.position, float), np.full(3, 0.1)
    return center - dim / 2.0, center + dim / 2.0


def box_iou(a: Box, b: Box) -> float:
    """Intersection over union of two axis-aligned 3D boxes (0 when they do not overlap)."""
    lo, hi = np.maximum(a[0], b[0]), np.minimum(a[1], b[1])
    inter = float(np.prod(np.clip(hi - lo, 0.0, None)))
    if inter <= 0.0:
        return 0.0
    union = float(np.prod(a[1] - a[0])) + float(np.prod(b[1] - b[0])) - inter
    return inter / union if union > 0 else 0.0


def target_objects(gt: SceneGraph) -> list[Node]:
    """Ground-truth objects a query may ask for (no doors/stairs)."""
    return [n for n in gt.nodes(ont.OBJECT) if n.attributes.get("kind") not in NON_TARGET_KINDS]


def best_ground_truth_match(box: Box, gt_boxes: Mapping[str, Box]) -> tuple[str | None, float]:
    """The ground-truth symbol whose box overlaps ``box`` most, and that IoU."""
    best, best_iou = None, 0.0
    for symbol, other in gt_boxes.items():
        iou = box_iou(box, other)
        if iou > best_iou:
            best, best_iou = symbol, iou
    return best, best_iou


# -- phrases -----------------------------------------------------------------------------------------------
def floor_phrase(level: int) -> str:
    """``0 -> "ground floor"``, ``1 -> "second floor"`` (American counting, as the retriever reads it)."""
    return "ground floor" if level == 0 else f"{ordinal_word(level + 1)} floor"


def plural(word: str) -> str:
    if word.endswith(("s", "sh", "ch", "x")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def room_of(gt: SceneGraph, node: Node) -> Node | None:
    for parent in gt.parents(node.symbol, ont.CONTAINS):
        if parent.label == ont.ROOM:
            return parent
    room = node.attributes.get("room")
    return gt.node(room) if isinstance(room, str) and room in gt else None


def floor_level(node: Node) -> int:
    value = node.attributes.get("floor_level", node.attributes.get("level", 0))
    return int(value) if isinstance(value, (int, float)) else 0


__all__ = [
    "NON_TARGET_KINDS",
    "STRUCTURE_CLASSES",
    "Box",
    "best_ground_truth_match",
    "box_iou",
    "box_of",
    "floor_level",
    "floor_phrase",
    "plural",
    "room_of",
    "target_objects",
]
