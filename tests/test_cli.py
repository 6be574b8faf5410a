"""The scenerag command line, run as a user would (subprocess): output, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HYDRA


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "scenerag.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "db"
    proc = run("load", str(HYDRA), "--db", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "loaded 166 nodes" in proc.stdout
    return path


def test_info() -> None:
    proc = run("info", str(HYDRA))
    assert proc.returncode == 0
    assert "166 nodes, 402 edges" in proc.stdout
    assert "MeshPlace" in proc.stdout and "lounge" in proc.stdout


def test_cypher_table_and_json(db: Path) -> None:
    proc = run("cypher", "MATCH (r:Room) RETURN r.nodeSymbol AS s, r.class AS c ORDER BY s", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert "R1" in proc.stdout and "lounge" in proc.stdout and "5 row(s)" in proc.stdout
    proc = run(
        "cypher", "MATCH (o:Object) RETURN o.nodeSymbol AS s", "--db", str(db), "--json", "--max-rows", "3"
    )
    out = json.loads(proc.stdout)
    assert len(out["rows"]) == 3 and out["truncated"] is True
    proc = run(
        "cypher",
        "MATCH (r:Room {nodeSymbol: $s}) RETURN r.class AS c",
        "--db",
        str(db),
        "-p",
        's="R2"',
        "--json",
    )
    assert json.loads(proc.stdout)["rows"] == [{"c": "hallway"}]


def test_cypher_write_needs_flag(db: Path) -> None:
    q = "MATCH (o:Object {nodeSymbol:'O0'}) SET o.class = 'bag' RETURN o.class AS c"
    refused = run("cypher", q, "--db", str(db))
    assert refused.returncode == 1
    assert "read-only" in refused.stderr and "Traceback" not in refused.stderr
    done = run("cypher", q, "--db", str(db), "--write", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["rows"] == [{"c": "bag"}]


def test_schema(db: Path) -> None:
    proc = run("schema", "--db", str(db))
    assert proc.returncode == 0
    assert "NOT directly contained" in proc.stdout
    data = json.loads(run("schema", "--db", str(db), "--json").stdout)
    assert data["containment_chains"] == [["Room", "MeshPlace", "Object"]]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "file not found"),
        ("this is not json", "not JSON"),
        ('{"nodes": 3}', "not a scene graph"),
        ('{"format": "scenerag.scene_graph", "version": 1, "nodes": [{"symbol": "O1"}]}', "nodes[0]"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path: Path, content: str | None, needle: str) -> None:
    path = tmp_path / "input.json"
    if content is not None:
        path.write_text(content)
    for args in (("info", str(path)), ("load", str(path), "--db", str(tmp_path / "db"))):
        proc = run(*args)
        assert proc.returncode != 0
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, proc.stderr
        assert needle in lines[0] and "Traceback" not in proc.stderr


def test_unknown_format_and_missing_db(tmp_path: Path) -> None:
    proc = run("load", str(HYDRA), "--db", str(tmp_path / "db"), "--format", "graphml")
    assert proc.returncode != 0 and "unknown format" in proc.stderr
    proc = run("cypher", "MATCH (n) RETURN n", "--db", str(tmp_path / "nothing"))
    assert proc.returncode != 0 and "scenerag load" in proc.stderr
    proc = run("cypher", "MATCH (o:Objet) RETURN o", "--db", str(tmp_path / "nothing2"))
    assert proc.returncode != 0


def test_failed_cli_load_keeps_previous_graph(db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"format": "scenerag.scene_graph", "version": 1, "nodes": [], "edges": [{"source": "a"}]}'
    )
    assert run("load", str(bad), "--db", str(db)).returncode != 0
    proc = run("cypher", "MATCH (o:Object) RETURN count(o) AS n", "--db", str(db), "--json")
    assert json.loads(proc.stdout)["rows"] == [{"n": 65}]


def test_export_index_and_search(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "exported.json"
    proc = run("export", "--db", str(db), str(out))
    assert proc.returncode == 0, proc.stderr
    info = run("info", str(out))
    assert "166 nodes, 402 edges" in info.stdout
    missing = run("search", "bike", "--db", str(tmp_path / "nodb"))
    assert missing.returncode != 0 and "scenerag index" in missing.stderr
    assert run("index", "--db", str(db)).returncode == 0
    found = run("search", "bike", "--db", str(db), "-k", "1", "--label", "Object")
    assert found.returncode == 0 and "bicycle" in found.stdout
