"""Read and write scene-graph files. ``read_scene_graph`` detects the format from the content."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from scenerag.errors import SceneGraphFormatError
from scenerag.graph.model import SceneGraph

Format = Literal["auto", "native", "hydra"]
FORMATS: tuple[str, ...] = ("auto", "native", "hydra")


def detect_format(path: str | Path) -> str:
    """Return ``'native'`` or ``'hydra'`` for a readable scene-graph file, else raise a clear error."""
    path = Path(path)
    if not path.exists():
        raise SceneGraphFormatError(str(path), "file not found")
    if path.is_dir():
        raise SceneGraphFormatError(str(path), "is a directory, expected a scene-graph file")
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    stripped = head.lstrip()
    if not stripped.startswith((b"{", b"[")):
        if path.suffix.lower() in (".sparkdsg", ".dsg", ".bin"):
            return "hydra"
        raise SceneGraphFormatError(
            str(path),
            "not JSON and not a known binary scene-graph format",
            hint="supported: scenerag JSON, Hydra/spark_dsg JSON (.json) or binary (.sparkdsg)",
        )
    if b'"SPARK_DSG_header"' in head or b'"layer_names"' in head or b'"mesh"' in head[:64]:
        return "hydra"
    if b'"scenerag.scene_graph"' in head:
        return "native"
    # Fall back to parsing the whole document.
    from scenerag.graph.io.native import is_native

    document = _read_json(path)
    if is_native(document):
        return "native"
    if (
        isinstance(document, dict)
        and "nodes" in document
        and ("layer_names" in document or "edges" in document)
    ) and ("SPARK_DSG_header" in document or "directed" in document):
        return "hydra"
    raise SceneGraphFormatError(
        str(path),
        "JSON, but not a scene graph scenerag can read",
        hint="expected a scenerag scene_graph document or a Hydra/spark_dsg export",
    )


def _read_json(path: Path) -> object:
    try:
        with path.open("rb") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise SceneGraphFormatError(
            str(path), f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except UnicodeDecodeError:
        raise SceneGraphFormatError(str(path), "not UTF-8 text") from None


def read_scene_graph(path: str | Path, format: Format = "auto") -> SceneGraph:
    """Read ``path`` as a ``SceneGraph``. ``format`` is ``auto``, ``native`` or ``hydra``."""
    path = Path(path)
    if format not in FORMATS:
        raise SceneGraphFormatError(str(path), f"unknown format {format!r}", hint=f"use one of {FORMATS}")
    fmt = detect_format(path) if format == "auto" else format
    if not path.exists():
        raise SceneGraphFormatError(str(path), "file not found")
    if fmt == "hydra":
        from scenerag.graph.io.hydra import load_hydra

        if path.suffix.lower() == ".json":
            _read_json(path)  # clear JSON errors before handing the file to spark_dsg
        return load_hydra(path)
    from scenerag.graph.io.native import graph_from_dict

    document = _read_json(path)
    if not isinstance(document, dict):
        raise SceneGraphFormatError(str(path), "expected a JSON object at the top level")
    return graph_from_dict(document, source=str(path))


def write_scene_graph(graph: SceneGraph, path: str | Path) -> None:
    """Write ``graph`` in scenerag's native JSON format."""
    from scenerag.graph.io.native import save_native

    save_native(graph, path)


def __getattr__(name: str) -> object:
    # pydantic (behind the native format) loads on first use, keeping `import scenerag` fast.
    if name in ("graph_from_dict", "graph_to_dict"):
        from scenerag.graph.io import native

        return getattr(native, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["detect_format", "graph_from_dict", "graph_to_dict", "read_scene_graph", "write_scene_graph"]
