"""Retrieval benchmarks on synthetic multi-floor buildings with ground truth (KeySG Tables III and IV, and a
cross-method comparison), importable so ``scenerag bench retrieval`` and ``benchmarks/*.py`` share them.

Contract:
- Scenes: :func:`prepare_scene` generates a building, renders it and builds its KeySG graph offline (oracle
  perception, template summaries), caching everything under :func:`bench_cache_dir`.
- Object retrieval (Table III, HM3DSem protocol): :func:`object_retrieval_queries` derives "the oven in the
  kitchen" (room, object) and "the toilet in the bathroom on the ground floor" (floor, room, object)
  queries from the ground truth; a query's targets are every ground-truth object of that class in a room of
  that type (on that floor). :func:`run_object_retrieval` ranks the *built* graph's objects per query and
  scores Recall@K at 3D-box IoU thresholds (θ = 0.0 means the boxes overlap at all, IoU > 0; otherwise
  IoU ≥ θ) against any target.
- Grounding (Table IV, Nr3D spirit): :func:`referring_expressions` derives unambiguous spatial, colour and
  size expressions, with and without the target's class, for targets that have same-class distractors in
  their room; a prediction is correct when the ground-truth object its box overlaps most is the target
  (IoU ≥ 0.25).
- Cross-method QA: :func:`cross_method_questions` derives typed questions with answers in the built graph's
  symbols; :func:`run_cross_method` runs any ``SceneAgent``s on them and records success, tokens and time;
  :class:`SubgraphRAGAgent` is the EmbodiedRAG-style method (LLM entity pre-retrieval, induced subgraph,
  answer).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scenerag.agents.base import RunState, normalize_answer
from scenerag.agents.result import AgentResult, Task, ToolRecord
from scenerag.agents.tool_agent import ANSWER_SCHEMA, ToolAgent, default_answer_problems, loads_object
from scenerag.errors import SceneRagError
from scenerag.eval.questions import Question
from scenerag.eval.runner import Record
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.llm.base import ChatModel, LLMError, Message, Usage
from scenerag.retrieval.documents import DocumentConfig, label_text
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.entity_store import EntityStore
from scenerag.retrieval.hierarchical import (
    DOC_DESCRIPTION,
    DOC_PHRASE,
    OBJECT_LEVEL,
    HierarchicalIndex,
    ordinal_word,
    symbol_of,
)

RECALL_KS: tuple[int, ...] = (1, 5, 10)
IOU_THRESHOLDS: tuple[float, ...] = (0.0, 0.10, 0.50)
GROUNDING_IOU = 0.25
QUERY_KINDS: tuple[str, ...] = ("room-object", "floor-room-object")
GROUNDING_CATEGORIES: tuple[str, ...] = ("spatial", "colour", "size")
_NON_TARGET_KINDS = frozenset({"structure"})
_STRUCTURE_CLASSES = frozenset({"door", "stairs", "wall", "floor", "ceiling"})


class BenchmarkError(SceneRagError):
    """A benchmark that cannot run as asked (no scene, no queries, unknown method)."""


# -- scenes -----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SceneSpec:
    """A synthetic building to benchmark on: its size, seed and the frames rendered along the robot's tour."""

    name: str
    n_floors: int = 2
    rooms_per_floor: int = 3
    seed: int = 0
    frames: int = 400

    def key(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return f"{self.name}-{hashlib.blake2b(text.encode(), digest_size=5).hexdigest()}"


DEFAULT_SCENES: tuple[SceneSpec, ...] = (
    SceneSpec("b2x3-s0", n_floors=2, rooms_per_floor=3, seed=0, frames=420),
    SceneSpec("b3x3-s1", n_floors=3, rooms_per_floor=3, seed=1, frames=620),
    SceneSpec("b2x4-s2", n_floors=2, rooms_per_floor=4, seed=2, frames=500),
)
SMALL_SCENE = SceneSpec("b2x2-s3", n_floors=2, rooms_per_floor=2, seed=3, frames=240)


@dataclass
class PreparedScene:
    """A rendered and built scene: its built KeySG graph, the ground-truth graph and where both live."""

    spec: SceneSpec
    sequence_dir: Path
    build_dir: Path
    graph: SceneGraph
    ground_truth: SceneGraph


def bench_cache_dir() -> Path:
    """``$SCENERAG_BENCH_CACHE`` or ``~/.cache/scenerag/bench``."""
    return Path(os.environ.get("SCENERAG_BENCH_CACHE") or Path.home() / ".cache" / "scenerag" / "bench")


def prepare_scene(
    spec: SceneSpec, cache_dir: str | Path | None = None, progress: Callable[[str], None] | None = None
) -> PreparedScene:
    """Render and build ``spec`` once (cached under ``cache_dir/<spec key>``); later calls only read it."""
    from scenerag.build.config import BuildConfig
    from scenerag.build.pipeline import GRAPH_FILE, run_build
    from scenerag.graph.io import read_scene_graph
    from scenerag.sim.building import BuildingConfig, generate_building
    from scenerag.sim.render import write_sequence

    say = progress or (lambda text: None)
    root = Path(cache_dir or bench_cache_dir()) / spec.key()
    seq, out = root / "sequence", root / "build"
    if not (seq / ".complete").exists():
        say(f"{spec.name}: rendering {spec.frames} frames")
        building = generate_building(
            BuildingConfig(n_floors=spec.n_floors, rooms_per_floor=spec.rooms_per_floor, seed=spec.seed)
        )
        write_sequence(building, seq, layout="replica", n_frames=spec.frames)
        (seq / ".complete").touch()
    if not (out / GRAPH_FILE).exists():
        say(f"{spec.name}: building the KeySG graph (offline)")
        run_build(seq, out, BuildConfig.offline())
    gt_path = seq / "gt" / "scene_graph.json"
    if not gt_path.is_file():
        raise BenchmarkError(
            f"{seq}: no ground-truth scene graph (gt/scene_graph.json)", hint="delete it to re-render"
        )
    return PreparedScene(spec, seq, out, read_scene_graph(out / GRAPH_FILE), read_scene_graph(gt_path))


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
    return [n for n in gt.nodes(ont.OBJECT) if n.attributes.get("kind") not in _NON_TARGET_KINDS]


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


def _room_of(gt: SceneGraph, node: Node) -> Node | None:
    for parent in gt.parents(node.symbol, ont.CONTAINS):
        if parent.label == ont.ROOM:
            return parent
    room = node.attributes.get("room")
    return gt.node(room) if isinstance(room, str) and room in gt else None


def _level(node: Node) -> int:
    value = node.attributes.get("floor_level", node.attributes.get("level", 0))
    return int(value) if isinstance(value, (int, float)) else 0


# -- Table III: object retrieval ----------------------------------------------------------------------------
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
        room = _room_of(gt, obj)
        if room is None:
            continue
        by_room_class[(room.class_name, obj.class_name)].append(obj.symbol)
        by_floor_room_class[(_level(room), room.class_name, obj.class_name)].append(obj.symbol)
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
class GroundingOutcome:
    """What a method returned for one query: rankings per variant (the first symbol is its answer)."""

    rankings: dict[str, list[str]]
    retrieval_ms: float = 0.0
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    wall_s: float = 0.0
    error: str | None = None
    decomposition: dict[str, Any] | None = None


GroundingMethod = Callable[[str], GroundingOutcome]
"""Maps a query text to a :class:`GroundingOutcome`; one method may report several variants."""


class FlatRetriever:
    """The non-hierarchical baseline: the whole query embedded once and matched against every object's
    phrase and description documents (no floors, rooms, anchors or keyframes)."""

    def __init__(self, index: HierarchicalIndex, k: int = 64, phrase_weight: float = 0.6) -> None:
        self.index = index
        self.k = k
        self.phrase_weight = phrase_weight

    def rank(self, query: str) -> list[str]:
        vector = self.index.embedder.embed([query])[0]
        docs = self.index.levels[OBJECT_LEVEL]
        parts: dict[str, dict[str, float]] = defaultdict(dict)
        for doc in (DOC_PHRASE, DOC_DESCRIPTION):
            for hit in docs.search(vector, self.k, filter={"doc": doc}):
                parts[symbol_of(hit.id)][doc] = hit.score
        scores = {}
        for symbol, p in parts.items():
            for doc in (DOC_PHRASE, DOC_DESCRIPTION):
                if doc not in p and (entry := docs.get(f"{symbol}#{doc}")) is not None:
                    p[doc] = float(entry.vector @ vector)
            w = self.phrase_weight if DOC_DESCRIPTION in p else 1.0
            scores[symbol] = w * p.get(DOC_PHRASE, 0.0) + (1 - w) * p.get(DOC_DESCRIPTION, 0.0)
        return sorted(scores, key=lambda s: (-scores[s], s))

    def __call__(self, query: str) -> GroundingOutcome:
        started = time.perf_counter()
        ranked = self.rank(query)
        ms = (time.perf_counter() - started) * 1000.0
        return GroundingOutcome({"flat": ranked}, retrieval_ms=ms, wall_s=ms / 1000.0)


def keysg_method(rag: Any, name: str) -> GroundingMethod:
    """A :class:`GroundingMethod` over a ``HierarchicalRAG``: variant ``name`` is its grounding; when the
    LLM selects the object, variant ``name`` with ``-rag`` replaced by ``-embed`` is the retriever's own
    ranking for the same decomposition (the paper's "w/o RAG")."""

    def run(query: str) -> GroundingOutcome:
        result = rag.ground(query)
        rankings = {name: list(result.ranked)}
        if rag.config.select_with_llm and "-rag" in name:
            rankings[name.replace("-rag", "-embed")] = list(result.context.ranked_symbols)
        return GroundingOutcome(
            rankings,
            retrieval_ms=result.retrieval_ms,
            usage=result.usage,
            llm_calls=result.llm_calls,
            wall_s=result.wall_s,
            error=result.error,
            decomposition=result.decomposition.to_dict(),
        )

    return run


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


# -- Table IV: referring-expression grounding --------------------------------------------------------------------
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
    same_floor = [r for r in same_type if _level(r) == _level(room)]
    if len(same_floor) > 1:
        return None
    text = f"the {label_text(room.class_name)}"
    if len(same_type) > 1:
        text += f" on the {floor_phrase(_level(room))}"
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
        room = _room_of(gt, obj)
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


# -- cross-method question answering ----------------------------------------------------------------------------
SYNONYMS: dict[str, str] = {
    "sofa": "couch",
    "fridge": "refrigerator",
    "tv": "television",
    "trash_can": "garbage bin",
    "bathtub": "tub",
    "wardrobe": "closet",
    "nightstand": "bedside table",
    "monitor": "computer screen",
    "armchair": "easy chair",
    "painting": "picture on the wall",
    "washing_machine": "washer",
    "bookshelf": "bookcase",
    "dresser": "chest of drawers",
    "oven": "stove",
    "lamp": "light",
    "plant": "houseplant",
    "towel": "bath towel",
    "cabinet": "cupboard",
}
QUESTION_TYPES: tuple[str, ...] = (
    "lookup",
    "floor-room-object",
    "count",
    "synonym",
    "attribute",
    "room-of",
    "floor-of",
    "nearest",
)


def cross_method_questions(graph: SceneGraph, *, seed: int = 0, per_type: int = 2) -> list[Question]:
    """Typed questions about the built graph with answers in its symbols (``tags[0]`` is the type):
    lookup ("Which object is the oven in the kitchen?"), floor-room-object (a set, naming the floor),
    count, synonym ("couch" for a sofa), attribute (a single-word colour), room-of, floor-of, nearest.
    Only unambiguous draws are kept (the room type is unique on its floor, the class unique where asked)."""
    rng = random.Random(seed)
    rooms = sorted(graph.nodes(ont.ROOM), key=lambda n: n.symbol)
    floor_of_room = {}
    for room in rooms:
        parents = [p for p in graph.parents(room.symbol, ont.CONTAINS) if p.label == ont.FLOOR]
        floor_of_room[room.symbol] = parents[0] if parents else None
    members: dict[str, list[Node]] = {
        r.symbol: sorted(
            (
                c
                for c in graph.children(r.symbol)
                if c.label == ont.OBJECT and c.class_name not in _STRUCTURE_CLASSES
            ),
            key=lambda n: n.symbol,
        )
        for r in rooms
    }
    type_count = Counter(r.class_name for r in rooms)
    all_objects = [o for ms in members.values() for o in ms]
    class_count = Counter(o.class_name for o in all_objects)
    pool: dict[str, list[Question]] = defaultdict(list)

    def add(kind: str, uid: str, text: str, solution: str) -> None:
        pool[kind].append(
            Question(uid=f"{kind}:{uid}", name=kind, question=text, solution=solution, tags=[kind])
        )

    for room in rooms:
        floor = floor_of_room[room.symbol]
        where = f"the {label_text(room.class_name)}"
        unique_type = type_count[room.class_name] == 1
        classes = Counter(o.class_name for o in members[room.symbol])
        for cls, n in sorted(classes.items()):
            objs = [o for o in members[room.symbol] if o.class_name == cls]
            name = label_text(cls)
            if unique_type and n == 1:
                add(
                    "lookup",
                    f"{room.symbol}:{cls}",
                    f"Which object is the {name} in {where}?",
                    objs[0].symbol,
                )
                if cls in SYNONYMS:
                    add(
                        "synonym",
                        f"{room.symbol}:{cls}",
                        f"Which object is the {SYNONYMS[cls]} in {where}?",
                        objs[0].symbol,
                    )
                color = str(objs[0].attributes.get("color", ""))
                if color and " " not in color.strip():
                    add(
                        "attribute",
                        f"{room.symbol}:{cls}",
                        f"What colour is the {name} in {where}?",
                        color.strip(),
                    )
                anchor = objs[0]
                dists = sorted(
                    (math.dist(anchor.position, o.position), o.symbol)
                    for o in members[room.symbol]
                    if o.symbol != anchor.symbol
                )
                if len(dists) >= 2 and dists[1][0] - dists[0][0] >= 0.3:
                    add(
                        "nearest",
                        f"{room.symbol}:{cls}",
                        f"Which object is closest to the {name} in {where}?",
                        dists[0][1],
                    )
            if unique_type:
                kind = "count" if n > 1 else "count-one"
                add(kind, f"{room.symbol}:{cls}", f"How many {plural(name)} are in {where}?", str(n))
            if not unique_type and floor is not None:
                same_floor = [
                    r for r in rooms if r.class_name == room.class_name and floor_of_room[r.symbol] is floor
                ]
                if len(same_floor) == 1:
                    add(
                        "floor-room-object",
                        f"{room.symbol}:{cls}",
                        f"Which {plural(name)} are in {where} on the {floor_phrase(_level(floor))}?",
                        "<" + ", ".join(o.symbol for o in objs) + ">",
                    )
    for cls, n in sorted(class_count.items()):
        if n != 1:
            continue
        obj = next(o for o in all_objects if o.class_name == cls)
        room = next(r for r in rooms if obj in members[r.symbol])
        add("room-of", cls, f"Which room is the {label_text(cls)} in?", room.symbol)
        floor = floor_of_room[room.symbol]
        if floor is not None:
            add("floor-of", cls, f"Which floor is the {label_text(cls)} on?", floor.symbol)
    if len(pool.get("count", [])) < per_type:  # counts of one only when too few rooms hold several of a class
        pool["count"] = pool.get("count", []) + pool.get("count-one", [])
    out: list[Question] = []
    for kind in QUESTION_TYPES:
        items = pool.get(kind, [])
        out.extend(sorted(rng.sample(items, min(per_type, len(items))), key=lambda q: q.uid))
    return out


SUBGRAPH_PROMPT = (
    "You answer questions about a robot's 3D scene graph from the part of it retrieved for the question "
    '(JSON: nodes with id, class, label, the container they are "in", attributes and pos = x, y, z in metres).'
)
SUBGRAPH_ATTRIBUTES: tuple[str, ...] = ("color", "name", "floor_level", "room", "kind", "level", "area_m2")


class SubgraphRAGAgent:
    """EmbodiedRAG-style question answering: the LLM lists the entities the question needs (pre-retrieval),
    each is searched in an entity index of the graph's objects, rooms and floors, the hits induce a
    subgraph (plus their containing rooms and floors) serialised as compact JSON with positions, and the
    LLM answers from it."""

    def __init__(
        self,
        model: ChatModel,
        graph: SceneGraph,
        embedder: Embedder,
        *,
        k: int = 8,
        min_score: float = 0.35,
        max_entities: int = 4,
        max_reply_tokens: int = 256,
    ) -> None:
        from scenerag.agents.embodied.pre_retrieval import PreRetriever
        from scenerag.retrieval.subgraph import SubgraphConfig

        self.model = model
        self.graph = graph
        labels = (ont.OBJECT, ont.FUNCTIONAL_ELEMENT, ont.ROOM, ont.FLOOR)
        self.entities = EntityStore(embedder, config=DocumentConfig(labels=labels))
        self.entities.sync(graph)
        present = {k for n in graph.nodes() if n.label in labels for k in n.attributes}
        self.attribute_names = [a for a in SUBGRAPH_ATTRIBUTES if a in present] or ["color"]
        self.pre = PreRetriever(model, self.attribute_names, max_entities=max_entities)
        self.subgraph_config = SubgraphConfig(
            k=k,
            min_score=min_score,
            relative_margin=0.25,
            labels=labels,
            connect_containment=True,
            connector_labels=(ont.ROOM, ont.FLOOR, ont.OBJECT),
            connector_attributes=("name",),
            keep_attributes=("color", "name"),
        )
        self.max_reply_tokens = max_reply_tokens
        self.name = "subgraph-rag"

    def run(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        from scenerag.agents import prompts
        from scenerag.retrieval.subgraph import retrieve_subgraph, serialize_graph

        start = time.perf_counter()
        state = RunState(AgentResult(self.name, question, task, None))
        try:
            pre = self.pre.run(question)
            state.add_usage(pre.usage)
            sub = retrieve_subgraph(self.entities, self.graph, pre.queries(), self.subgraph_config)
            for node in sub.graph.nodes():
                node.attributes["pos"] = [round(float(v), 2) for v in self.graph.node(node.symbol).position]
            text = serialize_graph(sub.graph, id_attribute=None, include_label=True)
            state.result.tools.append(
                ToolRecord(
                    "subgraph_retrieval",
                    json.dumps([q.text for q in pre.queries()]),
                    True,
                    rows=sub.graph.num_nodes,
                    elapsed_ms=sub.seconds * 1000.0,
                    result_tokens=self.model.count_tokens(text),
                    symbols=sub.symbols,
                )
            )
            rules = prompts.ANSWER_RULES_QA if task == "qa" else prompts.pddl_rules("")
            state.messages = [
                Message.system(f'{SUBGRAPH_PROMPT}\n\n{rules} Reply with JSON {{"answer": ...}}.'),
                Message.user(
                    f"Retrieved subgraph:\n{text}\n\n{ToolAgent.user_prompt(question, task, answer_type)}"
                ),
            ]
            resp = self.model.chat(
                state.messages, response_schema=ANSWER_SCHEMA, max_tokens=self.max_reply_tokens
            )
            state.add_usage(resp.usage)
            state.messages.append(Message.assistant(resp.message.content))
            raw = str(loads_object(resp.message.content).get("answer", ""))
            state.result.raw_answer = raw
            state.result.answer = normalize_answer(raw, task)
            problems = default_answer_problems(state.result.answer, task, None)
            state.result.error = "; ".join(problems) if problems else None
        except LLMError as exc:
            state.result.error = str(exc)
        state.result.wall_s = time.perf_counter() - start
        return state.finish()


def run_cross_method(
    agents: Mapping[str, Any],
    questions: Sequence[Question],
    *,
    model_name: str = "",
    progress: Callable[[str], None] | None = None,
) -> list[Record]:
    """Every agent on every question (agent by agent, so a local model reuses its cached prompt prefix)."""
    records: list[Record] = []
    for name, agent in agents.items():
        for i, q in enumerate(questions):
            result: AgentResult = agent.run(q.question, task=q.task, answer_type=q.answer_type())
            record = Record.from_result(name, model_name, q, result)
            records.append(record)
            if progress is not None:
                mark = "ok" if record.correct else "WRONG"
                progress(
                    f"{name} {i + 1}/{len(questions)} [{q.tags[0] if q.tags else '-'}] {mark} "
                    f"{result.answer!r} (want {q.solution}) {result.usage.input_tokens} in-tok {result.wall_s:.1f}s"
                )
    return records


def per_type_table(records: Sequence[Record]) -> tuple[list[str], dict[str, dict[str, tuple[int, int]]]]:
    """``(methods, {question type: {method: (correct, asked)}})``."""
    methods = list(dict.fromkeys(r.config for r in records))
    table: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for r in records:
        kind = r.tags[0] if r.tags else "-"
        ok, n = table[kind].get(r.config, (0, 0))
        table[kind][r.config] = (ok + int(r.correct), n + 1)
    return methods, dict(table)


def format_per_type(records: Sequence[Record]) -> str:
    """Markdown: success per question type and method, and which method wins each type."""
    methods, table = per_type_table(records)
    lines = ["| type | " + " | ".join(methods) + " | best |", "|" + "---|" * (len(methods) + 2)]
    for kind in [k for k in QUESTION_TYPES if k in table] + sorted(
        k for k in table if k not in QUESTION_TYPES
    ):
        cells = []
        best_rate, best = -1.0, []
        for m in methods:
            ok, n = table[kind].get(m, (0, 0))
            cells.append(f"{ok}/{n}" if n else "–")
            rate = ok / n if n else -1.0
            if rate > best_rate:
                best_rate, best = rate, [m]
            elif rate == best_rate:
                best.append(m)
        lines.append(
            f"| {kind} | " + " | ".join(cells) + f" | {', '.join(best) if best_rate > 0 else 'none'} |"
        )
    return "\n".join(lines)


CROSS_METHODS: tuple[str, ...] = ("cypher", "hybrid-cypher", "keysg-rag", "subgraph-rag", "context")
STORE_METHODS: frozenset[str] = frozenset({"cypher", "hybrid-cypher"})


def cross_method_agents(
    methods: Sequence[str],
    model: ChatModel,
    graph: SceneGraph,
    store: Any,
    embedder: Embedder,
    index_path: str | Path,
    *,
    max_tool_calls: int = 4,
) -> dict[str, Any]:
    """One agent per method name of :data:`CROSS_METHODS`, all on the same model, graph and store:
    ``cypher`` (agentic, schema), ``hybrid-cypher`` (+ ``vector_search``), ``keysg-rag`` (hierarchical RAG,
    LLM decomposition), ``subgraph-rag`` (EmbodiedRAG-style) and ``context`` (the whole graph in the prompt,
    one correction allowed)."""
    from scenerag.agents import CypherAgent, CypherAgentConfig
    from scenerag.agents.baselines import ContextWindowAgent, ContextWindowConfig
    from scenerag.agents.hierarchical_rag import HierarchicalRAG
    from scenerag.agents.hybrid_cypher import HybridCypherAgent, HybridCypherConfig

    unknown = [m for m in methods if m not in CROSS_METHODS]
    if unknown:
        raise BenchmarkError(f"unknown method(s) {unknown}", hint=f"use {', '.join(CROSS_METHODS)}")
    agents: dict[str, Any] = {}
    for name in methods:
        if name == "cypher":
            agents[name] = CypherAgent(
                model, store, CypherAgentConfig(mode="agentic", max_tool_calls=max_tool_calls)
            )
        elif name == "hybrid-cypher":
            agents[name] = HybridCypherAgent.from_graph(
                model, store, graph, embedder, HybridCypherConfig(max_tool_calls=max_tool_calls)
            )
        elif name == "keysg-rag":
            agents[name] = HierarchicalRAG(
                model, HierarchicalIndex.open_or_build(graph, index_path, embedder)
            )
        elif name == "subgraph-rag":
            agents[name] = SubgraphRAGAgent(model, graph, embedder)
        else:
            agents[name] = ContextWindowAgent(
                model, graph, ContextWindowConfig(mode="agentic", max_corrections=1)
            )
    return agents


@dataclass(frozen=True, slots=True)
class CrossMethodConfig:
    """What :func:`run_cross_method_bench` runs: ``per_type`` questions of each of ``types`` on each scene,
    for every method of ``methods``."""

    scenes: tuple[SceneSpec, ...] = (SMALL_SCENE,)
    methods: tuple[str, ...] = CROSS_METHODS
    types: tuple[str, ...] = QUESTION_TYPES
    per_type: int = 1
    seed: int = 0
    max_tool_calls: int = 4

    def __post_init__(self) -> None:
        bad = [m for m in self.methods if m not in CROSS_METHODS]
        if bad or not self.methods:
            raise BenchmarkError(f"unknown or no method(s) {bad}", hint=f"use {', '.join(CROSS_METHODS)}")
        bad = [t for t in self.types if t not in QUESTION_TYPES]
        if bad or not self.types:
            raise BenchmarkError(
                f"unknown or no question type(s) {bad}", hint=f"use {', '.join(QUESTION_TYPES)}"
            )
        if self.per_type < 1:
            raise BenchmarkError(f"per_type must be >= 1, got {self.per_type}")
        if not self.scenes:
            raise BenchmarkError("the benchmark needs at least one scene")


@dataclass
class CrossMethodReport:
    """Records of every (method, question) run, with the scene each came from (``scenes[i]`` for
    ``records[i]``)."""

    config: CrossMethodConfig
    model: str
    records: list[Record] = field(default_factory=list)
    scenes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        from scenerag.eval.runner import markdown_table, summarize

        if not self.records:
            return "no cross-method runs"
        parts = [*self.notes, "", markdown_table(summarize(self.records)), "", "Success per question type:"]
        parts.append(format_per_type(self.records))
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        from scenerag.eval.runner import summarize

        return {
            "config": asdict(self.config),
            "model": self.model,
            "notes": self.notes,
            "summary": summarize(self.records),
            "per_type": per_type_table(self.records)[1],
            "records": [{"scene": s, **asdict(r)} for s, r in zip(self.scenes, self.records, strict=True)],
        }


def run_cross_method_bench(
    config: CrossMethodConfig,
    model: ChatModel,
    embedder: Embedder,
    *,
    cache_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    on_record: Callable[[str, Record], None] | None = None,
) -> CrossMethodReport:
    """Every method of ``config`` on the same questions of each scene (built and loaded into an embedded store
    under the cache); method by method, so a local model reuses its cached prompt prefix across questions.
    ``on_record(scene, record)`` is called as each run finishes."""
    from scenerag.retrieval.hierarchical import index_dir
    from scenerag.store import open_store

    say = progress or (lambda text: None)
    report = CrossMethodReport(config, model.name)
    for spec in config.scenes:
        scene = prepare_scene(spec, cache_dir, progress=say)
        graph = scene.graph
        questions = [
            q
            for q in cross_method_questions(graph, seed=config.seed, per_type=config.per_type)
            if q.tags and q.tags[0] in config.types
        ]
        report.notes.append(f"{spec.name}: {graph.summary()}; {len(questions)} questions; model {model.name}")
        say(report.notes[-1])
        for q in questions:
            say(f"  [{q.tags[0]}] {q.question} -> {q.solution}")
        root = Path(cache_dir) if cache_dir is not None else bench_cache_dir()
        store = None
        if STORE_METHODS & set(config.methods):  # only the Cypher agents query the database
            store = open_store(root / spec.key() / "db")
        try:
            if store is not None:
                store.load(graph)
            agents = cross_method_agents(
                config.methods,
                model,
                graph,
                store,
                embedder,
                index_dir(scene.build_dir),
                max_tool_calls=config.max_tool_calls,
            )
            if "context" in agents:
                tokens = agents["context"].prompt_tokens()
                report.notes.append(
                    f"{spec.name}: context-window prompt {tokens} tokens (model window {model.context_window})"
                )
                say(report.notes[-1])
            for name, agent in agents.items():
                for record in run_cross_method({name: agent}, questions, model_name=model.name, progress=say):
                    report.records.append(record)
                    report.scenes.append(spec.name)
                    if on_record is not None:
                        on_record(spec.name, record)
        finally:
            if store is not None:
                store.close()
    return report


# -- a large synthetic index for latency ----------------------------------------------------------------------------
def synthetic_scene_graph(
    n_objects: int = 10_000,
    n_keyframes: int = 5_000,
    *,
    n_floors: int = 10,
    rooms_per_floor: int = 20,
    seed: int = 0,
) -> SceneGraph:
    """A KeySG-shaped graph of the given size without rendering: floors, typed rooms with summaries,
    objects with colour/class/size descriptions and keyframes with view descriptions, in random rooms."""
    from scenerag.sim.building import OBJECT_CLASSES, PALETTE, ROOM_TYPES

    rng = np.random.default_rng(seed)
    colours = [label_text(c) for c in PALETTE]
    g = SceneGraph(metadata={"generator": "scenerag.eval.retrieval_bench.synthetic_scene_graph"})
    g.add("B0", ont.BUILDING, "building", (0.0, 0.0, 1.5 * n_floors))
    rooms: list[tuple[str, str, int, np.ndarray]] = []
    counts: Counter[str] = Counter()
    for f in range(n_floors):
        g.add(
            f"F{f}",
            ont.FLOOR,
            "floor",
            (0.0, 0.0, 3.0 * f + 1.4),
            level=f,
            name=f"floor {f}",
            description=f"Floor {f} with {rooms_per_floor} rooms.",
        )
        g.add_edge("B0", f"F{f}", ont.CONTAINS)
        for r in range(rooms_per_floor):
            rtype = ROOM_TYPES[int(rng.integers(len(ROOM_TYPES)))]
            counts[rtype] += 1
            symbol = f"R{f * rooms_per_floor + r}"
            center = np.array([6.0 * r, 6.0 * (f % 2), 3.0 * f + 1.4])
            rooms.append((symbol, rtype, f, center))
            g.add(
                symbol,
                ont.ROOM,
                rtype,
                tuple(center),
                floor_level=f,
                name=f"{label_text(rtype)} {counts[rtype]}",
                description=f"A {label_text(rtype)} on floor {f} of about {int(rng.integers(8, 30))} m².",
            )
            g.add_edge(f"F{f}", symbol, ont.CONTAINS)
    for i in range(n_objects):
        symbol, rtype, f, center = rooms[int(rng.integers(len(rooms)))]
        cls = OBJECT_CLASSES[int(rng.integers(len(OBJECT_CLASSES)))]
        colour = colours[int(rng.integers(len(colours)))]
        size = np.round(rng.uniform(0.1, 1.5, 3), 1)
        pos = center + np.append(rng.uniform(-2.5, 2.5, 2), rng.uniform(-1.0, 1.0))
        g.add(
            f"O{i}",
            ont.OBJECT,
            cls,
            tuple(pos),
            bbox_center=tuple(pos),
            bbox_dim=tuple(size),
            color=colour,
            room=symbol,
            floor_level=f,
            description=f"{colour} {label_text(cls)} ({size[0]:.1f} x {size[1]:.1f} x {size[2]:.1f} m) in the {label_text(rtype)}",
        )
        g.add_edge(symbol, f"O{i}", ont.CONTAINS)
    for i in range(n_keyframes):
        symbol, rtype, f, center = rooms[int(rng.integers(len(rooms)))]
        seen = [label_text(OBJECT_CLASSES[int(rng.integers(len(OBJECT_CLASSES)))]) for _ in range(3)]
        g.add(
            f"K{i}",
            ont.KEYFRAME,
            "keyframe",
            tuple(center),
            room=symbol,
            floor_level=f,
            description=f"View on floor {f} in the {label_text(rtype)}. Visible: a {seen[0]}, a {seen[1]}, a {seen[2]}.",
        )
        g.add_edge(symbol, f"K{i}", ont.CONTAINS)
    return g


def latency_figures(samples_ms: Iterable[float]) -> dict[str, float]:
    values = sorted(samples_ms)
    if not values:
        return {"p50": float("nan"), "p95": float("nan"), "n": 0}
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return {"p50": statistics.median(values), "p95": p95, "n": len(values)}


# -- the whole benchmark (what ``scenerag bench retrieval`` runs) --------------------------------------------------
@dataclass(frozen=True, slots=True)
class RetrievalBenchConfig:
    """What :func:`run_retrieval_benchmark` runs.

    ``tables``: ``objects`` (Table III) and/or ``grounding`` (Table IV); the deterministic methods (``flat``,
    ``keysg-embed-rules``) run on every query of every scene; with a model the LLM methods
    (``keysg-embed-llm`` and ``keysg-rag-llm`` from one run) run on ``llm_queries_per_kind`` queries per
    kind and ``llm_expressions_per_cell`` expressions per (category, with/without class) cell of the first
    ``llm_scenes`` scenes, or on everything with ``full``; ``llm_max_expressions`` caps the LLM expressions
    per scene (spread over the cells: a slow local model).
    """

    scenes: tuple[SceneSpec, ...] = DEFAULT_SCENES
    tables: tuple[str, ...] = ("objects", "grounding")
    llm_queries_per_kind: int = 3
    llm_expressions_per_cell: int = 1
    llm_scenes: int = 1
    full: bool = False
    seed: int = 0
    llm_max_expressions: int | None = None

    def __post_init__(self) -> None:
        if self.llm_max_expressions is not None and self.llm_max_expressions < 1:
            raise BenchmarkError(f"llm_max_expressions must be >= 1, got {self.llm_max_expressions}")
        unknown = set(self.tables) - {"objects", "grounding"}
        if unknown:
            raise BenchmarkError(
                f"unknown benchmark table(s) {sorted(unknown)}", hint="use objects and/or grounding"
            )
        if not self.scenes:
            raise BenchmarkError("the benchmark needs at least one scene")


@dataclass
class RetrievalBenchReport:
    """Records of both tables, per-scene statistics and what the LLM ran on."""

    config: RetrievalBenchConfig
    model: str | None
    scenes: list[dict[str, Any]] = field(default_factory=list)
    retrieval: list[RetrievalRecord] = field(default_factory=list)
    grounding: list[GroundingRecord] = field(default_factory=list)

    def recall_rows(self) -> list[dict[str, Any]]:
        return recall_table(self.retrieval) if self.retrieval else []

    def grounding_rows(self) -> list[dict[str, Any]]:
        return grounding_table(self.grounding) if self.grounding else []

    def to_text(self) -> str:
        parts = []
        for s in self.scenes:
            parts.append(
                f"{s['name']}: {s['floors']} floors, {s['rooms']} rooms, {s['objects']} objects, "
                f"{s['keyframes']} keyframes; {s.get('queries', 0)} queries, {s.get('expressions', 0)} "
                f"expressions; LLM on {s.get('llm_queries', 0)} queries and {s.get('llm_expressions', 0)} "
                f"expressions; {s['visual']}"
            )
        parts.append(f"LLM: {self.model or 'none (deterministic methods only)'}")
        if self.retrieval:
            parts += [
                "",
                "Object retrieval (Recall@K, %, at 3D IoU θ):",
                format_recall_table(self.recall_rows()),
            ]
        if self.grounding:
            parts += ["", "Grounding accuracy (%):", format_grounding_table(self.grounding_rows())]
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": asdict(self.config),
            "model": self.model,
            "scenes": self.scenes,
            "recall": self.recall_rows(),
            "grounding": self.grounding_rows(),
            "retrieval_records": [asdict(r) for r in self.retrieval],
            "grounding_records": [asdict(r) for r in self.grounding],
        }


def stratified_expressions(
    expressions: Sequence[ReferringExpression], per_cell: int, seed: int = 0
) -> list[ReferringExpression]:
    """``per_cell`` expressions (seeded sample) of each (category, with/without class) cell."""
    rng = random.Random(seed)
    cells: dict[tuple[str, bool], list[ReferringExpression]] = defaultdict(list)
    for e in expressions:
        cells[(e.category, e.mentions_class)].append(e)
    out: list[ReferringExpression] = []
    for _, items in sorted(cells.items()):
        out.extend(sorted(rng.sample(items, min(per_cell, len(items))), key=lambda e: e.uid))
    return out


def spread(items: Sequence[Any], n: int) -> list[Any]:
    """``n`` items evenly spaced over ``items`` (the first always among them)."""
    if n >= len(items):
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def _with_subset_label(records: list[Any], scene: str, uids: set[str]) -> list[Any]:
    """Copies of the deterministic records on the LLM subset, labelled ``<method> (LLM subset)``."""
    return [
        type(r)(**{**asdict(r), "method": f"{r.method} (LLM subset)"})
        for r in records
        if r.scene == scene and r.uid in uids and "llm" not in r.method and "subset" not in r.method
    ]


def run_retrieval_benchmark(
    config: RetrievalBenchConfig,
    embedder: Embedder,
    model: ChatModel | None = None,
    *,
    cache_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> RetrievalBenchReport:
    """Tables III and IV on ``config.scenes`` (rendered and built on first use, then cached)."""
    from scenerag.agents.hierarchical_rag import HierarchicalRAG, HierarchicalRAGConfig
    from scenerag.retrieval.hierarchical import index_dir

    say = progress or (lambda text: None)
    report = RetrievalBenchReport(config, model.name if model is not None else None)
    for i, spec in enumerate(config.scenes):
        scene = prepare_scene(spec, cache_dir, progress=say)
        index = HierarchicalIndex.open_or_build(scene.graph, index_dir(scene.build_dir), embedder)
        counts = scene.graph.label_counts()
        stats: dict[str, Any] = {
            "name": spec.name,
            "floors": counts.get(ont.FLOOR, 0),
            "rooms": counts.get(ont.ROOM, 0),
            "objects": counts.get(ont.OBJECT, 0),
            "keyframes": counts.get(ont.KEYFRAME, 0),
            "index": index.sizes(),
            "visual": index.visual_status,
        }
        report.scenes.append(stats)
        rules = HierarchicalRAG(
            None, index, HierarchicalRAGConfig(decomposition="rules", select_with_llm=False)
        )
        methods: dict[str, GroundingMethod] = {
            "flat": FlatRetriever(index),
            "keysg-embed-rules": keysg_method(rules, "keysg-embed-rules"),
        }
        use_llm = model is not None and (config.full or i < config.llm_scenes)
        rag = HierarchicalRAG(model, index) if use_llm else None
        if "objects" in config.tables:
            queries = object_retrieval_queries(scene.ground_truth)
            stats["queries"] = len(queries)
            report.retrieval += run_object_retrieval(scene, queries, methods)
            say(f"{spec.name}: object retrieval, {len(queries)} queries, deterministic methods done")
            if rag is not None:
                subset = (
                    queries
                    if config.full
                    else object_retrieval_queries(
                        scene.ground_truth, seed=config.seed, max_per_kind=config.llm_queries_per_kind
                    )
                )
                stats["llm_queries"] = len(subset)
                report.retrieval += run_object_retrieval(
                    scene, subset, {"keysg-rag-llm": keysg_method(rag, "keysg-rag-llm")}, progress=say
                )
                if not config.full:
                    report.retrieval += _with_subset_label(
                        report.retrieval, spec.name, {q.uid for q in subset}
                    )
        if "grounding" in config.tables:
            expressions = referring_expressions(scene.ground_truth, seed=config.seed)
            stats["expressions"] = len(expressions)
            report.grounding += run_grounding(scene, expressions, methods)
            say(f"{spec.name}: grounding, {len(expressions)} expressions, deterministic methods done")
            if rag is not None:
                chosen = (
                    expressions
                    if config.full
                    else stratified_expressions(expressions, config.llm_expressions_per_cell, config.seed)
                )
                if config.llm_max_expressions is not None and len(chosen) > config.llm_max_expressions:
                    chosen = spread(chosen, config.llm_max_expressions)
                stats["llm_expressions"] = len(chosen)
                report.grounding += run_grounding(
                    scene, chosen, {"keysg-rag-llm": keysg_method(rag, "keysg-rag-llm")}, progress=say
                )
                if not config.full:
                    report.grounding += _with_subset_label(
                        report.grounding, spec.name, {e.uid for e in chosen}
                    )
    return report


def latency_queries(graph: SceneGraph, n: int, seed: int = 0) -> list[str]:
    """``n`` queries over ``graph``'s objects cycling through five forms: (room, object), (floor, room,
    object), colour + room, anchor + room, and the bare object (no floor or room: the widest search)."""
    rng = random.Random(seed)
    objects = sorted(graph.nodes(ont.OBJECT), key=lambda n: n.symbol)
    if not objects:
        raise BenchmarkError("the graph has no objects to ask for")
    out = []
    for i in range(n):
        obj = rng.choice(objects)
        room = _room_of(graph, obj)
        cls = label_text(obj.class_name)
        rtype = label_text(room.class_name) if room is not None else "room"
        other = label_text(rng.choice(objects).class_name)
        colour = label_text(str(obj.attributes.get("color", "")))
        forms = [
            f"the {cls} in the {rtype}",
            f"the {cls} in the {rtype} on the {floor_phrase(_level(obj))}",
            f"the {colour} {cls} in the {rtype}".replace("the  ", "the "),
            f"the {cls} next to the {other} in the {rtype}",
            f"the {cls}",
        ]
        out.append(forms[i % len(forms)])
    return out


LATENCY_FORMS: tuple[str, ...] = ("room", "floor+room", "colour+room", "anchor+room", "unscoped")


def measure_retrieval_latency(
    index: HierarchicalIndex, queries: Sequence[str], *, repeats: int = 3, embedded_queries: int = 60
) -> dict[str, Any]:
    """Latency of top-down retrieval over ``index`` (no LLM): each rule-decomposed query with precomputed
    query vectors (wall and thread-CPU ms, per query form and per stage), and end to end with the
    embedding of texts the embedder has not cached (first ``embedded_queries`` queries)."""
    from scenerag.retrieval.hierarchical import HierarchicalRetriever, RuleBasedDecomposer

    retriever = HierarchicalRetriever(index)
    rules = RuleBasedDecomposer.for_index(index)
    decompositions = [rules.decompose(q) for q in queries]
    vectors = [retriever.embed(d) for d in decompositions]
    for d, v in list(zip(decompositions, vectors, strict=True))[:20]:
        retriever.retrieve(d, v)  # warm-up
    wall: list[float] = []
    cpu: list[float] = []
    stages: list[dict[str, float]] = []
    by_form: dict[str, list[float]] = defaultdict(list)
    for _ in range(repeats):
        for i, (d, v) in enumerate(zip(decompositions, vectors, strict=True)):
            t, c = time.perf_counter(), time.thread_time()
            context = retriever.retrieve(d, v)
            cpu.append((time.thread_time() - c) * 1000.0)
            wall.append((time.perf_counter() - t) * 1000.0)
            stages.append(context.timings_ms)
            by_form[LATENCY_FORMS[i % len(LATENCY_FORMS)]].append(wall[-1])
    clear = getattr(index.embedder, "clear_cache", None)
    end_to_end: list[float] = []
    embedding: list[float] = []
    for q in queries[:embedded_queries]:
        if callable(clear):
            clear()
        t = time.perf_counter()
        context = retriever.retrieve(rules.decompose(q))
        end_to_end.append((time.perf_counter() - t) * 1000.0)
        embedding.append(context.timings_ms.get("embed", 0.0))
    return {
        "retrievals": len(wall),
        "retrieval_wall_ms": latency_figures(wall),
        "retrieval_cpu_ms": latency_figures(cpu),
        "by_form_wall_ms": {k: latency_figures(v) for k, v in by_form.items()},
        "stage_p50_ms": {k: statistics.median(s.get(k, 0.0) for s in stages) for k in stages[0]}
        if stages
        else {},
        "end_to_end_ms": latency_figures(end_to_end),
        "embedding_ms": latency_figures(embedding),
    }


def run_latency_bench(
    embedder: Embedder,
    *,
    objects: int = 10_000,
    keyframes: int = 5_000,
    queries: int = 200,
    repeats: int = 3,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The latency bar: a synthetic KeySG-shaped graph of ``objects`` objects and ``keyframes`` keyframes
    (no rendering), indexed once (cached under the bench cache), then :func:`measure_retrieval_latency` on
    ``queries`` rule-decomposed queries. The result also names the graph's size and the index build time."""
    say = progress or (lambda text: None)
    started = time.perf_counter()
    graph = synthetic_scene_graph(objects, keyframes, seed=seed)
    root = Path(cache_dir) if cache_dir is not None else bench_cache_dir()
    index = HierarchicalIndex.open_or_build(
        graph, root / f"synthetic-{objects}-{keyframes}-s{seed}" / "hierarchical_index", embedder
    )
    counts = {str(k): int(v) for k, v in graph.label_counts().items()}
    setup_s = time.perf_counter() - started
    say(f"synthetic graph {counts} indexed (or loaded) in {setup_s:.1f} s")
    result = measure_retrieval_latency(index, latency_queries(graph, queries, seed), repeats=repeats)
    return {"graph": counts, "objects": objects, "keyframes": keyframes, "setup_s": setup_s, **result}


def format_latency(result: Mapping[str, Any]) -> str:
    """The latency figures of :func:`run_latency_bench` as text (wall and thread-CPU p50/p95, per query
    form and stage, and end to end with query embedding)."""
    r, c = result["retrieval_wall_ms"], result["retrieval_cpu_ms"]
    lines = [
        f"Retrieval latency, {result.get('objects', '?')} objects / {result.get('keyframes', '?')} keyframes, "
        f"{result['retrievals']} retrievals (no LLM call)",
        f"  retrieval only (precomputed query vectors): wall p50 {r['p50']:.2f} ms, p95 {r['p95']:.2f} ms; "
        f"thread CPU p50 {c['p50']:.2f} ms, p95 {c['p95']:.2f} ms",
    ]
    for form in LATENCY_FORMS:
        fig = result["by_form_wall_ms"].get(form)
        if fig:
            lines.append(f"    {form:12s} wall p50 {fig['p50']:.2f} ms, p95 {fig['p95']:.2f} ms")
    lines.append("  stage p50 (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in result["stage_p50_ms"].items()))
    e, m = result["end_to_end_ms"], result["embedding_ms"]
    lines.append(
        f"  end to end incl. embedding unseen texts (MiniLM, 1 thread): p50 {e['p50']:.1f} ms, "
        f"p95 {e['p95']:.1f} ms (embedding alone p50 {m['p50']:.1f} ms)"
    )
    return "\n".join(lines)


__all__ = [
    "CROSS_METHODS",
    "DEFAULT_SCENES",
    "GROUNDING_IOU",
    "IOU_THRESHOLDS",
    "LATENCY_FORMS",
    "QUESTION_TYPES",
    "RECALL_KS",
    "SMALL_SCENE",
    "BenchmarkError",
    "CrossMethodConfig",
    "CrossMethodReport",
    "FlatRetriever",
    "GroundingOutcome",
    "GroundingRecord",
    "PreparedScene",
    "ReferringExpression",
    "RetrievalBenchConfig",
    "RetrievalBenchReport",
    "RetrievalQuery",
    "RetrievalRecord",
    "SceneSpec",
    "SubgraphRAGAgent",
    "bench_cache_dir",
    "best_ground_truth_match",
    "box_iou",
    "box_of",
    "cross_method_agents",
    "cross_method_questions",
    "floor_phrase",
    "format_grounding_table",
    "format_latency",
    "format_per_type",
    "format_recall_table",
    "grounding_table",
    "keysg_method",
    "latency_figures",
    "latency_queries",
    "measure_retrieval_latency",
    "object_retrieval_queries",
    "per_type_table",
    "prepare_scene",
    "recall_hits",
    "recall_table",
    "referring_expressions",
    "run_cross_method",
    "run_cross_method_bench",
    "run_grounding",
    "run_latency_bench",
    "run_object_retrieval",
    "run_retrieval_benchmark",
    "spread",
    "stratified_expressions",
    "synthetic_scene_graph",
    "target_objects",
]
