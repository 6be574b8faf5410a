"""KeySG construction from posed RGB-D. Exports are lazy so ``import scenerag.build`` stays cheap.

``run_build(sequence, out_dir, BuildConfig(), progress=...)`` builds the hierarchical keyframe-based scene
graph; ``evaluate_build(report.artifacts)`` measures it against a synthetic sequence's ground truth.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "CameraIntrinsics": "scenerag.build.datasets",
    "DatasetError": "scenerag.build.datasets",
    "RGBDFrame": "scenerag.build.datasets",
    "RGBDSequence": "scenerag.build.datasets",
    "open_sequence": "scenerag.build.datasets",
    "BuildArtifacts": "scenerag.build.pipeline",
    "BuildConfig": "scenerag.build.config",
    "BuildError": "scenerag.build.errors",
    "BuildReport": "scenerag.build.pipeline",
    "EvaluationReport": "scenerag.build.evaluate",
    "KeyframeSelection": "scenerag.build.keyframes",
    "Mask2D": "scenerag.build.segmentation",
    "MissingComponentError": "scenerag.build.errors",
    "OracleSegmenter": "scenerag.build.segmentation",
    "Segmenter": "scenerag.build.segmentation",
    "StageReport": "scenerag.build.pipeline",
    "evaluate_build": "scenerag.build.evaluate",
    "load_build": "scenerag.build.pipeline",
    "run_build": "scenerag.build.pipeline",
    "select_hdbscan": "scenerag.build.keyframes",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'scenerag.build' has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
