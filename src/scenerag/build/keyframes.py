"""Keyframe selection per room (KeySG III-B), the ablation baselines and the paper's three metrics.

Selector (the paper's): HDBSCAN over the room's camera poses as standardised 7-D features
``(t, w·q)`` (translation, unit quaternion with ``q_w >= 0`` scaled by ``w = 1.5``), one medoid per
cluster; poses HDBSCAN leaves as noise are unique viewpoints: ``noise="keep"`` keeps all of them,
``noise="novel"`` (default) keeps those that still see enough geometry the other keyframes miss.
Baselines: ``uniform`` (every n-th frame or a budget), ``random``, ``dbscan`` (DBSCAN with ``eps`` at the
knee of the k-distance curve of the same features), ``covis_local`` (greedy set cover of the voxels seen
inside sliding time windows), ``covis_greedy`` (global greedy maximum coverage) and ``visual``
(HDBSCAN over image embeddings from an :class:`ImageEncoder`). Metrics: object recall (objects seen in
any room frame that a keyframe also sees), geometric coverage (room points within ``tau`` of a keyframe
point) and sampling ratio (keyframes / room frames).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scenerag.build.config import KeyframeConfig, NoisePolicy
from scenerag.build.errors import BuildError, MissingComponentError
from scenerag.build.reconstruct import Reconstruction


@dataclass
class KeyframeSelection:
    """Keyframes (sequence indices, ascending) chosen among ``n_candidates`` frames of one room."""

    method: str
    frames: np.ndarray
    n_candidates: int
    n_clusters: int = 0
    n_noise: int = 0
    seconds: float = 0.0

    @property
    def ratio(self) -> float:
        return len(self.frames) / self.n_candidates if self.n_candidates else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "frames": [int(f) for f in self.frames],
            "n_candidates": self.n_candidates,
            "n_clusters": self.n_clusters,
            "n_noise": self.n_noise,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KeyframeSelection:
        return cls(
            str(data["method"]),
            np.asarray(data["frames"], dtype=np.int64),
            int(data["n_candidates"]),
            int(data.get("n_clusters", 0)),
            int(data.get("n_noise", 0)),
            float(data.get("seconds", 0.0)),
        )


# -- pose features ------------------------------------------------------------------------------------
def pose_features(poses: np.ndarray, rotation_weight: float = 1.5) -> np.ndarray:
    """Standardised 7-D features ``(t, w·q)`` of camera-to-world poses (N, 4, 4): each dimension is
    z-scored over the given poses, then the four quaternion dimensions are scaled by ``rotation_weight``."""
    from scipy.spatial.transform import Rotation

    poses = np.asarray(poses, dtype=np.float64).reshape(-1, 4, 4)
    quat = Rotation.from_matrix(poses[:, :3, :3]).as_quat()  # x, y, z, w
    quat[quat[:, 3] < 0] *= -1.0
    feats = np.column_stack([poses[:, :3, 3], quat])
    std = feats.std(axis=0)
    feats = (feats - feats.mean(axis=0)) / np.where(std > 1e-9, std, 1.0)
    feats[:, 3:] *= rotation_weight
    return feats


def medoid(features: np.ndarray) -> int:
    """Index (into ``features``) of the member with the smallest summed distance to the others."""
    from scipy.spatial.distance import cdist

    if len(features) == 1:
        return 0
    return int(np.argmin(cdist(features, features).sum(axis=1)))


def _novel_frames(
    candidates: np.ndarray, chosen: list[int], sets: Sequence[np.ndarray], novelty: float
) -> list[int]:
    """Greedily add ``candidates`` (most novel first) while one still sees ``novelty`` of its voxels unseen
    by the frames chosen so far. Indices are positions in ``sets``."""
    pool = [int(c) for c in candidates if len(sets[int(c)])]
    if not pool:
        return []
    universe = np.unique(np.concatenate([sets[i] for i in [*chosen, *pool]]))
    covered = np.zeros(len(universe), bool)
    for i in chosen:
        covered[np.searchsorted(universe, sets[i])] = True
    local = {i: np.searchsorted(universe, sets[i]) for i in pool}
    bounds = dict.fromkeys(pool, 1.0)  # upper bounds of each novelty (lazy greedy: novelty only falls)
    added: list[int] = []
    while bounds:
        while True:
            best = max(bounds, key=bounds.__getitem__)
            gain = float((~covered[local[best]]).mean())
            bounds[best] = gain
            if gain >= max(bounds.values()):
                break
        if gain < novelty:
            break
        covered[local[best]] = True
        added.append(best)
        del bounds[best]
    return added


def _clusters_to_keyframes(
    frames: np.ndarray,
    features: np.ndarray,
    labels: np.ndarray,
    noise: NoisePolicy,
    sets: Sequence[np.ndarray] | None = None,
    novelty: float = 0.3,
) -> tuple[list[int], int, int]:
    labels = labels.copy()
    noise_idx = np.flatnonzero(labels < 0)
    cluster_ids = sorted(int(c) for c in np.unique(labels) if c >= 0)
    if noise == "nearest" and cluster_ids and len(noise_idx):
        from scipy.spatial.distance import cdist

        members = labels >= 0
        nearest = cdist(features[noise_idx], features[members]).argmin(axis=1)
        labels[noise_idx] = labels[members][nearest]
    chosen: list[int] = []
    for c in cluster_ids:
        idx = np.flatnonzero(labels == c)
        chosen.append(int(idx[medoid(features[idx])]))
    if noise == "keep":
        chosen.extend(int(i) for i in noise_idx)
    elif noise == "novel":
        if sets is None:
            raise BuildError(
                "keyframes", "noise='novel' needs the frames' voxel sets", hint="pass frame_voxels="
            )
        chosen.extend(_novel_frames(noise_idx, chosen, sets, novelty))
    return sorted({int(frames[i]) for i in chosen}), len(cluster_ids), len(noise_idx)


def select_hdbscan(
    frames: np.ndarray,
    poses: np.ndarray,
    *,
    rotation_weight: float = 1.5,
    min_cluster_size: int = 15,
    min_samples: int | None = None,
    noise: NoisePolicy = "novel",
    frame_voxels: Sequence[np.ndarray] | None = None,
    noise_novelty: float = 0.4,
) -> KeyframeSelection:
    """The paper's selector (see module docstring); ``frame_voxels`` (the voxel ids each frame observed)
    is needed by ``noise="novel"``. In a room with fewer frames than ``min_cluster_size`` every pose is
    noise; when the noise policy keeps none of them, the room's medoid pose is its keyframe."""
    from sklearn.cluster import HDBSCAN

    start = time.perf_counter()
    frames = np.asarray(frames, dtype=np.int64)
    if len(frames) == 0:
        return KeyframeSelection("hdbscan", frames, 0)
    feats = pose_features(poses, rotation_weight)
    if len(frames) < max(min_cluster_size, 2):  # too few poses for any cluster: all are noise
        labels = np.full(len(frames), -1, np.int64)
    else:
        labels = HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples, copy=True).fit_predict(
            feats
        )
    chosen, n_clusters, n_noise = _clusters_to_keyframes(
        frames, feats, labels, noise, frame_voxels, noise_novelty
    )
    if not chosen:  # everything was noise and noise is dropped: keep the room's medoid
        chosen = [int(frames[medoid(feats)])]
    return KeyframeSelection(
        "hdbscan", np.array(chosen, np.int64), len(frames), n_clusters, n_noise, time.perf_counter() - start
    )


def select_uniform(
    frames: np.ndarray, *, step: int | None = None, budget: int | None = None
) -> KeyframeSelection:
    """Every ``step``-th frame, or ``budget`` frames evenly spaced in time."""
    start = time.perf_counter()
    frames = np.asarray(frames, dtype=np.int64)
    if budget is not None:
        n = int(np.clip(budget, 1 if len(frames) else 0, len(frames)))
        picked = (
            frames[np.unique(np.linspace(0, len(frames) - 1, n).round().astype(int))] if n else frames[:0]
        )
    else:
        picked = frames[:: max(1, step or 1)]
    return KeyframeSelection("uniform", np.sort(picked), len(frames), seconds=time.perf_counter() - start)


def select_random(frames: np.ndarray, *, budget: int, seed: int = 0) -> KeyframeSelection:
    """``budget`` frames drawn without replacement (seeded)."""
    start = time.perf_counter()
    frames = np.asarray(frames, dtype=np.int64)
    n = int(np.clip(budget, 1 if len(frames) else 0, len(frames)))
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(frames, size=n, replace=False)) if n else frames[:0]
    return KeyframeSelection("random", picked, len(frames), seconds=time.perf_counter() - start)


def knee_eps(features: np.ndarray, k: int) -> float:
    """DBSCAN ``eps`` at the knee of the sorted k-distance curve (farthest point from its chord)."""
    from sklearn.neighbors import NearestNeighbors

    k = min(k, len(features) - 1)
    if k < 1:
        return 1.0
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(features).kneighbors(features)
    curve = np.sort(dist[:, k])
    x = np.linspace(0.0, 1.0, len(curve))
    span = curve[-1] - curve[0]
    y = (curve - curve[0]) / span if span > 0 else np.zeros_like(curve)
    knee = int(np.argmax(x - y))  # convex increasing curve: knee is where it rises away from the chord
    return float(max(curve[knee], 1e-6))


def select_dbscan(
    frames: np.ndarray, poses: np.ndarray, *, rotation_weight: float = 1.5, min_samples: int = 5
) -> KeyframeSelection:
    """Adaptive DBSCAN baseline: same features as HDBSCAN, ``eps`` from the k-distance knee of the room;
    medoid per cluster, noise kept."""
    from sklearn.cluster import DBSCAN

    start = time.perf_counter()
    frames = np.asarray(frames, dtype=np.int64)
    if len(frames) == 0:
        return KeyframeSelection("dbscan", frames, 0)
    feats = pose_features(poses, rotation_weight)
    if len(frames) <= min_samples:
        labels = np.zeros(len(frames), np.int64)
    else:
        labels = DBSCAN(eps=knee_eps(feats, min_samples), min_samples=min_samples).fit_predict(feats)
    chosen, n_clusters, n_noise = _clusters_to_keyframes(frames, feats, labels, "keep")
    return KeyframeSelection(
        "dbscan", np.array(chosen, np.int64), len(frames), n_clusters, n_noise, time.perf_counter() - start
    )


def _greedy_cover(sets: Sequence[np.ndarray], target: float) -> list[int]:
    """Greedy maximum coverage: pick sets until ``target`` of their union is covered (or no gain)."""
    if not sets:
        return []
    universe = np.unique(np.concatenate(sets)) if any(len(s) for s in sets) else np.zeros(0, np.int64)
    if len(universe) == 0:
        return [0]
    local = [np.searchsorted(universe, s) for s in sets]
    covered = np.zeros(len(universe), bool)
    gains = np.array([len(s) for s in local], np.int64)
    chosen: list[int] = []
    need = target * len(universe)
    while covered.sum() < need:
        # Lazy greedy: recompute the best candidate's gain until it stays the best.
        while True:
            best = int(np.argmax(gains))
            gain = int((~covered[local[best]]).sum())
            gains[best] = gain
            if gain >= gains.max():
                break
        if gain <= 0:
            break
        covered[local[best]] = True
        chosen.append(best)
        gains[best] = -1
    return sorted(chosen) or [0]


def select_covis_greedy(
    frames: np.ndarray, frame_voxels: Sequence[np.ndarray], *, target: float = 0.9
) -> KeyframeSelection:
    """Global greedy covisibility baseline: frames that cover ``target`` of the voxels seen in the room."""
    start = time.perf_counter()
    frames = np.asarray(frames, dtype=np.int64)
    picked = frames[_greedy_cover(list(frame_voxels), target)] if len(frames) else frames
    return KeyframeSelection(
        "covis_greedy", np.sort(picked), len(frames), seconds=time.perf_counter() - start
    )


def select_covis_local(
    frames: np.ndarray, frame_voxels: Sequence[np.ndarray], *, window: int = 30, target: float = 0.9
) -> KeyframeSelection:
    """Local covisibility baseline: greedy set cover of the voxels seen within each window of ``window``
    consecutive room frames."""
    start = time.perf_counter()
    frames = np.asarray(frames, dtype=np.int64)
    chosen: list[int] = []
    for s in range(0, len(frames), window):
        part = list(frame_voxels[s : s + window])
        chosen.extend(s + i for i in _greedy_cover(part, target))
    picked = frames[np.array(sorted(set(chosen)), np.int64)] if chosen else frames[:0]
    return KeyframeSelection("covis_local", picked, len(frames), seconds=time.perf_counter() - start)


# -- visual features ------------------------------------------------------------------------------------
@runtime_checkable
class ImageEncoder(Protocol):
    """Turns RGB images (H, W, 3) uint8 into one feature vector each (rows of the returned array)."""

    name: str

    def encode(self, images: Sequence[np.ndarray]) -> np.ndarray: ...


class ColorHistogramEncoder:
    """A weights-free image encoder: joint HSV colour histogram (``bins``³) plus a coarse 4x4 grid of
    mean intensities, L2-normalised. Hand-crafted, not learned: a stand-in for CLIP when none is at hand."""

    def __init__(self, bins: int = 6) -> None:
        self.bins = bins
        self.name = f"hsv-histogram-{bins}"

    def encode(self, images: Sequence[np.ndarray]) -> np.ndarray:
        from skimage.color import rgb2hsv
        from skimage.transform import resize

        out = []
        for im in images:
            small = resize(im, (60, 80), anti_aliasing=True, preserve_range=True).astype(np.float64) / 255.0
            hsv = rgb2hsv(np.clip(small, 0.0, 1.0))
            idx = np.minimum((hsv * self.bins).astype(int), self.bins - 1)
            flat = (idx[..., 0] * self.bins + idx[..., 1]) * self.bins + idx[..., 2]
            hist = np.bincount(flat.ravel(), minlength=self.bins**3).astype(np.float64)
            hist /= max(hist.sum(), 1.0)
            grid = small.mean(axis=2).reshape(4, 15, 4, 20).mean(axis=(1, 3)).ravel()
            vec = np.concatenate([np.sqrt(hist), 0.5 * grid])
            out.append(vec / max(np.linalg.norm(vec), 1e-12))
        return np.array(out)


class ClipImageEncoder:
    """CLIP image embeddings from a local model folder (Hugging Face ``transformers`` CLIP layout) or an
    ``open_clip`` model with a local checkpoint. Nothing is downloaded: a missing folder or package raises
    ``MissingComponentError`` saying what to provide."""

    def __init__(self, model_path: str, *, backend: str = "transformers", device: str = "cpu") -> None:
        from pathlib import Path

        self.name = f"clip:{Path(model_path).name}"
        self.backend = backend
        self.device = device
        if not Path(model_path).exists():
            raise MissingComponentError(
                "keyframes",
                f"CLIP model not found at {model_path}",
                hint="download a CLIP model folder (e.g. openai/clip-vit-base-patch32) and pass its path",
            )
        try:
            import torch  # noqa: F401
        except ImportError as exc:
            raise MissingComponentError(
                "keyframes", "CLIP features need torch", hint="pip install torch"
            ) from exc
        if backend == "transformers":
            try:
                from transformers import CLIPImageProcessor, CLIPModel
            except ImportError as exc:
                raise MissingComponentError(
                    "keyframes", "CLIP features need transformers", hint="pip install transformers"
                ) from exc
            self._model = CLIPModel.from_pretrained(model_path, local_files_only=True).to(device).eval()
            self._processor = CLIPImageProcessor.from_pretrained(model_path, local_files_only=True)
        elif backend == "open_clip":
            try:
                import open_clip
            except ImportError as exc:
                raise MissingComponentError(
                    "keyframes", "CLIP features need open_clip", hint="pip install open_clip_torch"
                ) from exc
            model, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32", pretrained=model_path)
            self._model, self._processor = model.to(device).eval(), preprocess
        else:
            raise BuildError(
                "keyframes", f"unknown CLIP backend {backend!r}", hint="use transformers or open_clip"
            )

    def encode(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        from PIL import Image

        with torch.no_grad():
            if self.backend == "transformers":
                inputs = self._processor(images=[Image.fromarray(im) for im in images], return_tensors="pt")
                feats = self._model.get_image_features(pixel_values=inputs["pixel_values"].to(self.device))
            else:
                batch = torch.stack([self._processor(Image.fromarray(im)) for im in images]).to(self.device)
                feats = self._model.encode_image(batch)
        feats = feats.float().cpu().numpy()
        return feats / np.maximum(np.linalg.norm(feats, axis=1, keepdims=True), 1e-12)


def select_visual(
    frames: np.ndarray, embeddings: np.ndarray, *, min_cluster_size: int = 15, name: str = "visual"
) -> KeyframeSelection:
    """Visual-feature clustering baseline: HDBSCAN over L2-normalised image embeddings, medoid per
    cluster, noise kept."""
    from sklearn.cluster import HDBSCAN

    start = time.perf_counter()
    frames = np.asarray(frames, dtype=np.int64)
    if len(frames) == 0:
        return KeyframeSelection(name, frames, 0)
    emb = np.asarray(embeddings, dtype=np.float64)
    emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    if len(frames) < max(min_cluster_size, 2):  # too few frames for any cluster: all are noise
        labels = np.full(len(frames), -1, np.int64)
    else:
        labels = HDBSCAN(min_cluster_size=min_cluster_size, copy=True).fit_predict(emb)
    chosen, n_clusters, n_noise = _clusters_to_keyframes(frames, emb, labels, "keep")
    return KeyframeSelection(
        name, np.array(chosen, np.int64), len(frames), n_clusters, n_noise, time.perf_counter() - start
    )


# -- per-room selection --------------------------------------------------------------------------------
def room_voxel_sets(recon: Reconstruction, frames: np.ndarray) -> list[np.ndarray]:
    """Voxel ids seen by each of ``frames`` (sequence indices, all of them scanned)."""
    where = recon.scan_index()
    return [recon.voxels_of(where[int(f)]) for f in frames]


def select_room_keyframes(
    frames: np.ndarray,
    poses: np.ndarray,
    config: KeyframeConfig,
    *,
    recon: Reconstruction | None = None,
    embeddings: np.ndarray | None = None,
    budget: int | None = None,
) -> KeyframeSelection:
    """Keyframes of one room with ``config.method``. ``recon`` is needed by the covisibility methods,
    ``embeddings`` by ``visual``; ``budget`` (frames) overrides the step/ratio of uniform and random."""
    m = config.method
    if m == "hdbscan":
        if config.noise == "novel" and recon is None:
            raise BuildError("keyframes", "noise='novel' needs the reconstruction's per-frame voxels")
        return select_hdbscan(
            frames,
            poses,
            rotation_weight=config.rotation_weight,
            min_cluster_size=config.min_cluster_size,
            min_samples=config.min_samples,
            noise=config.noise,
            frame_voxels=room_voxel_sets(recon, frames) if recon is not None else None,
            noise_novelty=config.noise_novelty,
        )
    if m == "uniform":
        return select_uniform(frames, step=config.uniform_step, budget=budget)
    if m == "random":
        n = budget if budget is not None else round(config.random_ratio * len(frames))
        return select_random(frames, budget=n, seed=config.seed)
    if m == "dbscan":
        return select_dbscan(
            frames, poses, rotation_weight=config.rotation_weight, min_samples=config.dbscan_min_samples
        )
    if m == "all":
        return KeyframeSelection("all", np.asarray(frames, np.int64), len(frames))
    if m in ("covis_local", "covis_greedy"):
        if recon is None:
            raise BuildError("keyframes", f"method {m} needs the reconstruction's per-frame voxels")
        sets = room_voxel_sets(recon, frames)
        if m == "covis_local":
            return select_covis_local(frames, sets, window=config.covis_window, target=config.covis_target)
        return select_covis_greedy(frames, sets, target=config.covis_target)
    if m == "visual":
        if embeddings is None:
            raise MissingComponentError(
                "keyframes", "the visual baseline needs image embeddings", hint="pass an ImageEncoder"
            )
        return select_visual(frames, embeddings, min_cluster_size=config.min_cluster_size)
    raise BuildError("keyframes", f"unknown keyframe method {m!r}")


# -- metrics --------------------------------------------------------------------------------------------
@dataclass
class KeyframeMetrics:
    """The paper's metrics for one selection: object recall, geometric coverage, sampling ratio."""

    n_frames: int
    n_keyframes: int
    objects_seen: int
    objects_recalled: int
    points: int
    points_covered: int

    @property
    def object_recall(self) -> float:
        return self.objects_recalled / self.objects_seen if self.objects_seen else 1.0

    @property
    def coverage(self) -> float:
        return self.points_covered / self.points if self.points else 1.0

    @property
    def ratio(self) -> float:
        return self.n_keyframes / self.n_frames if self.n_frames else 0.0

    def __add__(self, other: KeyframeMetrics) -> KeyframeMetrics:
        return KeyframeMetrics(
            self.n_frames + other.n_frames,
            self.n_keyframes + other.n_keyframes,
            self.objects_seen + other.objects_seen,
            self.objects_recalled + other.objects_recalled,
            self.points + other.points,
            self.points_covered + other.points_covered,
        )


def keyframe_metrics(
    selected: np.ndarray,
    candidates: np.ndarray,
    visible_objects: Mapping[int, set[int]] | Callable[[int], set[int]],
    recon: Reconstruction,
    *,
    tau: float = 0.05,
) -> KeyframeMetrics:
    """Object recall, geometric coverage (room points within ``tau`` of a keyframe point) and sampling
    ratio of ``selected`` among a room's ``candidates`` (sequence indices). ``visible_objects(frame)``
    gives the object ids seen in a frame (e.g. from ground-truth instance images)."""
    from scipy.spatial import cKDTree

    lookup = visible_objects if callable(visible_objects) else (lambda f: visible_objects.get(f, set()))
    seen: set[int] = set()
    for f in candidates:
        seen |= lookup(int(f))
    recalled: set[int] = set()
    for f in selected:
        recalled |= lookup(int(f))
    recalled &= seen
    room_vox = (
        np.unique(np.concatenate(room_voxel_sets(recon, candidates))) if len(candidates) else np.zeros(0, int)
    )
    key_vox = (
        np.unique(np.concatenate(room_voxel_sets(recon, selected))) if len(selected) else np.zeros(0, int)
    )
    covered = 0
    if len(room_vox) and len(key_vox):
        tree = cKDTree(recon.points[key_vox])
        dist, _ = tree.query(recon.points[room_vox], k=1, distance_upper_bound=tau + 1e-9)
        covered = int(np.isfinite(dist).sum())
    return KeyframeMetrics(len(candidates), len(selected), len(seen), len(recalled), len(room_vox), covered)


__all__ = [
    "ClipImageEncoder",
    "ColorHistogramEncoder",
    "ImageEncoder",
    "KeyframeMetrics",
    "KeyframeSelection",
    "keyframe_metrics",
    "knee_eps",
    "medoid",
    "pose_features",
    "room_voxel_sets",
    "select_covis_greedy",
    "select_covis_local",
    "select_dbscan",
    "select_hdbscan",
    "select_random",
    "select_room_keyframes",
    "select_uniform",
    "select_visual",
]
