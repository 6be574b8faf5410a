"""Posed RGB-D sequences: camera intrinsics, frames, the lazy ``RGBDSequence`` base and file readers.

Conventions shared by every loader: ``RGBDFrame.rgb`` is HxWx3 uint8, ``depth`` HxW float32 in metres
(0 = no measurement), ``pose`` a 4x4 float64 camera-to-world transform with the OpenCV camera axes
(x right, y down, z forward). Images are read only when a frame is accessed; poses are read and checked
when the sequence is opened. Every problem raises ``DatasetError`` naming the file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from scenerag.errors import SceneRagError

GT_DIR = "gt"  # ground-truth sidecar folder inside a sequence written by scenerag.sim.render
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
_NUMBER = re.compile(r"(\d+)(?!.*\d)")


class DatasetError(SceneRagError):
    """An RGB-D dataset folder or file that cannot be read: names the path and what to do."""

    def __init__(self, path: str | Path, message: str, *, hint: str | None = None) -> None:
        self.path = str(path)
        super().__init__(f"{path}: {message}", hint=hint)


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole intrinsics of the depth camera (RGB is registered to it) and the depth PNG scale.

    ``depth_scale`` is the number stored in a depth image per metre (1000 for millimetres, 6553.5 for
    Replica). Pixel ``(u, v)`` (column, row; integer = pixel centre) sees ray ``((u-cx)/fx, (v-cy)/fy, 1)``.
    """

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int
    depth_scale: float = 1000.0

    def __post_init__(self) -> None:
        for name in ("fx", "fy", "cx", "cy", "depth_scale"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"camera intrinsics: {name} must be a finite number, got {value!r}")
        if self.fx <= 0 or self.fy <= 0 or self.depth_scale <= 0:
            raise ValueError("camera intrinsics: fx, fy and depth_scale must be positive")
        if (
            int(self.width) != self.width
            or int(self.height) != self.height
            or self.width < 1
            or self.height < 1
        ):
            raise ValueError(
                f"camera intrinsics: width/height must be positive integers, got {self.width}x{self.height}"
            )

    @property
    def matrix(self) -> np.ndarray:
        """The 3x3 camera matrix K."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @classmethod
    def from_fov(
        cls, width: int, height: int, hfov_deg: float, depth_scale: float = 1000.0
    ) -> CameraIntrinsics:
        """Square-pixel intrinsics from a horizontal field of view (Habitat: principal point W/2, H/2)."""
        fx = width / (2.0 * math.tan(math.radians(hfov_deg) / 2.0))
        return cls(fx, fx, width / 2.0, height / 2.0, width, height, depth_scale)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], source: str | Path, *, default_depth_scale: float = 1000.0
    ) -> CameraIntrinsics:
        """Parse ``{fx, fy, cx, cy, width, height, depth_scale}``, a ``K`` matrix with ``width``/``height``,
        or the Replica/NICE-SLAM ``{"camera": {w, h, fx, fy, cx, cy, scale}}`` form."""
        if "camera" in data and isinstance(data["camera"], Mapping):
            cam = data["camera"]
            names = {
                "fx": "fx",
                "fy": "fy",
                "cx": "cx",
                "cy": "cy",
                "width": "w",
                "height": "h",
                "depth_scale": "scale",
            }
            values = {k: cam.get(v) for k, v in names.items()}
        else:
            values = {k: data.get(k) for k in ("fx", "fy", "cx", "cy", "width", "height", "depth_scale")}
            if values["fx"] is None and "K" in data:
                try:
                    k = np.asarray(data["K"], dtype=np.float64).reshape(3, 3)
                except (TypeError, ValueError):
                    raise DatasetError(source, "field K must be a 3x3 matrix") from None
                values.update(fx=k[0, 0], fy=k[1, 1], cx=k[0, 2], cy=k[1, 2])
        if values["depth_scale"] is None:
            values["depth_scale"] = default_depth_scale
        missing = [k for k, v in values.items() if v is None]
        if missing:
            raise DatasetError(
                source,
                f"camera intrinsics lack {', '.join(missing)}",
                hint="give fx, fy, cx, cy, width, height (and depth_scale)",
            )
        try:
            return cls(
                float(values["fx"]),
                float(values["fy"]),
                float(values["cx"]),
                float(values["cy"]),
                int(values["width"]),
                int(values["height"]),
                float(values["depth_scale"]),
            )
        except (TypeError, ValueError) as exc:
            raise DatasetError(source, f"invalid camera intrinsics: {exc}") from None

    @classmethod
    def from_json(cls, path: str | Path, *, default_depth_scale: float = 1000.0) -> CameraIntrinsics:
        data = read_json(path)
        if not isinstance(data, Mapping):
            raise DatasetError(path, "expected a JSON object with camera intrinsics")
        return cls.from_mapping(data, path, default_depth_scale=default_depth_scale)

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")


@dataclass
class RGBDFrame:
    """One posed RGB-D frame; ``instance``/``class_ids`` are ground-truth id images when available."""

    index: int
    rgb: np.ndarray
    depth: np.ndarray
    pose: np.ndarray
    intrinsics: CameraIntrinsics
    instance: np.ndarray | None = None
    class_ids: np.ndarray | None = None

    def pixels_to_world(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """World points (N, 3) of pixels ``(rows, cols)`` using their depth (pixels with depth 0 give the
        camera centre; filter them first)."""
        k = self.intrinsics
        z = self.depth[rows, cols].astype(np.float64)
        cam = np.column_stack([(cols - k.cx) / k.fx * z, (rows - k.cy) / k.fy * z, z])
        return cam @ self.pose[:3, :3].T + self.pose[:3, 3]

    def point_cloud(self, stride: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Back-projected world points (N, 3) and their colours (N, 3) uint8 of valid-depth pixels."""
        rows, cols = np.mgrid[0 : self.depth.shape[0] : stride, 0 : self.depth.shape[1] : stride]
        rows, cols = rows.ravel(), cols.ravel()
        valid = self.depth[rows, cols] > 0
        rows, cols = rows[valid], cols[valid]
        return self.pixels_to_world(rows, cols), self.rgb[rows, cols]


@dataclass(frozen=True)
class FrameFiles:
    """The files of one frame: colour image, depth image and (per-frame layouts) pose file."""

    rgb: Path
    depth: Path
    pose: Path | None = None


class RGBDSequence(Sequence[RGBDFrame]):
    """A posed RGB-D sequence: ``len``, iteration and random access; images load lazily on access.

    Subclasses find the files and poses of one on-disk layout and call ``__init__``. ``poses`` are
    camera-to-world (OpenCV axes). Ground-truth instance/class images (``gt/instance``, ``gt/class``) and
    the ground-truth scene graph (``gt/scene_graph.json``) are exposed when present.
    """

    layout: ClassVar[str] = "base"

    def __init__(
        self,
        root: Path,
        files: list[FrameFiles],
        poses: np.ndarray,
        intrinsics: CameraIntrinsics,
        *,
        resize_rgb: bool = False,
    ) -> None:
        if len(files) != len(poses):
            raise DatasetError(root, f"{len(files)} frames but {len(poses)} poses")
        if not files:
            raise DatasetError(root, "the sequence has no frames")
        self.root = root
        self.files = files
        self._poses = poses
        self.intrinsics = intrinsics
        self._resize_rgb = resize_rgb
        gt = root / GT_DIR
        self.ground_truth_dir: Path | None = gt if gt.is_dir() else None
        self._check_first_frame()

    # -- sequence protocol --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> RGBDFrame:  # type: ignore[override]
        if isinstance(index, slice):
            raise TypeError("RGBDSequence does not support slices; iterate or use frames(start, stop, step)")
        i = self._index(index)
        return RGBDFrame(
            i,
            self.rgb(i),
            self.depth(i),
            self.pose(i),
            self.intrinsics,
            self.instance_image(i),
            self.class_image(i),
        )

    def __iter__(self) -> Iterator[RGBDFrame]:
        for i in range(len(self)):
            yield self[i]

    def frames(self, start: int = 0, stop: int | None = None, step: int = 1) -> Iterator[RGBDFrame]:
        """Frames ``start:stop:step``, loaded one at a time."""
        for i in range(*slice(start, stop, step).indices(len(self))):
            yield self[i]

    def __repr__(self) -> str:
        k = self.intrinsics
        return f"{type(self).__name__}({str(self.root)!r}, {len(self)} frames, {k.width}x{k.height})"

    # -- per-frame access ---------------------------------------------------------------------------
    @property
    def poses(self) -> np.ndarray:
        """All camera-to-world poses (N, 4, 4) (a copy)."""
        return self._poses.copy()

    def pose(self, index: int) -> np.ndarray:
        return self._poses[self._index(index)].copy()

    def rgb(self, index: int) -> np.ndarray:
        k = self.intrinsics
        size = (k.width, k.height) if self._resize_rgb else None
        image = read_rgb(self.files[self._index(index)].rgb, resize_to=size)
        self._check_size(self.files[self._index(index)].rgb, image.shape)
        return image

    def depth(self, index: int) -> np.ndarray:
        path = self.files[self._index(index)].depth
        depth = read_depth(path, self.intrinsics.depth_scale)
        self._check_size(path, depth.shape)
        return depth

    @property
    def has_ground_truth(self) -> bool:
        return self.ground_truth_dir is not None and (self.ground_truth_dir / "instance").is_dir()

    def instance_image(self, index: int) -> np.ndarray | None:
        """Ground-truth instance ids (H, W) int32 (0 = none) of frame ``index``, or ``None``."""
        return self._gt_image("instance", index)

    def class_image(self, index: int) -> np.ndarray | None:
        """Ground-truth class ids (H, W) int32 (0 = none) of frame ``index``, or ``None``."""
        return self._gt_image("class", index)

    def ground_truth_graph(self) -> Any:
        """The ground-truth ``SceneGraph`` (``gt/scene_graph.json``) or ``None``."""
        if self.ground_truth_dir is None or not (self.ground_truth_dir / "scene_graph.json").is_file():
            return None
        from scenerag.graph import read_scene_graph

        return read_scene_graph(self.ground_truth_dir / "scene_graph.json")

    def instance_table(self) -> dict[str, Any] | None:
        """The ground-truth instance table (``gt/instances.json``) or ``None``."""
        if self.ground_truth_dir is None or not (self.ground_truth_dir / "instances.json").is_file():
            return None
        data = read_json(self.ground_truth_dir / "instances.json")
        if not isinstance(data, dict) or "instances" not in data:
            raise DatasetError(
                self.ground_truth_dir / "instances.json", "expected an object with 'instances'"
            )
        return data

    # -- helpers ------------------------------------------------------------------------------------
    def _index(self, index: int) -> int:
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"frame index must be an integer, got {type(index).__name__}")
        n = len(self.files)
        i = int(index) + n if index < 0 else int(index)
        if not 0 <= i < n:
            raise IndexError(f"frame index {index} out of range for {n} frames")
        return i

    def _gt_image(self, kind: str, index: int) -> np.ndarray | None:
        if self.ground_truth_dir is None:
            return None
        path = self.ground_truth_dir / kind / f"{self._index(index):06d}.png"
        if not path.is_file():
            return None
        image = read_id_image(path)
        self._check_size(path, image.shape)
        return image

    def _check_size(self, path: Path, shape: tuple[int, ...]) -> None:
        k = self.intrinsics
        if shape[0] != k.height or shape[1] != k.width:
            raise DatasetError(
                path,
                f"image is {shape[1]}x{shape[0]} but the intrinsics say {k.width}x{k.height}",
                hint="check the intrinsics file or pass matching CameraIntrinsics",
            )

    def _check_first_frame(self) -> None:
        """Fail at open time (not at frame 0) on an unreadable first image or a size mismatch."""
        first = self.files[0]
        for path in (first.depth,) if self._resize_rgb else (first.rgb, first.depth):
            w, h = image_size(path)
            self._check_size(path, (h, w))


# -- file readers -----------------------------------------------------------------------------------
def read_json(path: str | Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise DatasetError(path, "file not found")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DatasetError(
            path, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(path, f"cannot read: {exc}") from None


def _open_image(path: Path) -> Any:
    from PIL import Image, UnidentifiedImageError

    if not path.is_file():
        raise DatasetError(path, "image file not found")
    try:
        return Image.open(path)
    except (UnidentifiedImageError, OSError) as exc:
        raise DatasetError(
            path,
            f"unreadable image ({exc.__class__.__name__})",
            hint="re-export the frame or remove it from every folder",
        ) from None


def image_size(path: str | Path) -> tuple[int, int]:
    """``(width, height)`` from the image header (no pixel decoding). ``.npy`` depth is read as an array."""
    path = Path(path)
    if path.suffix.lower() == ".npy":
        shape = _load_npy(path).shape
        return int(shape[1]), int(shape[0])
    with _open_image(path) as im:
        return im.size


def read_rgb(path: str | Path, *, resize_to: tuple[int, int] | None = None) -> np.ndarray:
    """An RGB image as HxWx3 uint8 (grey and RGBA are converted); optionally resized (bilinear)."""
    from PIL import Image

    path = Path(path)
    with _open_image(path) as im:
        try:
            if im.mode not in ("RGB", "RGBA", "L", "P", "LA"):
                raise DatasetError(path, f"colour image has mode {im.mode}; expected an 8-bit RGB image")
            im = im.convert("RGB")
            if resize_to is not None and im.size != resize_to:
                im = im.resize(resize_to, Image.Resampling.BILINEAR)
            return np.asarray(im, dtype=np.uint8)
        except OSError as exc:
            raise DatasetError(path, f"unreadable image ({exc})") from None


def read_depth(path: str | Path, depth_scale: float) -> np.ndarray:
    """A depth image in metres (float32, 0 = invalid) from a 16-bit PNG (``value / depth_scale``) or a
    ``.npy`` array (float: metres; uint16: scaled)."""
    path = Path(path)
    if path.suffix.lower() == ".npy":
        arr = _load_npy(path)
        if arr.ndim != 2:
            raise DatasetError(path, f"depth array must be 2-D, got shape {arr.shape}")
        if np.issubdtype(arr.dtype, np.floating):
            depth = arr.astype(np.float32)
        elif arr.dtype == np.uint16:
            depth = arr.astype(np.float32) / np.float32(depth_scale)
        else:
            raise DatasetError(path, f"depth array has dtype {arr.dtype}; expected float (metres) or uint16")
        return np.where(np.isfinite(depth) & (depth > 0), depth, 0.0).astype(np.float32)
    with _open_image(path) as im:
        if im.mode not in ("I;16", "I;16B", "I;16L", "I"):
            raise DatasetError(
                path,
                f"depth image has mode {im.mode} ({_mode_dtype(im.mode)}); "
                "expected a 16-bit single-channel PNG",
                hint="depth must be uint16 with the layout's depth scale, not 8-bit or colour",
            )
        try:
            arr = np.asarray(im)
        except OSError as exc:
            raise DatasetError(path, f"unreadable image ({exc})") from None
    if arr.dtype.kind not in "iu" or (arr.dtype.itemsize > 2 and (arr.min() < 0 or arr.max() > 65535)):
        raise DatasetError(path, f"depth values of dtype {arr.dtype} are not 16-bit unsigned integers")
    return (arr.astype(np.float32) / np.float32(depth_scale)).astype(np.float32)


def read_id_image(path: str | Path) -> np.ndarray:
    """A 16-bit id image (instance or class ids) as int32."""
    path = Path(path)
    with _open_image(path) as im:
        if im.mode not in ("I;16", "I;16B", "I;16L", "I", "L"):
            raise DatasetError(path, f"id image has mode {im.mode}; expected a 16-bit single-channel PNG")
        return np.asarray(im).astype(np.int32)


def _mode_dtype(mode: str) -> str:
    return {
        "L": "8-bit grey",
        "RGB": "8-bit colour",
        "RGBA": "8-bit colour",
        "F": "32-bit float",
        "P": "8-bit palette",
        "1": "1-bit",
    }.get(mode, mode)


def _load_npy(path: Path) -> np.ndarray:
    if not path.is_file():
        raise DatasetError(path, "depth file not found")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DatasetError(path, f"unreadable .npy array ({exc})") from None


def check_pose(matrix: np.ndarray, source: str | Path) -> np.ndarray:
    """Return ``matrix`` as a 4x4 float64 rigid transform or raise ``DatasetError`` naming ``source``."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (4, 4):
        raise DatasetError(source, f"pose must be a 4x4 matrix, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise DatasetError(
            source,
            "pose has non-finite values (inf/nan)",
            hint="drop frames with invalid poses (ScanNet: pass skip_invalid_poses=True)",
        )
    if not np.allclose(m[3], [0.0, 0.0, 0.0, 1.0], atol=1e-4):
        raise DatasetError(source, f"pose last row must be 0 0 0 1, got {m[3].tolist()}")
    rot = m[:3, :3]
    if not np.allclose(rot.T @ rot, np.eye(3), atol=2e-2) or np.linalg.det(rot) < 0:
        raise DatasetError(
            source,
            "pose rotation is not a proper rotation matrix",
            hint="poses must be camera-to-world rigid transforms",
        )
    return m


def read_pose_file(path: str | Path) -> np.ndarray:
    """A 4x4 pose from a text file of 16 numbers (one line or four rows)."""
    path = Path(path)
    values = _read_numbers(path)
    if values.size != 16:
        raise DatasetError(path, f"pose file must hold 16 numbers (a 4x4 matrix), found {values.size}")
    return values.reshape(4, 4)


def _read_numbers(path: Path) -> np.ndarray:
    if not path.is_file():
        raise DatasetError(path, "pose file not found")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(path, f"cannot read: {exc}") from None
    try:
        return np.array([float(t) for t in text.split()], dtype=np.float64)
    except ValueError as exc:
        raise DatasetError(path, f"not a list of numbers ({exc})") from None


def read_pose_lines(path: str | Path) -> np.ndarray:
    """Poses (N, 4, 4) from a text file with one pose per line: 16 numbers (row-major 4x4), 12 (3x4),
    7 (``tx ty tz qx qy qz qw``) or 8 (a leading timestamp, then the 7). ``#`` starts a comment."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(path, "pose file not found")
    poses = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            vals = np.array([float(t) for t in line.replace(",", " ").split()], dtype=np.float64)
        except ValueError:
            raise DatasetError(path, f"line {lineno} is not a list of numbers: {line[:60]!r}") from None
        if vals.size == 16:
            m = vals.reshape(4, 4)
        elif vals.size == 12:
            m = np.vstack([vals.reshape(3, 4), [0.0, 0.0, 0.0, 1.0]])
        elif vals.size in (7, 8):
            from scipy.spatial.transform import Rotation

            t, q = vals[-7:-4], vals[-4:]
            if not np.isfinite(vals).all() or np.linalg.norm(q) < 1e-9:
                raise DatasetError(f"{path}:{lineno}", "pose has a non-finite value or a zero quaternion")
            m = np.eye(4)
            m[:3, :3] = Rotation.from_quat(q).as_matrix()
            m[:3, 3] = t
        else:
            raise DatasetError(
                path,
                f"line {lineno} has {vals.size} numbers; expected 16 (4x4), 12 (3x4), "
                "7 (t, quaternion xyzw) or 8 (timestamp, t, quaternion)",
            )
        poses.append(check_pose(m, f"{path}:{lineno}"))
    return np.array(poses).reshape(-1, 4, 4)


def frame_number(path: Path) -> int | None:
    """The last run of digits in a file's stem (``frame000012`` -> 12, ``12`` -> 12), or ``None``."""
    match = _NUMBER.search(path.stem)
    return int(match.group(1)) if match else None


def numbered_files(
    folder: Path, suffixes: tuple[str, ...], *, prefix: str = "", what: str
) -> dict[int, Path]:
    """Files in ``folder`` named ``<prefix>...<number><suffix>`` keyed by number; raises when the folder is
    missing, empty, or two files share a number."""
    if not folder.is_dir():
        raise DatasetError(folder, f"{what} folder not found")
    out: dict[int, Path] = {}
    for path in folder.iterdir():
        if path.suffix.lower() not in suffixes or not path.name.startswith(prefix) or not path.is_file():
            continue
        number = frame_number(path)
        if number is None:
            continue
        if number in out:
            raise DatasetError(
                path, f"two {what} files have frame number {number}: {out[number].name}, {path.name}"
            )
        out[number] = path
    if not out:
        raise DatasetError(folder, f"no {what} files ({prefix}*{'/'.join(suffixes)}) found")
    return dict(sorted(out.items()))


def match_frames(named: Sequence[tuple[str, Path, dict[int, Path]]]) -> list[int]:
    """Frame numbers present in every listing; raises naming the first folder with a missing frame."""
    (first_name, first_dir, first), *rest = named
    for name, folder, files in rest:
        if files.keys() != first.keys():
            only_first = sorted(first.keys() - files.keys())
            only_here = sorted(files.keys() - first.keys())
            detail = []
            if only_first:
                detail.append(f"missing in {folder}: frame(s) {_few(only_first)} (present in {first_dir})")
            if only_here:
                detail.append(f"missing in {first_dir}: frame(s) {_few(only_here)} (present in {folder})")
            raise DatasetError(
                folder,
                f"{len(first)} {first_name} files but {len(files)} {name} files; " + "; ".join(detail),
                hint="every frame needs a colour image, a depth image and a pose",
            )
    return list(first)


def _few(numbers: list[int], limit: int = 5) -> str:
    text = ", ".join(str(n) for n in numbers[:limit])
    return text + (f" and {len(numbers) - limit} more" if len(numbers) > limit else "")


def resolve_intrinsics(
    explicit: CameraIntrinsics | None,
    candidates: Sequence[Path],
    root: Path,
    *,
    default_depth_scale: float,
    hint: str,
) -> CameraIntrinsics:
    """Explicit intrinsics, else the first existing JSON file of ``candidates``; else a clear error."""
    if explicit is not None:
        if not isinstance(explicit, CameraIntrinsics):
            raise TypeError(f"intrinsics must be a CameraIntrinsics, got {type(explicit).__name__}")
        return explicit
    for path in candidates:
        if path.is_file():
            return CameraIntrinsics.from_json(path, default_depth_scale=default_depth_scale)
    names = ", ".join(str(p) for p in candidates)
    raise DatasetError(root, f"no camera intrinsics: none of {names} exists", hint=hint)


__all__ = [
    "GT_DIR",
    "IMAGE_SUFFIXES",
    "CameraIntrinsics",
    "DatasetError",
    "FrameFiles",
    "RGBDFrame",
    "RGBDSequence",
    "check_pose",
    "frame_number",
    "image_size",
    "match_frames",
    "numbered_files",
    "read_depth",
    "read_id_image",
    "read_json",
    "read_pose_file",
    "read_pose_lines",
    "read_rgb",
    "resolve_intrinsics",
]
