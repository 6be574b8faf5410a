"""Resumable per-stage cache of a build: each stage's outputs live in ``<out>/cache/<stage>/`` next to a
``stage.json`` holding the stage's fingerprint (a hash of its settings, its input stages' fingerprints
and the sequence's identity). A stage whose recorded fingerprint matches is reused; any change reruns it
and, through the chained fingerprints, every stage after it. Writes are atomic (temporary folder, then
rename), so an interrupted stage is never mistaken for a finished one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from scenerag.build.datasets import RGBDSequence
from scenerag.build.errors import BuildError

CACHE_VERSION = 1


def sequence_fingerprint(sequence: RGBDSequence) -> str:
    """Identity of a sequence: folder, layout, frame count, intrinsics, poses and ground-truth table."""
    h = hashlib.sha256()
    h.update(str(Path(sequence.root).resolve()).encode())
    h.update(type(sequence).__name__.encode())
    h.update(str(len(sequence)).encode())
    h.update(json.dumps(sequence.intrinsics.to_dict(), sort_keys=True).encode())
    h.update(np.ascontiguousarray(sequence.poses, dtype=np.float64).tobytes())
    gt = sequence.ground_truth_dir
    if gt is not None and (gt / "instances.json").is_file():
        stat = (gt / "instances.json").stat()
        h.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def stage_key(stage: str, settings: Any, inputs: Mapping[str, str]) -> str:
    """Fingerprint of a stage run: its name, settings (JSON-able) and input fingerprints."""
    payload = json.dumps(
        {"v": CACHE_VERSION, "stage": stage, "settings": settings, "inputs": dict(sorted(inputs.items()))},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


class StageCache:
    """The cache folder of one build output directory."""

    def __init__(self, out_dir: str | Path) -> None:
        self.root = Path(out_dir) / "cache"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BuildError("cache", f"cannot create {self.root}: {exc}") from None

    def path(self, stage: str) -> Path:
        return self.root / stage

    def record(self, stage: str) -> dict[str, Any] | None:
        meta = self.path(stage) / "stage.json"
        if not meta.is_file():
            return None
        try:
            data = json.loads(meta.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return data if isinstance(data, dict) else None

    def is_fresh(self, stage: str, key: str) -> bool:
        rec = self.record(stage)
        return rec is not None and rec.get("key") == key

    def begin(self, stage: str) -> Path:
        """A fresh temporary folder to write the stage's outputs into."""
        tmp = self.root / f".{stage}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        return tmp

    def commit(self, stage: str, tmp: Path, key: str, seconds: float, details: Mapping[str, Any]) -> Path:
        """Record ``tmp`` as the stage's finished outputs (replacing older ones)."""
        (tmp / "stage.json").write_text(
            json.dumps(
                {"key": key, "seconds": seconds, "finished": time.time(), "details": dict(details)},
                default=str,
            )
        )
        final = self.path(stage)
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
        return final

    def invalidate(self, stage: str) -> None:
        if self.path(stage).exists():
            shutil.rmtree(self.path(stage))


__all__ = ["CACHE_VERSION", "StageCache", "sequence_fingerprint", "stage_key"]
