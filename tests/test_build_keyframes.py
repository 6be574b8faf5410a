"""Keyframe selection (``scenerag.build.keyframes``): pose features, the HDBSCAN selector and its noise
policies, the ablation baselines and the paper's metrics, on synthetic poses and voxel sets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scenerag.build.config import KeyframeConfig
from scenerag.build.errors import BuildError, MissingComponentError
from scenerag.build.keyframes import (
    ClipImageEncoder,
    ColorHistogramEncoder,
    keyframe_metrics,
    knee_eps,
    medoid,
    pose_features,
    select_covis_greedy,
    select_covis_local,
    select_dbscan,
    select_hdbscan,
    select_random,
    select_room_keyframes,
    select_uniform,
    select_visual,
)
from scenerag.build.reconstruct import Reconstruction

pytest.importorskip("sklearn")


def _pose(x: float, y: float, yaw_deg: float) -> np.ndarray:
    """Camera-to-world pose (OpenCV axes) at (x, y, 1.4) looking along ``yaw`` in the xy plane."""
    yaw = math.radians(yaw_deg)
    fwd = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    right = np.array([math.sin(yaw), -math.cos(yaw), 0.0])
    down = np.cross(fwd, right)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = right, down, fwd, (x, y, 1.4)
    return pose


def _clustered_poses(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three tight groups of 20 poses (different places and headings) and 3 isolated poses."""
    rng = np.random.default_rng(seed)
    poses, truth = [], []
    for k, (x, y, yaw) in enumerate([(0.0, 0.0, 0.0), (4.0, 0.0, 90.0), (0.0, 4.0, 200.0)]):
        for _ in range(20):
            poses.append(_pose(x + rng.normal(0, 0.03), y + rng.normal(0, 0.03), yaw + rng.normal(0, 2)))
            truth.append(k)
    for x, y, yaw in [(15.0, 15.0, 45.0), (-15.0, 10.0, 300.0), (10.0, -15.0, 135.0)]:
        poses.append(_pose(x, y, yaw))
        truth.append(-1)
    return np.array(poses), np.array(truth)


def test_pose_features_are_standardised_and_weighted() -> None:
    poses, _ = _clustered_poses()
    feats = pose_features(poses, rotation_weight=1.5)
    assert feats.shape == (len(poses), 7)
    np.testing.assert_allclose(feats.mean(axis=0), 0.0, atol=1e-9)
    std = feats.std(axis=0)
    np.testing.assert_allclose(std[:2], 1.0, atol=1e-9)  # x, y vary; z (camera height) is constant
    assert std[2] == 0.0
    varying = std[3:] > 0
    assert varying.sum() >= 2
    np.testing.assert_allclose(std[3:][varying], 1.5, atol=1e-9)
    unweighted = pose_features(poses, rotation_weight=1.0)
    np.testing.assert_allclose(feats[:, 3:], 1.5 * unweighted[:, 3:], atol=1e-9)


def test_rotation_weight_zero_ignores_heading() -> None:
    a = np.array([_pose(0.0, 0.0, 0.0), _pose(1.0, 0.0, 90.0), _pose(2.0, 1.0, 200.0)])
    b = np.array([_pose(0.0, 0.0, 30.0), _pose(1.0, 0.0, 10.0), _pose(2.0, 1.0, 300.0)])
    np.testing.assert_allclose(pose_features(a, 0.0), pose_features(b, 0.0), atol=1e-9)
    assert not np.allclose(pose_features(a, 1.5), pose_features(b, 1.5))


def test_medoid_is_the_central_member() -> None:
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [10.0, 0.0]])
    assert medoid(pts) in (1, 2)
    assert medoid(pts[:1]) == 0


def test_hdbscan_picks_one_medoid_per_cluster_and_handles_noise() -> None:
    poses, truth = _clustered_poses()
    frames = np.arange(100, 100 + len(poses))
    drop = select_hdbscan(frames, poses, min_cluster_size=15, noise="drop")
    assert drop.n_clusters == 3
    clusters = {int(truth[f - 100]) for f in drop.frames}
    assert clusters == {0, 1, 2}  # one medoid in each group, none among the isolated poses
    keep = select_hdbscan(frames, poses, min_cluster_size=15, noise="keep")
    assert set(drop.frames) <= set(keep.frames)
    assert {int(f) for f in frames[truth < 0]} <= set(keep.frames.tolist())
    assert keep.n_noise >= 3
    nearest = select_hdbscan(frames, poses, min_cluster_size=15, noise="nearest")
    assert len(nearest.frames) == 3


def test_novel_noise_policy_keeps_only_noise_that_sees_new_geometry() -> None:
    poses, truth = _clustered_poses()
    frames = np.arange(len(poses))
    # Clustered frames see voxels 0..99; two isolated frames see new voxels, one sees old ones only.
    sets = [np.arange(0, 100) for _ in range(len(poses))]
    noise_idx = np.flatnonzero(truth < 0)
    sets[noise_idx[0]] = np.arange(500, 560)
    sets[noise_idx[1]] = np.arange(600, 640)
    sets[noise_idx[2]] = np.arange(10, 40)
    sel = select_hdbscan(
        frames, poses, min_cluster_size=15, noise="novel", frame_voxels=sets, noise_novelty=0.3
    )
    assert {int(noise_idx[0]), int(noise_idx[1])} <= set(sel.frames.tolist())
    assert int(noise_idx[2]) not in sel.frames
    with pytest.raises(BuildError, match="voxel sets"):
        select_hdbscan(frames, poses, noise="novel")


def test_small_room_is_all_noise_and_falls_back_to_its_medoid() -> None:
    poses = np.array([_pose(0.1 * i, 0.0, 0.0) for i in range(5)])
    sel = select_hdbscan(np.arange(5), poses, min_cluster_size=15, noise="drop")
    assert sel.frames.tolist() == [2]
    assert select_hdbscan(np.arange(5), poses, min_cluster_size=15, noise="keep").frames.tolist() == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert len(select_hdbscan(np.zeros(0, int), np.zeros((0, 4, 4))).frames) == 0


def test_uniform_and_random_budgets() -> None:
    frames = np.arange(10, 110)
    assert select_uniform(frames, step=10).frames.tolist() == list(range(10, 110, 10))
    budget = select_uniform(frames, budget=7).frames
    assert len(budget) == 7 and budget[0] == 10 and budget[-1] == 109
    r1 = select_random(frames, budget=12, seed=3).frames
    r2 = select_random(frames, budget=12, seed=3).frames
    assert len(r1) == 12 and np.array_equal(r1, r2) and np.all(np.diff(r1) > 0)
    assert len(select_random(frames, budget=500).frames) == 100


def test_greedy_covisibility_covers_the_target() -> None:
    # 12 frames each seeing a window of 30 voxels out of 0..119 (overlapping windows).
    sets = [np.arange(10 * i, 10 * i + 30) for i in range(10)] + [np.arange(0, 10), np.arange(5, 15)]
    frames = np.arange(len(sets))
    sel = select_covis_greedy(frames, sets, target=1.0)
    covered = np.unique(np.concatenate([sets[i] for i in sel.frames]))
    assert len(covered) == 120
    assert len(sel.frames) <= 5  # 4 disjoint windows would do; greedy stays close
    local = select_covis_local(frames, sets, window=4, target=1.0)
    for start in range(0, len(sets), 4):
        window = np.unique(np.concatenate(sets[start : start + 4]))
        chosen = [i for i in local.frames if start <= i < start + 4]
        assert set(np.unique(np.concatenate([sets[i] for i in chosen]))) == set(window)


def test_dbscan_baseline_uses_an_adaptive_eps() -> None:
    poses, truth = _clustered_poses()
    feats = pose_features(poses)
    eps = knee_eps(feats, 5)
    assert 0 < eps < np.linalg.norm(feats[0] - feats[25])
    sel = select_dbscan(np.arange(len(poses)), poses, min_samples=5)
    assert sel.n_clusters == 3
    assert {int(truth[f]) for f in sel.frames} >= {0, 1, 2}


def _tiny_reconstruction() -> Reconstruction:
    """Four frames over ten voxels spaced 1 m apart on a line."""
    points = np.column_stack([np.arange(10.0), np.zeros(10), np.zeros(10)]).astype(np.float32)
    views = [np.array([0, 1, 2]), np.array([2, 3, 4, 5]), np.array([6, 7]), np.array([8, 9])]
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in views])])
    return Reconstruction(
        0.05,
        np.arange(10, dtype=np.int64),
        points,
        np.zeros((10, 3), np.uint8),
        np.ones(10, np.int32),
        np.array([0, 1, 2, 3]),
        np.zeros((4, 3)),
        offsets,
        np.concatenate(views).astype(np.int32),
    )


def test_metrics_object_recall_coverage_and_ratio() -> None:
    recon = _tiny_reconstruction()
    visible = {0: {1, 2}, 1: {2, 3}, 2: set(), 3: {4}}
    m = keyframe_metrics(np.array([0, 3]), np.arange(4), visible, recon, tau=0.05)
    assert (m.objects_seen, m.objects_recalled) == (4, 3)
    assert m.object_recall == pytest.approx(0.75)
    assert m.coverage == pytest.approx(5 / 10)  # voxels 0, 1, 2, 8, 9
    assert m.ratio == pytest.approx(0.5)
    # A looser tau reaches the neighbouring voxels (1 m apart).
    assert keyframe_metrics(
        np.array([0, 3]), np.arange(4), visible, recon, tau=1.0
    ).coverage == pytest.approx(0.7)
    total = m + m
    assert total.object_recall == pytest.approx(0.75) and total.n_frames == 8


def test_select_room_keyframes_dispatches_every_method() -> None:
    recon = _tiny_reconstruction()
    frames = np.arange(4)
    poses = np.array([_pose(float(i), 0.0, 0.0) for i in range(4)])
    for method in ("hdbscan", "uniform", "random", "dbscan", "covis_local", "covis_greedy", "all"):
        sel = select_room_keyframes(frames, poses, KeyframeConfig(method=method), recon=recon)
        assert len(sel.frames) >= 1 and set(sel.frames) <= set(frames.tolist())
    with pytest.raises(BuildError, match="voxels"):
        select_room_keyframes(frames, poses, KeyframeConfig(method="covis_greedy"))
    with pytest.raises(MissingComponentError):
        select_room_keyframes(frames, poses, KeyframeConfig(method="visual"))


def test_visual_baseline_clusters_image_embeddings() -> None:
    rng = np.random.default_rng(0)
    red = np.zeros((60, 80, 3), np.uint8)
    red[..., 0] = 200
    blue = np.zeros((60, 80, 3), np.uint8)
    blue[..., 2] = 200
    images = [
        np.clip(im.astype(int) + rng.integers(-10, 10, im.shape), 0, 255).astype(np.uint8)
        for im in [red] * 20 + [blue] * 20
    ]
    emb = ColorHistogramEncoder().encode(images)
    assert emb.shape[0] == 40
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-9)
    sel = select_visual(np.arange(40), emb, min_cluster_size=10)
    assert sel.n_clusters == 2
    assert any(f < 20 for f in sel.frames) and any(f >= 20 for f in sel.frames)


def test_clip_encoder_without_weights_says_what_to_provide(tmp_path) -> None:
    with pytest.raises(MissingComponentError, match="CLIP model not found"):
        ClipImageEncoder(str(tmp_path / "no-such-model"))
