from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenerag import SceneGraphFormatError, read_scene_graph


def write(tmp_path: Path, name: str, content: str) -> Path:
    p = tmp_path / name
    p.write_text(content)
    return p


def native(nodes: list, edges: list | None = None) -> str:
    return json.dumps({"format": "scenerag.scene_graph", "version": 1, "nodes": nodes, "edges": edges or []})


NODE = {"symbol": "O1", "label": "Object", "class": "mug", "position": [0, 0, 0]}


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "not JSON"),
        ("{not json", "invalid JSON at line 1"),
        ('{"hello": 1}', "not a scene graph"),
        ("[1, 2, 3]", "not a scene graph"),
        (native([{**NODE, "position": [0, 0]}]), "nodes[0].position"),
        (native([{**NODE, "class": 5}]), "nodes[0].class"),
        (native([NODE, NODE]), "duplicate node symbol"),
        (native([NODE], [{"source": "O1", "target": "O9", "type": "CONTAINS"}]), "edges[0]"),
        (native([{**NODE, "label": "Bad Label"}]), "nodes[0]"),
        (json.dumps({"format": "scenerag.scene_graph", "version": 7, "nodes": []}), "unsupported version"),
        (native([{**NODE, "attributes": {"bad key": 1}}]), "not an identifier"),
    ],
)
def test_malformed_files_name_file_and_field(tmp_path: Path, content: str, needle: str) -> None:
    path = write(tmp_path, "bad.json", content)
    with pytest.raises(SceneGraphFormatError) as info:
        read_scene_graph(path)
    assert str(path) in str(info.value)
    assert needle in str(info.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(SceneGraphFormatError, match="file not found"):
        read_scene_graph(tmp_path / "nope.json")
    with pytest.raises(SceneGraphFormatError, match="directory"):
        read_scene_graph(tmp_path)


def test_unknown_format_name(tmp_path: Path) -> None:
    path = write(tmp_path, "g.json", native([NODE]))
    with pytest.raises(SceneGraphFormatError, match="unknown format"):
        read_scene_graph(path, "graphml")  # type: ignore[arg-type]


def test_truncated_hydra_file(tmp_path: Path) -> None:
    from conftest import HYDRA

    path = write(tmp_path, "cut.json", HYDRA.read_text()[:5000])
    with pytest.raises(SceneGraphFormatError, match="invalid JSON"):
        read_scene_graph(path)
