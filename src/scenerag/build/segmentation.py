"""Pluggable 2D segmentation of keyframes into labelled object and functional-element masks.

Contract: a :class:`Segmenter` turns one ``RGBDFrame`` into a list of :class:`Mask2D` (boolean mask,
open-vocabulary label, kind ``object`` or ``functional``, score, free attributes such as ``color``).
Implementations: :class:`OracleSegmenter` (ground-truth instance/class images of a synthetic sequence:
the offline perception used for measurement), ``GeometricSegmenter`` (``scenerag.build.geometric``:
class-agnostic instances from the fused depth map, no model, no labels), :class:`VisionEndpointSegmenter` (an OpenAI-compatible VLM
lists labelled boxes; each box becomes the depth-continuous region around its centre, or a SAM mask when
SAM weights are given) and :class:`GroundedSamSegmenter` (Grounding-DINO boxes + SAM masks from local
weight folders via ``transformers``). Model packages are imported lazily; nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scenerag.build.config import SegmentationConfig
from scenerag.build.datasets import RGBDFrame, RGBDSequence
from scenerag.build.errors import BuildError, MissingComponentError

KIND_OBJECT = "object"
KIND_FUNCTIONAL = "functional"
# Interactive parts a robot manipulates (FunGraph-style functional elements).
DEFAULT_FUNCTIONAL_LABELS: tuple[str, ...] = ("handle", "knob", "button", "switch", "faucet")
# Scene-graph-worthy structure (doors and stairs are Object nodes; walls, floors, ceilings are not).
DEFAULT_STRUCTURE_LABELS: tuple[str, ...] = ("door", "stairs")


@dataclass
class Mask2D:
    """One segment of one frame: ``mask`` (H, W) bool, ``label``, ``kind`` and ``score`` in [0, 1].

    ``instance`` is set by segmenters that already know which segments of different frames are one
    object (the geometric segmenter's map instances); 3D merging then follows it instead of matching."""

    mask: np.ndarray
    label: str
    kind: str = KIND_OBJECT
    score: float = 1.0
    attributes: dict[str, str | float | bool] = field(default_factory=dict)
    instance: int | None = None

    @property
    def area(self) -> int:
        return int(self.mask.sum())

    def bbox(self) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` pixel bounds (inclusive) of the mask."""
        rows = np.flatnonzero(self.mask.any(axis=1))
        cols = np.flatnonzero(self.mask.any(axis=0))
        if len(rows) == 0:
            return (0, 0, -1, -1)
        return (int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1]))


@runtime_checkable
class Segmenter(Protocol):
    """Segments a frame into labelled masks."""

    name: str

    def segment(self, frame: RGBDFrame) -> list[Mask2D]: ...


def normalize_label(label: str) -> str:
    """Lower-case, single-spaced label with underscores as spaces (``Coffee_Table`` -> ``coffee table``)."""
    return " ".join(label.replace("_", " ").lower().split())


def vocabulary_label(phrase: str, vocabulary: Sequence[str]) -> str:
    """The vocabulary label a detector phrase stands for: the phrase itself when it is one, else the
    longest label whose words all occur in it (Grounding-DINO phrases can run several prompt labels
    together, with ``[SEP]`` tokens), else the cleaned phrase (``object`` when nothing is left)."""
    text = normalize_label(phrase.replace("[SEP]", " ").replace("[sep]", " ").replace(".", " "))
    if text in vocabulary:
        return text
    words = set(text.split())
    fits = [v for v in vocabulary if v and set(v.split()) <= words]
    if fits:
        return max(fits, key=lambda v: (len(v.split()), -vocabulary.index(v)))
    return text or "object"


# -- oracle ---------------------------------------------------------------------------------------------
class OracleSegmenter:
    """Masks from ground-truth instance ids: one mask per object, door or staircase with at least
    ``min_pixels`` pixels and per functional element with at least ``min_element_pixels``; labels are the
    ground-truth classes, ``color`` the named colour.
    The instance ids themselves are not passed on: 3D merging must find correspondences by itself."""

    name = "oracle"

    def __init__(
        self,
        instance_table: Mapping[str, Any],
        *,
        min_pixels: int = 30,
        min_element_pixels: int = 10,
        structure_labels: Sequence[str] = DEFAULT_STRUCTURE_LABELS,
    ) -> None:
        instances = instance_table.get("instances")
        if not isinstance(instances, list):
            raise BuildError("segmentation", "the ground-truth instance table has no 'instances' list")
        self.min_pixels = min_pixels
        self.min_element_pixels = min_element_pixels
        size = max((int(d["id"]) for d in instances), default=0) + 1
        self._label: list[str | None] = [None] * size
        self._kind: list[str] = [KIND_OBJECT] * size
        self._color: list[str] = [""] * size
        for d in instances:
            iid, kind, cls = int(d["id"]), str(d["kind"]), str(d["class"])
            if kind == "functional":
                self._kind[iid] = KIND_FUNCTIONAL
            elif kind != "object" and cls not in structure_labels:
                continue
            self._label[iid] = cls
            self._color[iid] = str(d.get("color", ""))

    @classmethod
    def from_sequence(cls, sequence: RGBDSequence, **options: Any) -> OracleSegmenter:
        if not sequence.has_ground_truth:
            raise BuildError(
                "segmentation",
                f"{sequence.root} has no ground-truth instance images (gt/instance/)",
                hint="the oracle segmenter needs a synthetic sequence; choose segmenter=vision_endpoint "
                "or grounded_sam for real data",
            )
        table = sequence.instance_table()
        if table is None:
            raise BuildError("segmentation", f"{sequence.root}/gt/instances.json is missing")
        return cls(table, **options)

    def segment(self, frame: RGBDFrame) -> list[Mask2D]:
        if frame.instance is None:
            raise BuildError(
                "segmentation", f"frame {frame.index} has no ground-truth instance image for the oracle"
            )
        inst = frame.instance
        ids, counts = np.unique(inst, return_counts=True)
        out = []
        for iid, n in zip(ids.tolist(), counts.tolist(), strict=True):
            if iid <= 0 or iid >= len(self._label) or self._label[iid] is None:
                continue
            if n < (self.min_element_pixels if self._kind[iid] == KIND_FUNCTIONAL else self.min_pixels):
                continue
            attrs: dict[str, str | float | bool] = {"color": self._color[iid]} if self._color[iid] else {}
            out.append(Mask2D(inst == iid, str(self._label[iid]), self._kind[iid], 1.0, attrs))
        return out


# -- depth-based box refinement ------------------------------------------------------------------------
def box_to_mask(
    depth: np.ndarray, box: tuple[float, float, float, float], *, rel_step: float = 0.04
) -> np.ndarray:
    """The depth-continuous region of ``box`` (x0, y0, x1, y1 pixels) that holds most of the box's central
    third: neighbouring pixels join when their depths differ by less than ``0.02 m + rel_step·z``."""
    from scipy.ndimage import label

    h, w = depth.shape
    x0, y0, x1, y1 = (round(v) for v in box)
    x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w - 1, x1), min(h - 1, y1)
    mask = np.zeros((h, w), bool)
    if x1 <= x0 or y1 <= y0:
        return mask
    d = depth[y0 : y1 + 1, x0 : x1 + 1].astype(np.float64)
    valid = d > 0
    tol = 0.02 + rel_step * d
    right = np.abs(np.diff(d, axis=1)) < np.minimum(tol[:, 1:], tol[:, :-1])
    down = np.abs(np.diff(d, axis=0)) < np.minimum(tol[1:, :], tol[:-1, :])
    # A pixel is interior when it connects smoothly to its right and lower neighbours.
    smooth = valid.copy()
    smooth[:, :-1] &= right
    smooth[:-1, :] &= down
    comps, n = label(smooth)
    if n == 0:
        return mask
    hh, ww = d.shape
    centre = comps[hh // 3 : max(hh // 3 + 1, 2 * hh // 3), ww // 3 : max(ww // 3 + 1, 2 * ww // 3)]
    votes = np.bincount(centre[centre > 0].ravel(), minlength=n + 1)
    if votes.sum() == 0:
        return mask
    mask[y0 : y1 + 1, x0 : x1 + 1] = comps == int(np.argmax(votes))
    return mask


class _SamRefiner:
    """Box-prompted SAM masks through ``transformers`` (``SamModel``) from a local weight folder."""

    def __init__(self, sam_path: str, device: str = "cpu") -> None:
        _require_path(sam_path, "SAM")
        try:
            import torch  # noqa: F401
            from transformers import SamModel, SamProcessor
        except ImportError as exc:
            raise MissingComponentError(
                "segmentation", "SAM masks need torch and transformers", hint="pip install torch transformers"
            ) from exc
        self.device = device
        self.processor = SamProcessor.from_pretrained(sam_path, local_files_only=True)
        self.model = SamModel.from_pretrained(sam_path, local_files_only=True).to(device).eval()

    def masks(self, rgb: np.ndarray, boxes: Sequence[Sequence[float]]) -> list[np.ndarray]:
        import torch

        if not boxes:
            return []
        inputs = self.processor(
            images=rgb, input_boxes=[[list(map(float, b)) for b in boxes]], return_tensors="pt"
        )
        inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        with torch.no_grad():
            outputs = self.model(**inputs)
        masks = self.processor.post_process_masks(
            outputs.pred_masks.cpu(), inputs["original_sizes"].cpu(), inputs["reshaped_input_sizes"].cpu()
        )[0]
        scores = outputs.iou_scores.cpu()[0]
        best = scores.argmax(dim=-1)
        return [masks[i, int(best[i])].numpy().astype(bool) for i in range(len(boxes))]


def _require_path(path: str | None, what: str) -> None:
    if not path or not Path(path).exists():
        raise MissingComponentError(
            "segmentation",
            f"{what} weights not found at {path!r}",
            hint=f"download the {what} model folder and pass its path in segmentation.options",
        )


# -- VLM detector -----------------------------------------------------------------------------------------
_DETECT_PROMPT = (
    "List the distinct objects and their small interactive parts (handles, knobs, buttons, switches, "
    "faucets) "
    "visible in this {w}x{h} image. Reply with JSON: "
    '{{"objects": [{{"label": "<short noun>", "box": [x0, y0, x1, y1], "color": "<colour>"}}]}} '
    "with pixel coordinates. At most {n} entries.{vocab}"
)


class VisionEndpointSegmenter:
    """Open-vocabulary masks from an OpenAI-compatible VLM: the model lists labelled boxes, each box is
    refined to a mask by SAM (``sam_path``) or, without SAM, by depth continuity (:func:`box_to_mask`).
    Labels in ``functional_labels`` become functional elements."""

    name = "vision_endpoint"

    def __init__(
        self,
        model: str = "",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        labels: Sequence[str] = (),
        functional_labels: Sequence[str] = DEFAULT_FUNCTIONAL_LABELS,
        max_objects: int = 30,
        min_pixels: int = 30,
        sam_path: str | None = None,
        client: Any | None = None,
        endpoint: Any | None = None,
    ) -> None:
        from scenerag.build.vision_endpoint import VisionEndpoint

        self.endpoint = endpoint or VisionEndpoint(model, base_url=base_url, api_key=api_key, client=client)
        self.labels = [normalize_label(x) for x in labels]
        self.functional = {normalize_label(x) for x in functional_labels}
        self.max_objects = max_objects
        self.min_pixels = min_pixels
        self.sam = _SamRefiner(sam_path) if sam_path else None

    def segment(self, frame: RGBDFrame) -> list[Mask2D]:
        from scenerag.build.vision_endpoint import parse_json_object

        h, w = frame.depth.shape
        vocab = f" Use these labels where they fit: {', '.join(self.labels)}." if self.labels else ""
        prompt = _DETECT_PROMPT.format(w=w, h=h, n=self.max_objects, vocab=vocab)
        text, _ = self.endpoint.ask(prompt, [frame.rgb], json_reply=True, max_tokens=60 * self.max_objects)
        entries = parse_json_object(text, self.endpoint.name).get("objects", [])
        boxes, metas = [], []
        for e in entries if isinstance(entries, list) else []:
            box = e.get("box") if isinstance(e, dict) else None
            if not (
                isinstance(box, list) and len(box) == 4 and all(isinstance(v, (int, float)) for v in box)
            ):
                continue
            x0, y0, x1, y1 = (float(v) for v in box)
            if max(x0, x1, y0, y1) <= 1.0:  # normalised coordinates
                x0, x1, y0, y1 = x0 * w, x1 * w, y0 * h, y1 * h
            boxes.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
            metas.append(e)
        masks = self.sam.masks(frame.rgb, boxes) if self.sam else [box_to_mask(frame.depth, b) for b in boxes]
        out = []
        for meta, mask in zip(metas, masks, strict=True):
            if mask.sum() < self.min_pixels:
                continue
            label = normalize_label(str(meta.get("label", "object"))) or "object"
            kind = KIND_FUNCTIONAL if label in self.functional else KIND_OBJECT
            attrs: dict[str, str | float | bool] = {}
            if isinstance(meta.get("color"), str):
                attrs["color"] = normalize_label(meta["color"])
            out.append(Mask2D(mask, label, kind, float(meta.get("score", 0.8) or 0.8), attrs))
        return out


# -- Grounding-DINO + SAM -----------------------------------------------------------------------------------
class GroundedSamSegmenter:
    """Grounding-DINO boxes for a label vocabulary plus SAM masks, both from local ``transformers`` model
    folders (``detector_path``, ``sam_path``)."""

    name = "grounded_sam"

    def __init__(
        self,
        detector_path: str,
        sam_path: str,
        *,
        labels: Sequence[str],
        functional_labels: Sequence[str] = DEFAULT_FUNCTIONAL_LABELS,
        box_threshold: float = 0.3,
        text_threshold: float = 0.25,
        min_pixels: int = 30,
        device: str = "cpu",
    ) -> None:
        if not labels:
            raise BuildError(
                "segmentation", "grounded_sam needs a label vocabulary", hint="options.labels=[...]"
            )
        _require_path(detector_path, "Grounding-DINO")
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
        except ImportError as exc:
            raise MissingComponentError(
                "segmentation",
                "grounded_sam needs torch and transformers",
                hint="pip install torch transformers",
            ) from exc
        self.device = device
        self.labels = [normalize_label(x) for x in labels]
        self.functional = {normalize_label(x) for x in functional_labels}
        self.box_threshold, self.text_threshold = box_threshold, text_threshold
        self.min_pixels = min_pixels
        self.processor = AutoProcessor.from_pretrained(detector_path, local_files_only=True)
        self.detector = AutoModelForZeroShotObjectDetection.from_pretrained(
            detector_path, local_files_only=True
        )
        self.detector = self.detector.to(device).eval()
        self.sam = _SamRefiner(sam_path, device)

    def segment(self, frame: RGBDFrame) -> list[Mask2D]:
        import torch
        from PIL import Image

        image = Image.fromarray(frame.rgb)
        text = ". ".join(self.labels) + "."
        inputs = self.processor(images=image, text=text, return_tensors="pt").to(self.device)
        with torch.no_grad():
            outputs = self.detector(**inputs)
        result = self.processor.post_process_grounded_object_detection(
            outputs,
            inputs["input_ids"],
            threshold=self.box_threshold,
            text_threshold=self.text_threshold,
            target_sizes=[image.size[::-1]],
        )[0]
        boxes = result["boxes"].cpu().numpy().tolist()
        # ``text_labels`` (transformers >= 4.51); older versions put the phrases in ``labels``.
        names = result["text_labels"] if "text_labels" in result else result["labels"]
        scores = result["scores"].cpu().numpy().tolist()
        out = []
        for _box, name, score, mask in zip(
            boxes, names, scores, self.sam.masks(frame.rgb, boxes), strict=True
        ):
            if mask.sum() < self.min_pixels:
                continue
            label = vocabulary_label(str(name), self.labels)
            kind = KIND_FUNCTIONAL if label in self.functional else KIND_OBJECT
            out.append(Mask2D(mask, label, kind, float(score)))
        return out


def make_segmenter(
    config: SegmentationConfig, sequence: RGBDSequence | None = None, *, reconstruction: Any | None = None
) -> Segmenter:
    """The segmenter named by ``config.segmenter`` with ``config.options`` (``reconstruction``, the
    build's scan, lets the geometric segmenter reuse the fused map)."""
    options = dict(config.options)
    if config.segmenter == "geometric":
        from scenerag.build.geometric import GeometricSegmenter

        if sequence is None and reconstruction is None:
            raise BuildError("segmentation", "the geometric segmenter needs the sequence or its scan")
        options.setdefault("min_pixels", config.min_mask_pixels)
        return GeometricSegmenter(sequence, reconstruction=reconstruction, **options)
    if config.segmenter == "oracle":
        if sequence is None:
            raise BuildError("segmentation", "the oracle segmenter needs the sequence (ground truth)")
        options.setdefault("min_element_pixels", config.min_element_pixels)
        return OracleSegmenter.from_sequence(sequence, min_pixels=config.min_mask_pixels, **options)
    if config.segmenter == "vision_endpoint":
        options.setdefault("min_pixels", config.min_mask_pixels)
        return VisionEndpointSegmenter(**options)
    if config.segmenter == "grounded_sam":
        options.setdefault("min_pixels", config.min_mask_pixels)
        try:
            return GroundedSamSegmenter(**options)
        except TypeError as exc:
            raise BuildError(
                "segmentation", f"grounded_sam options: {exc}", hint="give detector_path, sam_path and labels"
            ) from None
    raise BuildError("segmentation", f"unknown segmenter {config.segmenter!r}")


__all__ = [
    "DEFAULT_FUNCTIONAL_LABELS",
    "DEFAULT_STRUCTURE_LABELS",
    "KIND_FUNCTIONAL",
    "KIND_OBJECT",
    "GroundedSamSegmenter",
    "Mask2D",
    "OracleSegmenter",
    "Segmenter",
    "VisionEndpointSegmenter",
    "box_to_mask",
    "make_segmenter",
    "normalize_label",
    "vocabulary_label",
]
