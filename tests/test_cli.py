"""The scenerag command line, run as a user would (subprocess): output, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import APARTMENT, HYDRA
from scenerag import read_scene_graph


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SCENERAG_DATA"} | {"COLUMNS": "200"}
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


def expected_lines(path: Path) -> list[str]:
    """The demo's expected answers for ``path``, computed here from the graph API."""
    graph = read_scene_graph(path)
    rooms = sum(1 for _ in graph.nodes("Room"))
    bicycles = sorted(o.symbol for o in graph.nodes("Object") if o.class_name == "bicycle")
    goal = " or ".join(f"(holding {b})" for b in bicycles) or "none (nothing in this graph fits)"
    return [
        f"expected: How many rooms are there? -> {rooms}",
        f"expected: Pick up the bicycle. -> {goal}",
    ]


def test_demo_expected_answers_come_from_the_file(tmp_path: Path) -> None:
    """The demo's non-LLM part on a graph other than the Hydra example: its queries and expected answers
    follow that graph (one room, Place rather than MeshPlace, no bicycle)."""
    proc = run("demo", "--file", str(APARTMENT), "--db", str(tmp_path / "db"), "--no-llm")
    assert proc.returncode == 0, proc.stderr
    for line in expected_lines(APARTMENT):
        assert line in proc.stdout
    assert "expected: How many rooms are there? -> 1" in proc.stdout
    assert "within 5 hops of place p" in proc.stdout and "PLACE_CONNECTED*1..5" in proc.stdout
    assert "R1" not in proc.stdout and "P754" not in proc.stdout
    assert "writes read-only Cypher to answer" not in proc.stdout  # --no-llm: no agent


def test_demo_default_file_is_found_from_the_working_directory(tmp_path: Path) -> None:
    """No --file: the Hydra example is looked for in shared/data beside the working directory (as for
    scripts/demo.sh in a checkout), never next to the installed package; missing, it is one clear line."""
    work = tmp_path / "checkout"
    work.mkdir()
    missing = run("demo", "--no-llm", "--db", str(tmp_path / "db"), cwd=work)
    assert missing.returncode != 0
    assert "--file" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "shared" / "data" / HYDRA.name).symlink_to(HYDRA)
    proc = run("demo", "--no-llm", "--db", str(tmp_path / "db"), cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert HYDRA.name in proc.stdout
    for line in expected_lines(HYDRA):
        assert line in proc.stdout
    assert "expected: Pick up the bicycle. -> (holding O43)" in proc.stdout
    assert "expected: How many rooms are there? -> 5" in proc.stdout


# -- messages a user understands (issue 24: each item has its test) ---------------------------------------


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command (asserting there is exactly one, without exception names)."""
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr
    assert not any(name in proc.stderr for name in ("ValueError", "QueryError", "org.antlr", "java."))
    return lines[0]


def test_info_lists_every_class() -> None:
    proc = run("info", str(HYDRA))
    classes = {n.class_name for n in read_scene_graph(HYDRA).nodes("Object")}
    assert len(classes) == 12
    flat = " ".join(proc.stdout.split())
    for cls in classes:
        assert f" {cls} " in f" {flat} ".replace(",", " "), cls


def test_schema_text_is_not_cut(db: Path) -> None:
    proc = run("schema", "--db", str(db))
    assert " ".join(proc.stdout.split()).endswith("bbox_dim is [dx, dy, dz].")


def test_row_cap_and_time_limit_name_their_flags(db: Path) -> None:
    line = one_error_line(run("cypher", "MATCH (n) RETURN n", "--db", str(db), "--max-rows", "0"))
    assert line == "error: --max-rows must be at least 1 (got 0); to see every row, raise it instead"
    line = one_error_line(run("cypher", "MATCH (n) RETURN n", "--db", str(db), "--timeout", "0"))
    assert line == "error: --timeout must be a positive number of seconds (got 0)"


def test_timeout_names_the_limit_and_the_flag(db: Path) -> None:
    slow = "MATCH (a)-[:MESH_PLACE_CONNECTED*1..14]-(b) RETURN count(*) AS n"
    line = one_error_line(run("cypher", slow, "--db", str(db), "--timeout", "0.2"))
    assert "the query took longer than its time limit of 0.2 s" in line and "--timeout" in line


def test_syntax_errors_without_java_exception_names(db: Path) -> None:
    line = one_error_line(run("cypher", "MATCH (n RETURN n", "--db", str(db)))
    assert line.startswith("error: syntax error: Syntax error at line 1:9")
    assert "caused by" not in line and "fix the Cypher syntax" in line
    debug = run("--debug", "cypher", "MATCH (n RETURN n", "--db", str(db))
    assert debug.returncode == 1 and "QueryError" in debug.stderr  # --debug keeps the exception type


def test_help_shows_no_bool_types_and_version() -> None:
    for args in (("--help",), ("ask", "--help"), ("view", "--help")):
        proc = run(*args)
        assert proc.returncode == 0 and "--help" in proc.stdout and "<bool>" not in proc.stdout
    version = run("--version")
    from scenerag import __version__

    assert version.returncode == 0 and version.stdout.strip() == f"scenerag {__version__}"


def test_os_errors_are_sentences(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    line = one_error_line(run("info", str(folder)))
    assert str(folder) in line and "Error" not in line


def test_unchanged_index_is_fast_and_readable(db: Path) -> None:
    first = run("index", "--db", str(db))
    assert first.returncode == 0, first.stderr
    assert "SyncReport" not in first.stdout and "nodes indexed" in first.stdout
    assert run("cypher", "MATCH (n) RETURN count(n) AS n", "--db", str(db)).returncode == 0  # a read
    again = run("index", "--db", str(db))
    assert again.stdout.startswith("up to date: 166 nodes indexed, nothing written to"), again.stdout
    write = "MATCH (o:Object {nodeSymbol: 'O3'}) SET o.class = 'armchair' RETURN o.class AS c"
    assert run("cypher", write, "--db", str(db), "--write").returncode == 0
    changed = run("index", "--db", str(db))
    assert "1 re-embedded, 165 unchanged (1 texts embedded)" in changed.stdout, changed.stdout
    found = run("search", "armchair", "--db", str(db), "-k", "1")
    assert "O3" in found.stdout
