"""The KeySG build pipeline: ``run_build(sequence, out_dir, config, progress=...)`` -> ``BuildReport``.

Stages, in order: ``scan`` (voxel map), ``floors``, ``rooms``, ``association`` (frames -> rooms),
``keyframes``, ``objects`` (segmentation, lifting, merging), ``visibility``, ``descriptions``,
``summaries`` and ``graph`` (assembly; ``scene_graph.json`` in ``out_dir``; loaded into ``config.store``
when set). Each stage is cached under ``out_dir/cache`` and reused when its settings, its inputs and the
sequence are unchanged (see ``scenerag.build.cache``). ``progress(stage, done, total)`` is called as work
advances; the report lists each stage's time and whether it came from the cache, plus peak memory.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenerag.build.association import FrameAssociation, associate_frames
from scenerag.build.cache import StageCache, sequence_fingerprint, stage_key
from scenerag.build.config import BuildConfig
from scenerag.build.datasets import RGBDSequence, open_sequence
from scenerag.build.errors import BuildError
from scenerag.build.floors import FloorSegment, detect_floors
from scenerag.build.keyframes import KeyframeSelection, select_room_keyframes
from scenerag.build.objects import MapObject, build_objects, load_objects, save_objects
from scenerag.build.reconstruct import Reconstruction, integrate_tsdf, scan_sequence, write_ply
from scenerag.build.rooms import FloorPlan, RoomMap, RoomSegment, load_plans, save_plans, segment_rooms
from scenerag.graph.model import SceneGraph
from scenerag.llm.base import LLMError

Progress = Callable[[str, int, int], None]
STAGES: tuple[str, ...] = (
    "scan",
    "floors",
    "rooms",
    "association",
    "keyframes",
    "objects",
    "visibility",
    "descriptions",
    "summaries",
    "graph",
)
GRAPH_FILE = "scene_graph.json"
REPORT_FILE = "build_report.json"


@dataclass
class StageReport:
    """One stage of one run: wall time, whether it was reused from the cache, and stage figures."""

    name: str
    seconds: float
    cached: bool
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuildArtifacts:
    """In-memory results of every stage (for evaluation and inspection)."""

    sequence: RGBDSequence
    reconstruction: Reconstruction
    floors: list[FloorSegment]
    rooms: list[RoomSegment]
    plans: list[FloorPlan]
    association: FrameAssociation
    keyframes: dict[int, KeyframeSelection]
    objects: dict[int, MapObject]
    visibility: dict[int, dict[int, float]]
    descriptions: dict[int, str]
    summaries: dict[str, Any]
    graph: SceneGraph

    @property
    def keyframe_rooms(self) -> dict[int, int]:
        """Keyframe (sequence index) -> room index."""
        return {int(f): room for room, sel in self.keyframes.items() for f in sel.frames}


@dataclass
class BuildReport:
    """What a build did: per-stage timings, counts, peak memory and the system load around it."""

    sequence: str
    out_dir: str
    stages: list[StageReport]
    total_seconds: float
    peak_rss_mb: float
    load_average: tuple[float, float]
    counts: dict[str, int]
    graph_path: str
    llm_tokens: int = 0
    store: str | None = None
    artifacts: BuildArtifacts | None = field(default=None, repr=False, compare=False)

    def stage(self, name: str) -> StageReport:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sequence": self.sequence,
            "out_dir": self.out_dir,
            "stages": [s.__dict__ for s in self.stages],
            "total_seconds": self.total_seconds,
            "peak_rss_mb": self.peak_rss_mb,
            "load_average": list(self.load_average),
            "counts": self.counts,
            "graph_path": self.graph_path,
            "llm_tokens": self.llm_tokens,
            "store": self.store,
        }

    def to_text(self) -> str:
        lines = [f"{'stage':<13} {'seconds':>8}  cache  details"]
        for s in self.stages:
            detail = ", ".join(f"{k}={v}" for k, v in s.details.items() if not isinstance(v, (dict, list)))
            lines.append(f"{s.name:<13} {s.seconds:8.2f}  {'hit ' if s.cached else 'run '}  {detail}")
        counts = ", ".join(f"{k}={v}" for k, v in self.counts.items())
        lines.append(f"{'total':<13} {self.total_seconds:8.2f}        {counts}")
        lines.append(
            f"peak memory {self.peak_rss_mb:.0f} MiB; load average {self.load_average[0]:.2f} -> "
            f"{self.load_average[1]:.2f} on {os.cpu_count()} cores; graph: {self.graph_path}"
        )
        return "\n".join(lines)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _Runner:
    """Runs or reuses stages, timing each one."""

    def __init__(self, cache: StageCache, progress: Progress, force: bool) -> None:
        self.cache = cache
        self.progress = progress
        self.force = force
        self.reports: list[StageReport] = []
        self.keys: dict[str, str] = {}

    def run(
        self,
        stage: str,
        settings: Any,
        inputs: list[str],
        compute: Callable[[Path], dict[str, Any]],
        load: Callable[[Path], dict[str, Any]],
        *,
        extra_inputs: dict[str, str] | None = None,
    ) -> None:
        key = stage_key(stage, settings, {**{s: self.keys[s] for s in inputs}, **(extra_inputs or {})})
        self.keys[stage] = key
        start = time.perf_counter()
        if not self.force and self.cache.is_fresh(stage, key):
            self.progress(stage, 0, 1)
            try:
                details = load(self.cache.path(stage))
            except (OSError, ValueError, KeyError, BuildError):  # a damaged cache entry: recompute it
                self.cache.invalidate(stage)
            else:
                self.progress(stage, 1, 1)
                self.reports.append(StageReport(stage, time.perf_counter() - start, True, details))
                return
        tmp = self.cache.begin(stage)
        details = compute(tmp)
        seconds = time.perf_counter() - start
        self.cache.commit(stage, tmp, key, seconds, details)
        self.reports.append(StageReport(stage, seconds, False, details))


def _room_transitions(assoc: FrameAssociation, max_gap: int = 60) -> list[tuple[int, int]]:
    """Pairs of rooms the camera moved between directly (gaps of up to ``max_gap`` frames outside any
    room allowed, e.g. on stairs)."""
    out: list[tuple[int, int]] = []
    prev, prev_at = -1, -(10**9)
    for i, r in enumerate(assoc.camera_room.tolist()):
        if r < 0:
            continue
        if prev >= 0 and r != prev and i - prev_at <= max_gap:
            out.append((prev, r))
        prev, prev_at = r, i
    return out


def run_build(
    sequence_path: str | Path,
    out_dir: str | Path,
    config: BuildConfig | None = None,
    progress: Progress | None = None,
    *,
    layout: str = "auto",
    chat_model: Any | None = None,
    segmenter: Any | None = None,
    describer: Any | None = None,
    force: bool = False,
) -> BuildReport:
    """Build the KeySG scene graph of the posed RGB-D sequence at ``sequence_path`` into ``out_dir``.

    ``chat_model``, ``segmenter`` and ``describer`` override the ones ``config`` names (tests, custom
    models); ``force`` ignores the cache. Raises ``BuildError`` (or the dataset's ``DatasetError``)
    naming the stage or file at fault.
    """
    cfg = config or BuildConfig()
    report = progress or (lambda stage, done, total: None)
    load_start = os.getloadavg()[0]
    t_start = time.perf_counter()
    sequence = open_sequence(sequence_path, layout=layout)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cache = StageCache(out)
    runner = _Runner(cache, report, force)
    seq_fp = sequence_fingerprint(sequence)
    state: dict[str, Any] = {}
    poses = sequence.poses

    # -- scan ---------------------------------------------------------------------------------------------
    def scan_compute(tmp: Path) -> dict[str, Any]:
        recon = scan_sequence(sequence, cfg.reconstruction, report)
        recon.save(tmp / "reconstruction.npz")
        if cfg.reconstruction.tsdf:
            pts, cols = integrate_tsdf(sequence, cfg.reconstruction, report)
            write_ply(out / "surface.ply", pts, cols)
        state["recon"] = recon
        return {"frames": recon.n_frames, "voxels": len(recon.points)}

    def scan_load(path: Path) -> dict[str, Any]:
        state["recon"] = Reconstruction.load(path / "reconstruction.npz")
        return {"frames": state["recon"].n_frames, "voxels": len(state["recon"].points)}

    runner.run(
        "scan",
        cfg.reconstruction.model_dump(mode="json"),
        [],
        scan_compute,
        scan_load,
        extra_inputs={"sequence": seq_fp},
    )
    recon: Reconstruction = state["recon"]

    # -- floors --------------------------------------------------------------------------------------------
    def floors_compute(tmp: Path) -> dict[str, Any]:
        report("floors", 0, 1)
        state["floors"] = detect_floors(recon, cfg.floors)
        (tmp / "floors.json").write_text(json.dumps([f.to_dict() for f in state["floors"]]))
        report("floors", 1, 1)
        return {"floors": len(state["floors"])}

    def floors_load(path: Path) -> dict[str, Any]:
        state["floors"] = [FloorSegment.from_dict(d) for d in json.loads((path / "floors.json").read_text())]
        return {"floors": len(state["floors"])}

    runner.run("floors", cfg.floors.model_dump(mode="json"), ["scan"], floors_compute, floors_load)
    floors: list[FloorSegment] = state["floors"]

    # -- rooms ---------------------------------------------------------------------------------------------
    def rooms_compute(tmp: Path) -> dict[str, Any]:
        report("rooms", 0, 1)
        rooms, plans = segment_rooms(recon, floors, cfg.rooms)
        (tmp / "rooms.json").write_text(json.dumps([r.to_dict() for r in rooms]))
        save_plans(tmp / "plans.npz", plans)
        state["rooms"], state["plans"] = rooms, plans
        report("rooms", 1, 1)
        return {"rooms": len(rooms)}

    def rooms_load(path: Path) -> dict[str, Any]:
        state["rooms"] = [RoomSegment.from_dict(d) for d in json.loads((path / "rooms.json").read_text())]
        state["plans"] = load_plans(path / "plans.npz")
        return {"rooms": len(state["rooms"])}

    runner.run("rooms", cfg.rooms.model_dump(mode="json"), ["floors"], rooms_compute, rooms_load)
    rooms: list[RoomSegment] = state["rooms"]
    plans: list[FloorPlan] = state["plans"]
    room_map = RoomMap(floors, plans, z_margin=cfg.association.z_margin)

    # -- association ---------------------------------------------------------------------------------------
    def assoc_compute(tmp: Path) -> dict[str, Any]:
        report("association", 0, 1)
        state["assoc"] = associate_frames(recon, floors, plans, cfg.association)
        state["assoc"].save(tmp / "association.npz")
        report("association", 1, 1)
        return {"frames_in_rooms": int((state["assoc"].room >= 0).sum())}

    def assoc_load(path: Path) -> dict[str, Any]:
        state["assoc"] = FrameAssociation.load(path / "association.npz")
        return {"frames_in_rooms": int((state["assoc"].room >= 0).sum())}

    runner.run("association", cfg.association.model_dump(mode="json"), ["rooms"], assoc_compute, assoc_load)
    assoc: FrameAssociation = state["assoc"]

    # -- keyframes -----------------------------------------------------------------------------------------
    def keyframes_compute(tmp: Path) -> dict[str, Any]:
        selections: dict[int, KeyframeSelection] = {}
        room_ids = assoc.rooms()
        report("keyframes", 0, len(room_ids))
        for n, room in enumerate(room_ids):
            frames = assoc.frames_of_room(room)
            selections[room] = select_room_keyframes(frames, poses[frames], cfg.keyframes, recon=recon)
            report("keyframes", n + 1, len(room_ids))
        (tmp / "keyframes.json").write_text(json.dumps({str(k): v.to_dict() for k, v in selections.items()}))
        state["keyframes"] = selections
        return _keyframe_details(selections)

    def keyframes_load(path: Path) -> dict[str, Any]:
        data = json.loads((path / "keyframes.json").read_text())
        state["keyframes"] = {int(k): KeyframeSelection.from_dict(v) for k, v in data.items()}
        return _keyframe_details(state["keyframes"])

    runner.run(
        "keyframes", cfg.keyframes.model_dump(mode="json"), ["association"], keyframes_compute, keyframes_load
    )
    selections: dict[int, KeyframeSelection] = state["keyframes"]
    keyframe_room = {int(f): room for room, sel in selections.items() for f in sel.frames}
    keyframes = sorted(keyframe_room)

    # -- objects -------------------------------------------------------------------------------------------
    def objects_compute(tmp: Path) -> dict[str, Any]:
        from scenerag.build.segmentation import make_segmenter

        seg = segmenter or make_segmenter(cfg.segmentation, sequence, reconstruction=recon)
        objs, stats = build_objects(sequence, keyframes, seg, room_map, keyframe_room, cfg.objects, report)
        save_objects(tmp, objs)
        state["objects"] = objs
        seg_stats = getattr(seg, "stats", None)
        extra = {"map": seg_stats} if isinstance(seg_stats, dict) else {}
        return {"segmenter": getattr(seg, "name", type(seg).__name__), **stats, **extra}

    def objects_load(path: Path) -> dict[str, Any]:
        state["objects"] = load_objects(path)
        return _object_details(state["objects"])

    seg_settings = {
        "segmentation": cfg.segmentation.model_dump(mode="json"),
        "objects": cfg.objects.model_dump(mode="json"),
        "custom_segmenter": getattr(segmenter, "name", None) if segmenter is not None else None,
    }
    runner.run(
        "objects",
        seg_settings,
        ["keyframes"],
        objects_compute,
        objects_load,
        extra_inputs={"sequence": seq_fp},
    )
    objects: dict[int, MapObject] = state["objects"]

    # -- visibility ----------------------------------------------------------------------------------------
    def visibility_compute(tmp: Path) -> dict[str, Any]:
        from scenerag.build.visibility import compute_visibility

        keyframe_floor = {f: rooms[r].floor for f, r in keyframe_room.items()}
        object_floor = {
            u: rooms[o.room].floor if 0 <= o.room < len(rooms) else -1 for u, o in objects.items()
        }
        observed: dict[int, set[int]] = {}
        for o in objects.values():
            for ob in o.observations:
                observed.setdefault(ob.frame, set()).add(o.uid)
        vis = compute_visibility(
            sequence, keyframes, objects, keyframe_floor, object_floor, cfg.visibility, report, observed
        )
        (tmp / "visibility.json").write_text(
            json.dumps({str(f): {str(u): v for u, v in d.items()} for f, d in vis.items()})
        )
        state["visibility"] = vis
        return {"sees_edges": sum(len(v) for v in vis.values())}

    def visibility_load(path: Path) -> dict[str, Any]:
        data = json.loads((path / "visibility.json").read_text())
        state["visibility"] = {int(f): {int(u): float(v) for u, v in d.items()} for f, d in data.items()}
        return {"sees_edges": sum(len(v) for v in state["visibility"].values())}

    runner.run(
        "visibility", cfg.visibility.model_dump(mode="json"), ["objects"], visibility_compute, visibility_load
    )
    visibility: dict[int, dict[int, float]] = state["visibility"]

    # -- descriptions --------------------------------------------------------------------------------------
    desc_cfg = cfg.description
    describer_settings = {
        "describer": desc_cfg.describer,
        "vlm_model": desc_cfg.vlm_model,
        "vlm_base_url": desc_cfg.vlm_base_url,
        "max_chars": desc_cfg.max_description_chars,
        "max_tokens": desc_cfg.max_tokens,
        "custom": getattr(describer, "name", None) if describer is not None else None,
    }

    def descriptions_compute(tmp: Path) -> dict[str, Any]:
        from scenerag.build.assemble import object_facts
        from scenerag.build.describe import KeyframeView, TemplateDescriber, VlmDescriber

        if describer is not None:
            desc = describer
        elif desc_cfg.describer == "vlm":
            from scenerag.build.vision_endpoint import VisionEndpoint

            endpoint = VisionEndpoint(desc_cfg.vlm_model, base_url=desc_cfg.vlm_base_url)
            desc = VlmDescriber(endpoint, max_tokens=desc_cfg.max_tokens)
        else:
            desc = TemplateDescriber(desc_cfg.max_description_chars)
        facts = {u: object_facts(o) for u, o in objects.items() if len(o.points)}
        texts: dict[int, str] = {}
        report("descriptions", 0, len(keyframes))
        for n, f in enumerate(keyframes):
            room = keyframe_room[f]
            view = KeyframeView(
                f, poses[f], sequence.intrinsics, room, rooms[room].floor, sorted(visibility.get(f, {}))
            )
            image = sequence.rgb(f) if getattr(desc, "needs_image", True) else None
            texts[f] = desc.describe(view, facts, image)
            report("descriptions", n + 1, len(keyframes))
        (tmp / "descriptions.json").write_text(json.dumps({str(k): v for k, v in texts.items()}))
        state["descriptions"] = texts
        details: dict[str, Any] = {
            "describer": getattr(desc, "name", type(desc).__name__),
            "keyframes": len(texts),
        }
        usage = getattr(getattr(desc, "endpoint", None), "usage", None)
        if usage is not None:
            details["vlm_tokens"] = int(usage.total_tokens)
        return details

    def descriptions_load(path: Path) -> dict[str, Any]:
        data = json.loads((path / "descriptions.json").read_text())
        state["descriptions"] = {int(k): str(v) for k, v in data.items()}
        return {"keyframes": len(state["descriptions"])}

    runner.run("descriptions", describer_settings, ["visibility"], descriptions_compute, descriptions_load)
    descriptions: dict[int, str] = state["descriptions"]

    # -- summaries -----------------------------------------------------------------------------------------
    summarizer_settings = {
        "summarizer": desc_cfg.summarizer,
        "llm": desc_cfg.llm if desc_cfg.summarizer == "llm" else None,
        "llm_options": desc_cfg.llm_options if desc_cfg.summarizer == "llm" else None,
        "max_descriptions": desc_cfg.max_descriptions_per_room,
        "summary_input_chars": desc_cfg.summary_input_chars,
        "max_tokens": desc_cfg.max_tokens,
        "custom": getattr(chat_model, "name", None) if chat_model is not None else None,
    }

    def summaries_compute(tmp: Path) -> dict[str, Any]:
        summaries = _summarize(
            cfg, chat_model, floors, rooms, objects, selections, visibility, descriptions, report
        )
        (tmp / "summaries.json").write_text(json.dumps(summaries))
        state["summaries"] = summaries
        return {
            "summarizer": summaries["summarizer"],
            "llm_tokens": summaries["llm_tokens"],
            "fallbacks": summaries["fallbacks"],
        }

    def summaries_load(path: Path) -> dict[str, Any]:
        state["summaries"] = json.loads((path / "summaries.json").read_text())
        return {
            "summarizer": state["summaries"]["summarizer"],
            "llm_tokens": state["summaries"]["llm_tokens"],
        }

    runner.run("summaries", summarizer_settings, ["descriptions"], summaries_compute, summaries_load)
    summaries: dict[str, Any] = state["summaries"]

    # -- graph ---------------------------------------------------------------------------------------------
    def graph_compute(tmp: Path) -> dict[str, Any]:
        from scenerag.build.assemble import GraphInputs, assemble_graph
        from scenerag.graph.io import write_scene_graph

        report("graph", 0, 1)
        inputs = GraphInputs(
            floors=floors,
            rooms=rooms,
            objects=objects,
            keyframes=keyframe_room,
            poses={f: poses[f] for f in keyframes},
            visibility=visibility,
            keyframe_descriptions=descriptions,
            room_types={int(k): v for k, v in summaries["room_types"].items()},
            room_summaries={int(k): v for k, v in summaries["rooms"].items()},
            floor_summaries={int(k): v for k, v in summaries["floors"].items()},
            building_summary=summaries["building"],
            room_transitions=_room_transitions(assoc),
            metadata={
                "sequence": str(Path(sequence_path).resolve()),
                "config": cfg.model_dump(mode="json", exclude={"store"}),
            },
        )
        graph = assemble_graph(inputs)
        write_scene_graph(graph, tmp / GRAPH_FILE)
        state["graph"] = graph
        report("graph", 1, 1)
        return {"nodes": graph.num_nodes, "edges": graph.num_edges}

    def graph_load(path: Path) -> dict[str, Any]:
        from scenerag.graph.io import read_scene_graph

        state["graph"] = read_scene_graph(path / GRAPH_FILE)
        return {"nodes": state["graph"].num_nodes, "edges": state["graph"].num_edges}

    runner.run("graph", {}, ["summaries", "association"], graph_compute, graph_load)
    graph: SceneGraph = state["graph"]
    graph_path = out / GRAPH_FILE
    graph_path.write_bytes((cache.path("graph") / GRAPH_FILE).read_bytes())

    store_target = None
    if cfg.store:
        start = time.perf_counter()
        report("store", 0, 1)
        from scenerag.build.assemble import load_into_store

        store = load_into_store(graph, cfg.store)
        store.close()
        store_target = cfg.store
        report("store", 1, 1)
        runner.reports.append(StageReport("store", time.perf_counter() - start, False, {"target": cfg.store}))

    labels = graph.label_counts()
    counts = {
        "frames": len(sequence),
        "floors": len(floors),
        "rooms": len(rooms),
        "keyframes": len(keyframes),
        "objects": int(labels.get("Object", 0)),
        "functional_elements": int(labels.get("FunctionalElement", 0)),
        "nodes": graph.num_nodes,
        "edges": graph.num_edges,
    }
    result = BuildReport(
        sequence=str(sequence_path),
        out_dir=str(out),
        stages=runner.reports,
        total_seconds=time.perf_counter() - t_start,
        peak_rss_mb=_peak_rss_mb(),
        load_average=(load_start, os.getloadavg()[0]),
        counts=counts,
        graph_path=str(graph_path),
        llm_tokens=int(summaries.get("llm_tokens", 0)),
        store=store_target,
    )
    (out / REPORT_FILE).write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n")
    result.artifacts = BuildArtifacts(
        sequence,
        recon,
        floors,
        rooms,
        plans,
        assoc,
        selections,
        objects,
        visibility,
        descriptions,
        summaries,
        graph,
    )
    return result


def _keyframe_details(selections: dict[int, KeyframeSelection]) -> dict[str, Any]:
    n_key = sum(len(s.frames) for s in selections.values())
    n_cand = sum(s.n_candidates for s in selections.values())
    return {"keyframes": n_key, "room_frames": n_cand, "ratio": round(n_key / n_cand, 4) if n_cand else 0.0}


def _object_details(objects: dict[int, MapObject]) -> dict[str, Any]:
    from scenerag.build.segmentation import KIND_FUNCTIONAL

    return {
        "objects": sum(o.kind != KIND_FUNCTIONAL for o in objects.values()),
        "functional_elements": sum(o.kind == KIND_FUNCTIONAL for o in objects.values()),
    }


def _summarize(
    cfg: BuildConfig,
    chat_model: Any | None,
    floors: list[FloorSegment],
    rooms: list[RoomSegment],
    objects: dict[int, MapObject],
    selections: dict[int, KeyframeSelection],
    visibility: dict[int, dict[int, float]],
    descriptions: dict[int, str],
    report: Progress,
) -> dict[str, Any]:
    """Room types and summaries, floor summaries and the building summary."""
    from scenerag.build.assemble import object_facts
    from scenerag.build.describe import LlmSummarizer, RoomContext, TemplateSummarizer, room_elongation

    desc_cfg = cfg.description
    if chat_model is not None or desc_cfg.summarizer == "llm":
        model = chat_model
        if model is None:
            from scenerag.llm import make_chat_model

            model = make_chat_model(desc_cfg.llm, **desc_cfg.llm_options)
        summarizer: Any = LlmSummarizer(
            model,
            max_tokens=desc_cfg.max_tokens,
            max_descriptions=desc_cfg.max_descriptions_per_room,
            max_chars=desc_cfg.summary_input_chars,
        )
    else:
        summarizer = TemplateSummarizer()
    fallback = TemplateSummarizer()
    fallbacks = 0

    def guarded(method: str, *args: Any) -> Any:
        """The summarizer's answer; the template's when the model's reply is unusable (small local models
        occasionally break the JSON format)."""
        nonlocal fallbacks
        try:
            return getattr(summarizer, method)(*args)
        except LLMError as exc:
            if exc.kind != "bad_response":
                raise
            fallbacks += 1
            return getattr(fallback, method)(*args)

    by_room: dict[int, list[Any]] = {}
    for o in objects.values():
        if len(o.points):
            by_room.setdefault(o.room, []).append(object_facts(o))
    room_types: dict[str, str] = {}
    room_texts: dict[str, str] = {}
    report("summaries", 0, len(rooms) + len(floors) + 1)
    done = 0
    for room in rooms:
        frames = selections[room.index].frames.tolist() if room.index in selections else []
        frames.sort(key=lambda f: -len(visibility.get(f, {})))
        ctx = RoomContext(
            room.index,
            room.floor,
            room.area,
            room_elongation(room.polygon),
            by_room.get(room.index, []),
            [descriptions[f] for f in frames if f in descriptions][: desc_cfg.max_descriptions_per_room],
        )
        summary = guarded("summarize_room", ctx)
        room_types[str(room.index)], room_texts[str(room.index)] = summary.room_type, summary.text
        done += 1
        report("summaries", done, len(rooms) + len(floors) + 1)
    floor_texts: dict[str, str] = {}
    for fl in floors:
        members = [(room_types[str(r.index)], room_texts[str(r.index)]) for r in rooms if r.floor == fl.index]
        floor_texts[str(fl.index)] = guarded("summarize_floor", fl.index, (fl.z_floor, fl.z_ceiling), members)
        done += 1
        report("summaries", done, len(rooms) + len(floors) + 1)
    building = guarded("summarize_building", [floor_texts[str(f.index)] for f in floors])
    report("summaries", done + 1, len(rooms) + len(floors) + 1)
    return {
        "summarizer": summarizer.name,
        "room_types": room_types,
        "rooms": room_texts,
        "floors": floor_texts,
        "building": building,
        "llm_tokens": int(summarizer.usage.total_tokens),
        "fallbacks": fallbacks,
    }


def load_build(out_dir: str | Path, sequence_path: str | Path | None = None) -> BuildArtifacts:
    """Artifacts of a finished build from its cache (``sequence_path`` defaults to the one recorded in the
    graph's metadata)."""
    from scenerag.graph.io import read_scene_graph

    cache = StageCache(out_dir)
    missing = [s for s in STAGES if cache.record(s) is None]
    if missing:
        raise BuildError(
            "load", f"{out_dir} has no finished stage(s) {', '.join(missing)}", hint="run the build"
        )
    graph = read_scene_graph(cache.path("graph") / GRAPH_FILE)
    seq_path = sequence_path or graph.metadata.get("sequence")
    if not seq_path:
        raise BuildError("load", "the sequence path is unknown", hint="pass sequence_path")
    sequence = open_sequence(seq_path)
    floors = [
        FloorSegment.from_dict(d) for d in json.loads((cache.path("floors") / "floors.json").read_text())
    ]
    rooms = [RoomSegment.from_dict(d) for d in json.loads((cache.path("rooms") / "rooms.json").read_text())]
    kf = json.loads((cache.path("keyframes") / "keyframes.json").read_text())
    vis = json.loads((cache.path("visibility") / "visibility.json").read_text())
    desc = json.loads((cache.path("descriptions") / "descriptions.json").read_text())
    return BuildArtifacts(
        sequence,
        Reconstruction.load(cache.path("scan") / "reconstruction.npz"),
        floors,
        rooms,
        load_plans(cache.path("rooms") / "plans.npz"),
        FrameAssociation.load(cache.path("association") / "association.npz"),
        {int(k): KeyframeSelection.from_dict(v) for k, v in kf.items()},
        load_objects(cache.path("objects")),
        {int(f): {int(u): float(v) for u, v in d.items()} for f, d in vis.items()},
        {int(k): str(v) for k, v in desc.items()},
        json.loads((cache.path("summaries") / "summaries.json").read_text()),
        graph,
    )


__all__ = [
    "GRAPH_FILE",
    "REPORT_FILE",
    "STAGES",
    "BuildArtifacts",
    "BuildReport",
    "StageReport",
    "load_build",
    "run_build",
]
