"""The JVM settings of a long-running server (``scenerag.store.arcade.use_server_jvm``): a heap committed at
start with a young generation of a fixed size, no explicit (JPype-requested) full collections, and flags
the user set in ``ARCADEDB_JVM_ARGS`` left alone."""

from __future__ import annotations

from scenerag.store import arcade


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
