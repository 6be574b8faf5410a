"""The JVM settings of a long-running server (``scenerag.store.arcade.use_server_jvm``): a heap committed at
start with a young generation of a fixed size, no explicit (JPype-requested) full collections, and flags
the user set in ``ARCADEDB_JVM_ARGS`` left alone; ``scenerag view``, which serves a database too, gets them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scenerag import SceneGraph
from scenerag.serve import free_port
from scenerag.serve.share import wait_for_share
from scenerag.store import arcade, open_store


def test_server_flags_by_default() -> None:
    assert arcade._server_jvm_args("4g", "") == [
        f"-Xms{arcade.SERVER_HEAP_MIB}m",
        f"-Xmn{arcade.SERVER_YOUNG_MIB}m",
        "-XX:-UseAdaptiveSizePolicy",
        "-XX:+AlwaysPreTouch",
        "-XX:+DisableExplicitGC",
    ]


def test_user_flags_win() -> None:
    flags = arcade._server_jvm_args("4g", "-Xms2g -XX:+UseAdaptiveSizePolicy -XX:-DisableExplicitGC")
    assert flags == [f"-Xmn{arcade.SERVER_YOUNG_MIB}m", "-XX:+AlwaysPreTouch"]
    # another collector: no Parallel-only flag
    assert "-XX:-UseAdaptiveSizePolicy" not in arcade._server_jvm_args("4g", "-XX:+UseG1GC")
    assert "-XX:-UseAdaptiveSizePolicy" in arcade._server_jvm_args("4g", "-XX:+UseParallelGC")


def test_no_sizing_for_a_small_or_unreadable_heap() -> None:
    assert arcade._server_jvm_args("768m", "") == ["-XX:+DisableExplicitGC"]
    assert arcade._server_jvm_args("4g", "-Xmx300m") == ["-XX:+DisableExplicitGC"]
    assert arcade._server_jvm_args("lots", "") == ["-XX:+DisableExplicitGC"]
    assert arcade._server_jvm_args("1073741824", "")[0] == f"-Xms{arcade.SERVER_HEAP_MIB}m"


def test_heap_sizes() -> None:
    assert arcade._heap_bytes("4g") == 4 * 1024**3
    assert arcade._heap_bytes("512M") == 512 * 1024**2
    assert arcade._heap_bytes("2048") == 2048
    assert arcade._heap_bytes("4 gb") is None


def _young_generation_max_bytes(pid: int) -> int | None:
    """``sun.gc.generation.0.maxCapacity`` of JVM process ``pid`` from its HotSpot performance-counter file
    (``/tmp/hsperfdata_<user>/<pid>``: a header, then entries of length, name offset, vector length, type,
    flags, units, variability, data offset); None while the file or the counter is missing."""
    import getpass
    import struct
    import tempfile

    path = Path(tempfile.gettempdir()) / f"hsperfdata_{getpass.getuser()}" / str(pid)
    try:
        data = path.read_bytes()
        order = "<" if data[4] == 1 else ">"
        entry, count = struct.unpack_from(order + "ii", data, 24)
        for _ in range(count):
            length, name_at, vector, kind, _f, _u, _v, data_at = struct.unpack_from(
                order + "iiiBBBBi", data, entry
            )
            name = data[entry + name_at : data.index(b"\0", entry + name_at)]
            if name == b"sun.gc.generation.0.maxCapacity" and vector == 0 and kind == ord("J"):
                return int(struct.unpack_from(order + "q", data, entry + data_at)[0])
            entry += length
    except (OSError, IndexError, struct.error, ValueError):
        return None
    return None


def test_the_viewer_serving_a_database_gets_the_server_heap(tmp_path: Path, hydra_graph: SceneGraph) -> None:
    """`scenerag view` holds and serves the database for as long as it runs, so the JVM it starts has the
    server's heap: a young generation of a fixed :data:`~scenerag.store.arcade.SERVER_YOUNG_MIB` (with the
    adaptive collector's defaults it could grow to a third of the 4 GiB heap)."""
    db = tmp_path / "db"
    with open_store(db) as store:
        store.load(hydra_graph)
    env = {k: v for k, v in os.environ.items() if k not in ("ARCADEDB_JVM_ARGS", "SCENERAG_JVM_HEAP")}
    view = ["view", "--llm", "none", "--port", str(free_port()), "--db", str(db)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "scenerag.cli", *view],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        wait_for_share(db, timeout_s=120)  # the viewer opened the store (the JVM runs) and shares it
        assert _young_generation_max_bytes(proc.pid) == arcade.SERVER_YOUNG_MIB * 1024**2
    finally:
        proc.terminate()
        proc.wait(timeout=30)
