"""KeySG construction from posed RGB-D. Exports are lazy so ``import scenerag.build`` stays cheap."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "CameraIntrinsics": "scenerag.build.datasets",
    "DatasetError": "scenerag.build.datasets",
    "RGBDFrame": "scenerag.build.datasets",
    "RGBDSequence": "scenerag.build.datasets",
    "open_sequence": "scenerag.build.datasets",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'scenerag.build' has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
