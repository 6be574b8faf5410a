"""The embedded backend's Java bulk loader: the shipped jar matches its source, and misuse is a clear error."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

import scenerag.store.arcade as arcade

JAVA_DIR = Path(arcade.__file__).with_name("java")


def test_jar_is_built_from_the_current_source() -> None:
    digest = hashlib.sha256()  # as scripts/build_java.py's source_hash
    for source in sorted((JAVA_DIR / "scenerag").rglob("*.java")):
        digest.update(source.relative_to(JAVA_DIR).as_posix().encode() + b"\0")
        digest.update(source.read_bytes())
    with zipfile.ZipFile(JAVA_DIR / "scenerag-arcade.jar") as jar:
        manifest = jar.read("META-INF/MANIFEST.MF").decode()
        names = jar.namelist()
    recorded = dict(line.split(": ", 1) for line in manifest.splitlines() if ": " in line)
    assert recorded["Scenerag-Source-SHA256"] == digest.hexdigest(), (
        "a source under java/scenerag changed since the jar was built: run python scripts/build_java.py"
    )
    assert {"scenerag/arcade/BulkLoader.class", "scenerag/arcade/Calls.class"} <= set(names)
    # only scenerag's classes ship; the ArcadeDB stubs are compile-time only
    assert all(n.startswith(("META-INF/", "scenerag/")) for n in names)


def test_loader_rejects_bad_columns_and_edges(tmp_path: Path) -> None:
    import arcadedb_embedded as adb
    import jpype

    arcade._start_jvm()
    db = adb.create_database(str(tmp_path / "db"))
    try:
        db._java_db.getSchema().createVertexType("Thing")
        db._java_db.getSchema().createEdgeType("LINK")
        strings, doubles, ints = (
            jpype.JArray(jpype.JString),
            jpype.JArray(jpype.JDouble),
            jpype.JArray(jpype.JInt),
        )
        with db.graph_batch(use_wal=False) as batch:
            loader = arcade._bulk_loader_class()(batch._java_graph_batch, 2, 10.0)
            with pytest.raises(Exception, match="column lengths differ"):
                loader.addVertices("Thing", strings(["A", "B"]), strings(["x"]), doubles([0.0] * 6), None)
            first = loader.addVertices(
                "Thing", strings(["A", "B"]), strings(["x", "y"]), doubles([0.0, 0, 0, 15, -5, 1]), None
            )
            assert (first, loader.vertexCount()) == (0, 2)
            with pytest.raises(Exception, match="names vertex index 5, only 2 vertices exist"):
                loader.addEdges("LINK", ints([0]), ints([5]), None)
            loader.addEdges("LINK", ints([0]), ints([1]), strings(['{"w": 2}']))
        rows = list(
            db.query(
                "sql", "SELECT nodeSymbol, cell, out('LINK').nodeSymbol AS n FROM Thing ORDER BY nodeSymbol"
            )
        )
        got = [(r.get("nodeSymbol"), r.get("cell"), list(r.get("n"))) for r in rows]
        assert got == [("A", "0_0", ["B"]), ("B", "1_-1", [])]
    finally:
        db.close()
