"""The KeySG build end to end (``scenerag.build.run_build``): graph structure, resumable cache, progress,
LLM summaries through ``ScriptedChatModel``, store loading, evaluation, config errors."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scenerag.build.config import BuildConfig
from scenerag.build.datasets import DatasetError
from scenerag.build.errors import BuildError
from scenerag.build.evaluate import evaluate_build
from scenerag.build.pipeline import STAGES, BuildReport, load_build, run_build
from scenerag.graph import ontology as ont
from scenerag.graph import read_scene_graph
from scenerag.llm import Message, ScriptedChatModel

pytest.importorskip("open3d")


@pytest.fixture(scope="module")
def built(
    seq_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[BuildReport, list[tuple[str, int, int]]]:
    calls: list[tuple[str, int, int]] = []
    out = tmp_path_factory.mktemp("build-out")
    report = run_build(seq_root, out, BuildConfig.offline(), progress=lambda s, d, t: calls.append((s, d, t)))
    return report, calls


def test_report_lists_every_stage(built: tuple[BuildReport, list[tuple[str, int, int]]]) -> None:
    report, _ = built
    assert [s.name for s in report.stages] == list(STAGES)
    assert not any(s.cached for s in report.stages)
    assert all(s.seconds >= 0 for s in report.stages)
    assert report.counts["floors"] == 2 and report.counts["rooms"] == 8
    assert 0 < report.counts["keyframes"] < report.counts["frames"] == 240
    assert report.counts["objects"] > 40 and report.counts["functional_elements"] > 20
    assert report.peak_rss_mb > 0 and report.total_seconds > 0
    saved = json.loads((Path(report.out_dir) / "build_report.json").read_text())
    assert saved["counts"] == report.counts
    assert [s["name"] for s in saved["stages"]] == list(STAGES)
    text = report.to_text()
    assert "keyframes" in text and "peak memory" in text


def test_progress_reports_each_stage(built: tuple[BuildReport, list[tuple[str, int, int]]]) -> None:
    _, calls = built
    stages = [s for s, _, _ in calls]
    assert set(STAGES) <= set(stages)
    for stage in STAGES:
        mine = [(d, t) for s, d, t in calls if s == stage]
        assert mine[-1][0] == mine[-1][1]  # every stage finishes
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(mine))
    scans = [(d, t) for s, d, t in calls if s == "scan"]
    assert scans[-1] == (240, 240)


def test_graph_is_a_keysg_hierarchy(built: tuple[BuildReport, list[tuple[str, int, int]]]) -> None:
    report, _ = built
    g = read_scene_graph(report.graph_path)
    counts = g.label_counts()
    assert counts[ont.BUILDING] == 1 and counts[ont.FLOOR] == 2 and counts[ont.ROOM] == 8
    assert counts[ont.KEYFRAME] == report.counts["keyframes"]
    assert g.node("B0").description and all(f.description for f in g.nodes(ont.FLOOR))
    for room in g.nodes(ont.ROOM):
        assert [p.label for p in g.parents(room.symbol)] == [ont.FLOOR]
        assert room.description and room.class_name != "room"
        assert len(room.attributes["polygon_xy"]) >= 6
    for obj in g.nodes(ont.OBJECT):
        parents = g.parents(obj.symbol)
        assert [p.label for p in parents] == [ont.ROOM], obj.symbol
        assert obj.attributes["n_views"] >= 1 and "best_view" in obj.attributes
        assert obj.description and obj.bbox_dim is not None
    for el in g.nodes(ont.FUNCTIONAL_ELEMENT):
        owners = g.parents(el.symbol, ont.HAS_ELEMENT) + g.parents(el.symbol, ont.CONTAINS)
        assert len(owners) == 1 and owners[0].label in (ont.OBJECT, ont.ROOM)
    assert any(g.parents(el.symbol, ont.HAS_ELEMENT) for el in g.nodes(ont.FUNCTIONAL_ELEMENT))
    sees = list(g.edges(ont.SEES))
    assert sees and all(g.node(e.source).label == ont.KEYFRAME for e in sees)
    assert all(0.0 <= e.attributes["visible_fraction"] <= 1.0 for e in sees)
    for kf in g.nodes(ont.KEYFRAME):
        assert [p.label for p in g.parents(kf.symbol)] == [ont.ROOM]
        q = kf.attributes["quaternion_xyzw"]
        assert len(q) == 4 and math.isclose(float(np.linalg.norm(q)), 1.0, abs_tol=1e-4)
        assert kf.symbol == f"K{kf.attributes['frame_index']}" and kf.description
    assert list(g.edges(ont.ROOM_CONNECTED))


def test_rebuild_reuses_the_cache_and_reruns_what_changed(
    seq_root: Path, built: tuple[BuildReport, list[tuple[str, int, int]]], tmp_path: Path
) -> None:
    first, _ = built
    out = tmp_path / "copy"
    shutil.copytree(first.out_dir, out)
    cfg = BuildConfig.offline()
    again = run_build(seq_root, out, cfg)
    assert all(s.cached for s in again.stages)
    assert again.counts == first.counts
    changed = run_build(seq_root, out, cfg.with_overrides({"visibility": {"theta": 0.2}}))
    cached = {s.name: s.cached for s in changed.stages}
    assert all(cached[s] for s in ("scan", "floors", "rooms", "association", "keyframes", "objects"))
    assert not any(cached[s] for s in ("visibility", "descriptions", "summaries", "graph"))
    assert changed.stage("visibility").details["sees_edges"] > first.stage("visibility").details["sees_edges"]
    loaded = load_build(out)
    assert len(loaded.rooms) == 8 and loaded.graph.num_nodes == changed.counts["nodes"]
    assert sorted(loaded.keyframe_rooms) == sorted(changed.artifacts.keyframe_rooms)
    assert loaded.visibility == changed.artifacts.visibility


def _scripted_replies(messages: list[Message]) -> dict[str, Any]:
    prompt = messages[-1].content
    if prompt.startswith("Room on floor"):
        return {"room_type": "Test Room", "summary": "A room summarised by the script."}
    if prompt.startswith("Floor"):
        return {"summary": "A floor summarised by the script."}
    return {"summary": "A building summarised by the script."}


def test_llm_summaries_and_store_loading(
    seq_root: Path, built: tuple[BuildReport, list[tuple[str, int, int]]], tmp_path: Path
) -> None:
    pytest.importorskip("arcadedb_embedded")
    first, _ = built
    out = tmp_path / "copy"
    shutil.copytree(first.out_dir, out)
    model = ScriptedChatModel([_scripted_replies] * 11)  # 8 rooms, 2 floors, 1 building
    store_dir = tmp_path / "db"
    cfg = BuildConfig().with_overrides({"store": str(store_dir)})
    report = run_build(seq_root, out, cfg, chat_model=model)
    cached = {s.name: s.cached for s in report.stages}
    assert cached["descriptions"] and not cached["summaries"] and not cached["graph"]
    assert model.remaining == 0 and report.llm_tokens > 0
    g = report.artifacts.graph
    assert all(r.class_name == "test_room" for r in g.nodes(ont.ROOM))
    assert g.node("B0").description == "A building summarised by the script."
    assert report.store == str(store_dir) and report.stages[-1].name == "store"
    from scenerag.store import open_store

    store = open_store(store_dir)
    try:
        seen = store.query("MATCH (k:Keyframe)-[:SEES]->(o) RETURN count(DISTINCT k) AS n").values("n")
        assert 0 < seen[0] <= report.counts["keyframes"]
        rooms = store.query("MATCH (:Floor)-[:CONTAINS]->(r:Room) RETURN count(r) AS n").values("n")
        assert rooms == [8]
    finally:
        store.close()


def test_evaluation_against_ground_truth(built: tuple[BuildReport, list[tuple[str, int, int]]]) -> None:
    report, _ = built
    ev = evaluate_build(report.artifacts, frame_step=2)
    assert ev.floors.all_correct
    assert ev.rooms.mean_iou >= 0.8 and ev.rooms.type_accuracy == 1.0
    assert ev.objects.recall["0.25"] >= 0.8 and ev.objects.precision["0.25"] >= 0.8
    assert ev.objects.label_accuracy == 1.0
    assert ev.semantics.miou > 0.6 and ev.semantics.fmiou > 0.6 and ev.semantics.macc > 0.6
    assert ev.functional.recall_at["R@5/0.1"] >= 0.6
    assert ev.functional.recall_at["R@1/0"] <= ev.functional.recall_at["R@5/0"]
    rows = {r.method: r for r in ev.ablation}
    hdb = rows["hdbscan (noise=novel)"]
    assert hdb.ratio < 1.0 and hdb.object_recall >= 0.9
    assert rows["all frames"].object_recall == 1.0 and rows["all frames"].ratio == 1.0
    assert rows["uniform (same budget)"].n_keyframes == hdb.n_keyframes
    assert math.isnan(rows["visual (CLIP)"].object_recall) and "unavailable" in rows["visual (CLIP)"].note
    assert "mean IoU" in ev.to_text() and ev.to_dict()["floors"]["all_correct"]


def test_bad_inputs_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        run_build(tmp_path / "missing", tmp_path / "out", BuildConfig.offline())
    bad = tmp_path / "cfg.json"
    bad.write_text(json.dumps({"keyframes": {"min_cluster_size": 1}}))
    with pytest.raises(BuildError, match=r"keyframes\.min_cluster_size"):
        BuildConfig.from_file(bad)
    bad.write_text(json.dumps({"rooms": {"no_such_field": 1}}))
    with pytest.raises(BuildError, match="no_such_field"):
        BuildConfig.from_file(bad)
    with pytest.raises(BuildError, match="not found"):
        BuildConfig.from_file(tmp_path / "nope.yaml")
    with pytest.raises(BuildError, match="max_depth"):
        BuildConfig().with_overrides({"reconstruction": {"min_depth": 5.0, "max_depth": 1.0}})
    good = tmp_path / "ok.yaml"
    good.write_text("description:\n  summarizer: template\nkeyframes:\n  noise: keep\n")
    cfg = BuildConfig.from_file(good)
    assert cfg.description.summarizer == "template" and cfg.keyframes.noise == "keep"
    assert cfg.stage_fingerprint("keyframes") != BuildConfig().stage_fingerprint("keyframes")
    with pytest.raises(BuildError, match="finished stage"):
        load_build(tmp_path / "empty")
