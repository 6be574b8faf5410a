"""Fuzzing the scene-graph importers: malformed files give a clear ``SceneRagError``, never a crash.

Native JSON documents are generated with hypothesis (structure-aware: near-valid documents with fields of
the wrong type, missing, out of range); Hydra/spark_dsg files are mutated copies of the real example,
loaded in a child process so a native crash would be caught as a failure instead of killing pytest.
"""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HYDRA
from scenerag import SceneGraph, read_scene_graph
from scenerag.errors import SceneRagError
from scenerag.graph.io.native import graph_to_dict

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
)


def base_document() -> dict:
    g = SceneGraph()
    g.add("R1", "Room", "kitchen", (0, 0, 0), description="a kitchen")
    g.add("P1", "MeshPlace", "mesh_place", (1, 0, 0))
    g.add(
        "O1", "Object", "mug", (1, 0.2, 0.9), bbox_center=(1, 0.2, 0.9), bbox_dim=(0.1, 0.1, 0.1), color="red"
    )
    g.add_edge("R1", "P1", "CONTAINS")
    g.add_edge("P1", "O1", "CONTAINS")
    return graph_to_dict(g)


@st.composite
def mutated_native(draw: st.DrawFn) -> dict:
    doc = base_document()
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["top", "node", "edge", "attr", "drop"]))
        if where == "top":
            doc[draw(st.sampled_from(["format", "version", "nodes", "edges", "metadata"]))] = draw(JUNK)
        elif where == "node" and isinstance(doc.get("nodes"), list) and doc["nodes"]:
            node = doc["nodes"][draw(st.integers(0, len(doc["nodes"]) - 1))]
            if isinstance(node, dict):
                node[
                    draw(st.sampled_from(["symbol", "label", "class", "position", "bbox", "description"]))
                ] = draw(JUNK)
        elif where == "edge" and isinstance(doc.get("edges"), list) and doc["edges"]:
            edge = doc["edges"][draw(st.integers(0, len(doc["edges"]) - 1))]
            if isinstance(edge, dict):
                edge[draw(st.sampled_from(["source", "target", "type", "attributes"]))] = draw(JUNK)
        elif (
            where == "attr"
            and isinstance(doc.get("nodes"), list)
            and doc["nodes"]
            and isinstance(doc["nodes"][-1], dict)
        ):
            doc["nodes"][-1]["attributes"] = {draw(st.text(max_size=6)): draw(JUNK)}
        elif isinstance(doc.get("nodes"), list) and doc["nodes"]:
            doc["nodes"].pop(draw(st.integers(0, len(doc["nodes"]) - 1)))
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=mutated_native())
def test_native_documents_never_crash(tmp_path: Path, doc: dict) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    try:
        graph = read_scene_graph(path)
    except SceneRagError as exc:
        assert str(path) in str(exc)  # every error names the file
        return
    for node in graph.nodes():
        node.validate()  # whatever loads satisfies the model's contract


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(tmp_path: Path, data: bytes) -> None:
    for suffix in (".json", ".sparkdsg"):
        path = tmp_path / f"g{suffix}"
        path.write_bytes(data)
        with contextlib.suppress(SceneRagError):
            read_scene_graph(path)


def test_mutated_hydra_files_give_clear_errors(tmp_path: Path) -> None:
    doc = json.loads(HYDRA.read_text())
    values = [None, "x", -1, [], {}, [1, 2], 1e308, 2**70, 0]
    files = []
    for seed in range(40):
        import random

        rng = random.Random(seed)
        d = copy.deepcopy(doc)
        for _ in range(rng.randint(1, 4)):
            pick = rng.random()
            if not (
                isinstance(d.get("nodes"), list)
                and d["nodes"]
                and isinstance(d.get("edges"), list)
                and d["edges"]
            ):
                break
            with contextlib.suppress(
                TypeError, AttributeError, IndexError, KeyError
            ):  # mutator vs odd shapes
                if pick < 0.3:
                    n = rng.choice(d["nodes"])
                    n[rng.choice(list(n))] = rng.choice(values)
                elif pick < 0.5:
                    a = rng.choice(d["nodes"]).get("attributes") or {}
                    if a:
                        a[rng.choice(list(a))] = rng.choice(values)
                elif pick < 0.7:
                    e = rng.choice(d["edges"])
                    e[rng.choice(list(e))] = rng.choice(values)
                elif pick < 0.8:
                    d[rng.choice(list(d))] = rng.choice(values)
                else:
                    del d["nodes"][rng.randrange(len(d["nodes"]))]
        path = tmp_path / f"m{seed}.json"
        path.write_text(json.dumps(d))
        files.append(str(path))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(HYDRA.read_text()[: len(HYDRA.read_text()) // 2])
    files.append(str(truncated))
    script = textwrap.dedent(
        f"""
        from scenerag import read_scene_graph
        from scenerag.errors import SceneRagError
        for f in {files!r}:
            try:
                read_scene_graph(f)
                print("OK", f)
            except SceneRagError as e:
                assert f in str(e), (f, str(e))
                print("ERR", f)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcomes = proc.stdout.split()
    assert outcomes.count("OK") + outcomes.count("ERR") == len(files)
    assert outcomes.count("ERR") >= len(files) // 2  # most mutations are caught, not silently accepted
