"""Configuration of the KeySG build: one frozen pydantic model per stage, gathered in ``BuildConfig``.

Every field has the paper's value (or a measured default) so ``BuildConfig()`` runs the full pipeline;
unknown fields are rejected with the field's name. ``stage_fingerprint`` hashes one stage's settings for
the resumable cache, so changing a stage's config reruns that stage and every stage after it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from scenerag.build.errors import BuildError


class _StageConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReconstructionConfig(_StageConfig):
    """Per-frame back-projection into a voxel map (bounded memory: strided pixels, one frame at a time).

    ``pixel_stride`` keeps every n-th pixel in both directions; ``frame_step`` scans every n-th frame.
    With ``tsdf`` an Open3D tensor ``VoxelBlockGrid`` TSDF is also integrated (every ``tsdf_frame_step``
    frames) and its surface written to ``surface.ply``; the later stages use the voxel map either way.
    """

    voxel_size: float = Field(0.05, gt=0.0, le=0.5)
    pixel_stride: int = Field(4, ge=1, le=64)
    frame_step: int = Field(1, ge=1)
    min_depth: float = Field(0.1, ge=0.0)
    max_depth: float = Field(8.0, gt=0.0)
    chunk_frames: int = Field(200, ge=1, description="frames accumulated before folding into the map")
    tsdf: bool = False
    tsdf_voxel_size: float = Field(0.04, gt=0.0)
    tsdf_frame_step: int = Field(5, ge=1)
    tsdf_block_count: int = Field(40_000, ge=100)

    @model_validator(mode="after")
    def _depth_range(self) -> ReconstructionConfig:
        if self.max_depth <= self.min_depth:
            raise ValueError(f"max_depth ({self.max_depth}) must exceed min_depth ({self.min_depth})")
        return self


class FloorConfig(_StageConfig):
    """Floors from height-histogram peaks of the surfaces seen below the cameras (walking surfaces).

    A floor surface lies between ``min_camera_height`` and ``max_camera_height`` below the cameras that
    stand on it; peaks closer than ``min_floor_separation`` are suppressed in favour of the stronger one.
    """

    bin_size: float = Field(0.05, gt=0.0, le=0.5)
    min_floor_separation: float = Field(2.0, gt=0.5)
    min_camera_height: float = Field(0.3, ge=0.0)
    max_camera_height: float = Field(2.5, gt=0.0)
    min_peak_fraction: float = Field(0.15, gt=0.0, le=1.0, description="peak height / highest peak")
    min_frames: int = Field(10, ge=1, description="cameras that must stand on a floor")
    min_clear_height: float = Field(1.8, gt=0.0)
    max_clear_height: float = Field(6.0, gt=0.0)


class RoomConfig(_StageConfig):
    """Rooms per floor: bird's-eye wall histogram, gap closing, distance transform and watershed.

    A cell is a wall when its points cover at least ``wall_min_coverage`` of the height bins between
    ``wall_coverage_range`` (fractions of the floor's clear height; tall and thin, unlike most furniture)
    or when it holds ``min_wall_hits`` points in the band from ``wall_band_low`` of the clear height up
    to ``wall_band_top_margin`` below the ceiling (lintels above doorways). Collinear wall runs at least
    ``wall_min_run`` long are joined across gaps up to ``wall_gap_close`` (doorways, full-height openings);
    a joined gap that spans the full width of the spaces on both of its sides is not a room boundary and
    the two regions are merged back. Watershed markers are the free-space cores at least
    ``marker_clearance`` from any wall; regions smaller than ``min_room_area`` join a neighbour.
    """

    grid_resolution: float = Field(0.05, gt=0.0, le=0.5)
    wall_coverage_range: tuple[float, float] = (0.07, 0.78)
    wall_coverage_bin: float = Field(0.1, gt=0.0)
    wall_min_coverage: float = Field(0.6, gt=0.0, le=1.0)
    wall_band_low: float = Field(0.78, gt=0.0, lt=1.0)
    wall_band_top_margin: float = Field(0.08, ge=0.0)
    min_wall_hits: int = Field(2, ge=1)
    small_gap_close: float = Field(0.15, ge=0.0)
    wall_gap_close: float = Field(2.0, ge=0.0)
    wall_min_run: float = Field(1.0, gt=0.0)
    gap_close_angles_deg: tuple[float, ...] = (0.0, 45.0, 90.0, 135.0)
    open_gap_tolerance: float = Field(0.3, ge=0.0)
    marker_clearance: float = Field(0.6, gt=0.0)
    min_marker_area: float = Field(0.25, ge=0.0)
    min_room_area: float = Field(2.0, ge=0.0)
    polygon_tolerance: float = Field(0.1, ge=0.0)


class AssociationConfig(_StageConfig):
    """Frame-to-room association: the camera centre lies in the room and at least ``eta`` of the frame's
    back-projected (voxel-downsampled) points lie inside the room polygon (within the floor's heights)."""

    eta: float = Field(0.5, ge=0.0, le=1.0)
    require_camera_inside: bool = True
    z_margin: float = Field(0.3, ge=0.0)


KeyframeMethod = Literal[
    "hdbscan", "uniform", "random", "dbscan", "covis_local", "covis_greedy", "visual", "all"
]
NoisePolicy = Literal["novel", "keep", "drop", "nearest"]


class KeyframeConfig(_StageConfig):
    """Keyframes per room. ``hdbscan`` is the paper's selector: HDBSCAN (``min_cluster_size`` 15) on
    standardised 7-D pose features ``(t, w·q)`` with ``w = rotation_weight``, one medoid per cluster.
    ``noise`` says what becomes of the poses HDBSCAN leaves unclustered, which the paper treats as unique
    viewpoints: ``keep`` makes every one a keyframe; ``novel`` (default) verifies the uniqueness, adding
    noise poses greedily, most novel first, while a pose still observes at least ``noise_novelty`` of its
    voxels unseen by the keyframes chosen so far; ``drop`` ignores them; ``nearest`` folds them into the
    nearest cluster before the medoids are taken. On smooth robot trajectories HDBSCAN leaves most poses
    as noise, so ``keep`` keeps most frames (see the keyframe ablation). The other methods are the
    ablation baselines (see ``scenerag.build.keyframes``)."""

    method: KeyframeMethod = "hdbscan"
    rotation_weight: float = Field(1.5, ge=0.0)
    min_cluster_size: int = Field(15, ge=2)
    min_samples: int | None = Field(None, ge=1, description="HDBSCAN min_samples (None: min_cluster_size)")
    noise: NoisePolicy = "novel"
    noise_novelty: float = Field(0.4, gt=0.0, le=1.0)
    uniform_step: int = Field(10, ge=1)
    random_ratio: float = Field(0.1, gt=0.0, le=1.0)
    dbscan_min_samples: int = Field(5, ge=1)
    covis_window: int = Field(30, ge=1)
    covis_target: float = Field(0.9, gt=0.0, le=1.0)
    seed: int = 0


class SegmentationConfig(_StageConfig):
    """The 2D segmenter run on keyframes: ``oracle`` (ground-truth instance/class images of a synthetic
    sequence), ``geometric`` (class-agnostic instances of the fused depth map after removing floor, wall
    and ceiling planes; no model, every object labelled ``object``), ``vision_endpoint`` (an
    OpenAI-compatible VLM that returns labelled boxes, refined to masks by depth) or ``grounded_sam``
    (Grounding-DINO + SAM weights from local folders). ``options`` go to the segmenter's constructor
    (e.g. ``model``, ``base_url``, ``detector_path``, ``sam_path``, ``labels``; for ``geometric`` the
    fields of ``scenerag.build.geometric.GeometricParams``)."""

    segmenter: Literal["oracle", "geometric", "vision_endpoint", "grounded_sam"] = "oracle"
    min_mask_pixels: int = Field(30, ge=1)
    min_element_pixels: int = Field(10, ge=1, description="functional elements are small: a lower bar")
    options: dict[str, Any] = Field(default_factory=dict)


class ObjectConfig(_StageConfig):
    """Lifting masks to 3D and merging them across keyframes into objects and functional elements.

    A segment joins an object of the same label when the object's points that are visible in the
    segment's keyframe fall inside its mask (fraction ``projection_match``, at least ``min_support``
    points) or when the two point sets overlap in 3D (``overlap_match`` of either set within one voxel).
    """

    voxel_size: float = Field(0.025, gt=0.0)
    merge_voxel_size: float = Field(0.05, gt=0.0)
    max_mask_points: int = Field(3000, ge=10)
    max_object_points: int = Field(4000, ge=10)
    min_points: int = Field(15, ge=1, description="smallest object segment (points after downsampling)")
    min_element_points: int = Field(3, ge=1, description="smallest functional-element segment")
    component_fraction: float = Field(0.2, ge=0.0, le=1.0, description="keep 3D parts this big vs largest")
    projection_match: float = Field(0.5, gt=0.0, le=1.0)
    min_support: int = Field(8, ge=1)
    overlap_match: float = Field(0.25, gt=0.0, le=1.0)
    depth_tolerance: float = Field(0.1, gt=0.0)
    post_merge_overlap: float = Field(0.3, gt=0.0, le=1.0)
    link_distance: float = Field(0.06, ge=0.0, description="functional element to parent object")
    border_margin: float = Field(0.1, ge=0.0, description="best view: image-border margin, fraction of size")


class VisibilityConfig(_StageConfig):
    """An object is seen by a keyframe when at least ``theta`` of its points project into the image and
    pass the depth test (|z - depth| <= ``depth_tolerance``)."""

    theta: float = Field(0.5, ge=0.0, le=1.0)
    depth_tolerance: float = Field(0.1, gt=0.0)
    max_points: int = Field(400, ge=1)


class DescriptionConfig(_StageConfig):
    """Keyframe descriptions and room/floor/building summaries.

    ``describer``: ``template`` (offline, grounded in the visible objects: classes, colours, sizes and
    computed relations) or ``vlm`` (an OpenAI-compatible vision endpoint, ``vlm_model``/``vlm_base_url``).
    ``summarizer``: ``llm`` (``make_chat_model(llm)``, local by default) or ``template`` (offline, fast;
    what ``--no-llm`` selects).
    """

    describer: Literal["template", "vlm"] = "template"
    summarizer: Literal["llm", "template"] = "llm"
    llm: str = "local"
    llm_options: dict[str, Any] = Field(default_factory=dict)
    vlm_model: str = ""
    vlm_base_url: str | None = None
    max_descriptions_per_room: int = Field(4, ge=1, description="keyframe descriptions in a room prompt")
    max_description_chars: int = Field(400, ge=40)
    summary_input_chars: int = Field(240, ge=40, description="each description/summary is cut to this")
    max_tokens: int = Field(120, ge=16)


class BuildConfig(_StageConfig):
    """All stage configs of a build; ``store`` (a directory or Bolt URI) loads the graph when set."""

    reconstruction: ReconstructionConfig = ReconstructionConfig()
    floors: FloorConfig = FloorConfig()
    rooms: RoomConfig = RoomConfig()
    association: AssociationConfig = AssociationConfig()
    keyframes: KeyframeConfig = KeyframeConfig()
    segmentation: SegmentationConfig = SegmentationConfig()
    objects: ObjectConfig = ObjectConfig()
    visibility: VisibilityConfig = VisibilityConfig()
    description: DescriptionConfig = DescriptionConfig()
    store: str | None = None

    @classmethod
    def offline(cls, **overrides: Any) -> BuildConfig:
        """Oracle perception and template summaries: runs with no model at all (``--no-llm``)."""
        base = cls().model_dump()
        base["description"]["summarizer"] = "template"
        return cls.model_validate(_deep_merge(base, overrides))

    def with_overrides(self, overrides: dict[str, Any]) -> BuildConfig:
        """A copy with nested ``overrides`` (``{"keyframes": {"noise": "drop"}}``) applied and validated."""
        try:
            return type(self).model_validate(_deep_merge(self.model_dump(), overrides))
        except ValidationError as exc:
            raise BuildError("config", _validation_text(exc)) from None

    @classmethod
    def from_file(cls, path: str | Path) -> BuildConfig:
        """Read a JSON or YAML file holding (part of) a ``BuildConfig``; errors name the file and field."""
        path = Path(path)
        if not path.is_file():
            raise BuildError("config", f"{path}: file not found")
        text = path.read_text()
        try:
            if path.suffix.lower() in (".yaml", ".yml"):
                import yaml

                data = yaml.safe_load(text) or {}
            else:
                data = json.loads(text)
        except Exception as exc:  # yaml and json raise different types
            raise BuildError("config", f"{path}: cannot parse ({exc})") from None
        if not isinstance(data, dict):
            raise BuildError("config", f"{path}: expected a mapping of stage names to settings")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise BuildError("config", f"{path}: {_validation_text(exc)}") from None

    def stage_fingerprint(self, stage: str) -> str:
        """Short hash of one stage's settings (``store`` excluded: loading is not cached)."""
        value = getattr(self, stage)
        payload = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


__all__ = [
    "AssociationConfig",
    "BuildConfig",
    "DescriptionConfig",
    "FloorConfig",
    "KeyframeConfig",
    "KeyframeMethod",
    "NoisePolicy",
    "ObjectConfig",
    "ReconstructionConfig",
    "RoomConfig",
    "SegmentationConfig",
    "VisibilityConfig",
]
