"""Segmentation, lifting, merging, best views, element linking and visibility (``scenerag.build``), with
the ground-truth oracle on a small rendered building and stand-ins for the model-backed adapters."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from scenerag.build.config import ObjectConfig, SegmentationConfig
from scenerag.build.datasets import CameraIntrinsics, RGBDFrame, open_sequence
from scenerag.build.errors import BuildError, MissingComponentError
from scenerag.build.evaluate import GroundTruth, evaluate_objects, label_voxels
from scenerag.build.objects import (
    MapObject,
    ObjectMap,
    Observation,
    assign_rooms,
    lift_mask,
    link_functional_elements,
    load_objects,
    save_objects,
    view_score,
)
from scenerag.build.segmentation import (
    GroundedSamSegmenter,
    Mask2D,
    OracleSegmenter,
    VisionEndpointSegmenter,
    box_to_mask,
    make_segmenter,
    normalize_label,
)
from scenerag.build.visibility import compute_visibility, visible_fraction
from scenerag.build.vision_endpoint import VisionEndpoint, image_data_url, parse_json_object
from scenerag.llm.base import LLMError, RetryPolicy

pytest.importorskip("open3d")


K = CameraIntrinsics(100.0, 100.0, 49.5, 39.5, 100, 80)


def _frame(depth: np.ndarray, rgb: np.ndarray | None = None, pose: np.ndarray | None = None) -> RGBDFrame:
    rgb = rgb if rgb is not None else np.full((*depth.shape, 3), 120, np.uint8)
    return RGBDFrame(0, rgb, depth.astype(np.float32), np.eye(4) if pose is None else pose, K)


# -- oracle -------------------------------------------------------------------------------------------------
def test_oracle_masks_follow_the_instance_image(seq_root: Path) -> None:
    seq = open_sequence(seq_root)
    table = seq.instance_table()
    inst = {d["id"]: d for d in table["instances"]}
    seg = OracleSegmenter(table, min_pixels=30, min_element_pixels=10)
    frame = seq[60]
    masks = seg.segment(frame)
    assert masks
    ids, counts = np.unique(frame.instance, return_counts=True)
    n_pixels = dict(zip(ids.tolist(), counts.tolist(), strict=True))
    for m in masks:
        iid = int(np.unique(frame.instance[m.mask])[0])
        d = inst[iid]
        assert (frame.instance[m.mask] == iid).all() and m.area == n_pixels[iid]
        assert m.label == d["class"] and m.attributes["color"] == d["color"]
        assert m.kind == ("functional" if d["kind"] == "functional" else "object")
        assert d["kind"] != "structure" or d["class"] in ("door", "stairs")
        assert m.area >= (10 if m.kind == "functional" else 30)
    with pytest.raises(BuildError, match="instance image"):
        seg.segment(_frame(np.ones((80, 100))))
    no_gt = SimpleNamespace(has_ground_truth=False, root=Path("somewhere"))
    with pytest.raises(BuildError, match="no ground-truth"):
        OracleSegmenter.from_sequence(no_gt)  # type: ignore[arg-type]


def test_box_to_mask_takes_the_depth_continuous_object() -> None:
    depth = np.full((80, 100), 3.0)
    depth[20:50, 30:60] = 1.5  # the object, nearer than the wall behind it
    mask = box_to_mask(depth, (25, 15, 65, 55))
    assert mask[20:50, 30:60].mean() > 0.9
    assert mask.sum() < 1.2 * 30 * 30
    assert not mask[0:10].any()
    assert not box_to_mask(depth, (50, 50, 40, 40)).any()  # empty box


def test_lifting_drops_far_strays() -> None:
    depth = np.full((80, 100), 2.0)
    depth[70:72, 90:92] = 6.0  # a few pixels bleeding onto the far wall
    mask = np.zeros((80, 100), bool)
    mask[10:40, 10:40] = True
    mask[70:72, 90:92] = True
    pts, cols = lift_mask(_frame(depth), mask, ObjectConfig())
    assert len(pts) == len(cols) > 50
    assert np.abs(pts[:, 2] - 2.0).max() < 0.05  # camera looks along +z from the origin


def test_view_score_prefers_masks_away_from_the_border() -> None:
    centre = np.zeros((80, 100), bool)
    centre[30:50, 40:60] = True
    edge = np.zeros((80, 100), bool)
    edge[0:20, 0:20] = True
    shape = (80, 100)
    assert view_score(Mask2D(centre, "a"), shape, 0.1) > view_score(Mask2D(edge, "a"), shape, 0.1)
    assert view_score(Mask2D(edge, "a"), shape, 0.0) == pytest.approx(400.0)


# -- merging on the rendered building -------------------------------------------------------------------------
def test_merging_gives_one_object_per_instance(seq_root: Path, tmp_path: Path) -> None:
    seq = open_sequence(seq_root)
    seg = OracleSegmenter.from_sequence(seq)
    omap = ObjectMap(ObjectConfig())
    frames = list(range(0, 240, 4))
    for f in frames:
        omap.integrate(seq[f], seg.segment(seq[f]))
    omap.post_merge()
    objects = omap.objects
    assert omap.n_segments > len(objects)  # views were merged
    gt = GroundTruth.from_sequence(seq)
    labelled = label_voxels(seq, 0.05, frame_step=4)
    result = evaluate_objects(objects, gt, labelled)
    assert result.over_segmented <= 2
    assert result.recall["0.25"] >= 0.85 and result.precision["0.25"] >= 0.85
    assert result.label_accuracy == 1.0
    for obj in objects.values():
        assert obj.best_view is not None and obj.best_view.frame in frames
        assert obj.best_view.score == max(o.score for o in obj.observations)
        assert len(obj.points) <= ObjectConfig().max_object_points
    save_objects(tmp_path, objects)
    back = load_objects(tmp_path)
    assert sorted(back) == sorted(objects)
    some = next(iter(objects))
    np.testing.assert_array_equal(back[some].points, objects[some].points)
    assert back[some].labels == objects[some].labels
    assert back[some].observations == objects[some].observations


def _box_object(
    uid: int, lo: tuple[float, float, float], hi: tuple[float, float, float], kind: str, label: str
) -> MapObject:
    rng = np.random.default_rng(uid)
    pts = rng.uniform(lo, hi, size=(400, 3)).astype(np.float32)
    return MapObject(uid, kind, pts, np.full((400, 3), 128, np.uint8), Counter({label: 1}))


def test_functional_elements_link_to_the_nearest_object() -> None:
    cabinet = _box_object(0, (0.0, 0.0, 0.0), (0.8, 0.5, 0.9), "object", "cabinet")
    chair = _box_object(1, (2.0, 0.0, 0.0), (2.5, 0.5, 0.9), "object", "chair")
    handle = _box_object(2, (0.3, 0.5, 0.6), (0.5, 0.53, 0.62), "functional", "handle")
    switch = _box_object(3, (5.0, 2.0, 1.1), (5.08, 2.02, 1.18), "functional", "switch")
    objects = {o.uid: o for o in (cabinet, chair, handle, switch)}
    link_functional_elements(objects, 0.06)
    assert handle.parent == 0 and switch.parent is None
    assert cabinet.parent is None


def test_rooms_come_from_the_points_or_the_first_view() -> None:
    inside = _box_object(0, (1.0, 1.0, 0.0), (2.0, 2.0, 1.0), "object", "table")
    outside = _box_object(1, (50.0, 50.0, 0.0), (51.0, 51.0, 1.0), "object", "table")
    outside.observations.append(Observation(7, 10, (0, 0, 1, 1), 1.0))

    class _Map:
        def room_of_points(self, pts: np.ndarray) -> np.ndarray:
            return np.where(pts[:, 0] < 10, 3, -1)

    assign_rooms({0: inside, 1: outside}, _Map(), {7: 5})  # type: ignore[arg-type]
    assert (inside.room, outside.room) == (3, 5)


# -- visibility ---------------------------------------------------------------------------------------------
def test_visible_fraction_projects_and_tests_depth() -> None:
    grid = np.stack(np.meshgrid(np.linspace(-0.3, 0.3, 10), np.linspace(-0.2, 0.2, 10)), -1).reshape(-1, 2)
    pts = np.column_stack([grid, np.full(len(grid), 2.0)])
    depth = np.full((80, 100), 2.0)
    assert visible_fraction(pts, np.eye(4), depth, K, 0.1) == pytest.approx(1.0)
    assert visible_fraction(pts, np.eye(4), np.full((80, 100), 1.0), K, 0.1) == 0.0  # occluded
    assert (
        visible_fraction(pts - np.array([0.0, 0.0, 5.0]), np.eye(4), depth, K, 0.1) == 0.0
    )  # behind the camera
    half = depth.copy()
    half[:, :50] = 0.5
    assert 0.3 < visible_fraction(pts, np.eye(4), half, K, 0.1) < 0.7


def test_visibility_keeps_objects_above_theta(seq_root: Path) -> None:
    seq = open_sequence(seq_root)
    seg = OracleSegmenter.from_sequence(seq)
    omap = ObjectMap()
    for f in (40, 44, 48):
        omap.integrate(seq[f], seg.segment(seq[f]))
    keyframes = [40, 44, 48, 200]
    vis = compute_visibility(seq, keyframes, omap.objects, {}, {})
    assert set(vis) == set(keyframes)
    for fractions in vis.values():
        assert all(v >= 0.5 for v in fractions.values())
    seen_40 = {o.uid for o in omap.objects.values() if any(ob.frame == 40 for ob in o.observations)}
    assert len(set(vis[40]) & seen_40) >= 0.5 * len(seen_40)
    forced = compute_visibility(seq, [200], omap.objects, {}, {}, observed={200: set(omap.objects)})
    assert set(forced[200]) == set(omap.objects)


# -- model-backed adapters with stand-ins -----------------------------------------------------------------------
class _FakeCompletions:
    def __init__(self, replies: list[Any]) -> None:
        self.replies = replies
        self.calls: list[dict[str, Any]] = []

    def create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return SimpleNamespace(
            choices=[SimpleNamespace(message=SimpleNamespace(content=reply))],
            usage=SimpleNamespace(prompt_tokens=50, completion_tokens=20),
        )


def _fake_client(replies: list[Any]) -> Any:
    completions = _FakeCompletions(replies)
    return SimpleNamespace(chat=SimpleNamespace(completions=completions)), completions


def test_vision_endpoint_segmenter_turns_boxes_into_masks() -> None:
    reply = (
        '```json\n{"objects": [{"label": "Coffee_Table", "box": [30, 20, 59, 49], "color": "Oak"},'
        ' {"label": "handle", "box": [0.1, 0.1, 0.15, 0.2]}, {"label": "bad", "box": "nope"}]}\n```'
    )
    client, calls = _fake_client([reply])
    seg = VisionEndpointSegmenter("qwen2.5vl", base_url="http://127.0.0.1:9/v1", client=client, min_pixels=20)
    depth = np.full((80, 100), 3.0)
    depth[20:50, 30:60] = 1.5
    depth[8:16, 10:15] = 1.0
    masks = seg.segment(_frame(depth))
    assert [m.label for m in masks] == ["coffee table", "handle"]
    assert masks[0].kind == "object" and masks[1].kind == "functional"
    assert masks[0].attributes["color"] == "oak"
    assert masks[0].mask[20:50, 30:60].mean() > 0.9
    sent = calls.calls[0]
    assert sent["model"] == "qwen2.5vl" and sent["response_format"] == {"type": "json_object"}
    content = sent["messages"][-1]["content"]
    assert content[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")


def test_vision_endpoint_errors_are_llm_errors() -> None:
    class NotFound(Exception):
        status_code = 404
        message = "model 'x' not found"

    class APIConnectionError(Exception):
        message = "connection refused"

    client, _ = _fake_client([NotFound(), APIConnectionError()])
    ep = VisionEndpoint(
        "x", base_url="http://127.0.0.1:9/v1", client=client, retry=RetryPolicy(max_retries=0)
    )
    with pytest.raises(LLMError) as info:
        ep.ask("hi", [np.zeros((8, 8, 3), np.uint8)])
    assert info.value.kind == "model_not_found"
    with pytest.raises(LLMError) as info:
        ep.ask("hi", [])
    assert info.value.kind == "unreachable"
    with pytest.raises(LLMError, match="no vision model"):
        VisionEndpoint("")
    with pytest.raises(LLMError, match="JSON object"):
        parse_json_object("no json here", "test")
    assert parse_json_object('noise {"a": 1} tail', "test") == {"a": 1}
    assert image_data_url(np.zeros((2000, 1000, 3), np.uint8)).startswith("data:image/jpeg;base64,")


def test_missing_weights_are_reported(tmp_path: Path) -> None:
    with pytest.raises(MissingComponentError, match="Grounding-DINO"):
        GroundedSamSegmenter(str(tmp_path / "nope"), str(tmp_path / "nope2"), labels=["chair"])
    with pytest.raises(BuildError, match="vocabulary"):
        GroundedSamSegmenter(str(tmp_path), str(tmp_path), labels=[])
    with pytest.raises(BuildError, match="detector_path"):
        make_segmenter(SegmentationConfig(segmenter="grounded_sam", options={"bogus": 1}))
    with pytest.raises(BuildError, match="needs the sequence"):
        make_segmenter(SegmentationConfig())
    assert normalize_label("  Coffee_Table ") == "coffee table"
