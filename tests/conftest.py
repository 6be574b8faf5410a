"""Shared fixtures: the example scene graphs, an in-process ArcadeDB Bolt server, and both store backends."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FunctionType
from typing import Any

import pytest

from scenerag import SceneGraph, read_scene_graph
from scenerag.agents import CypherAgent, CypherAgentConfig
from scenerag.llm import ScriptedChatModel
from scenerag.store import CypherStore, open_store

#: the shared example scene graphs: $SCENERAG_DATA, else shared/data beside the checkout (never copied in)
DATA = (
    Path(os.environ["SCENERAG_DATA"])
    if os.environ.get("SCENERAG_DATA")
    else Path(__file__).resolve().parents[1].parent / "shared" / "data"
)
HYDRA = DATA / "hydra_small_indoor_dsg.json"
APARTMENT = DATA / "spark_dsg_apartment_dsg.json"
BOLT_PASSWORD = "scenerag-test-pw"
_DATA_NAMES = {"DATA": DATA, "HYDRA": HYDRA, "APARTMENT": APARTMENT}


def _data_used(code: CodeType, module: dict[str, object], seen: set[CodeType]) -> set[str]:
    """The data constants ``code`` names, also through nested functions and the module's own helpers."""
    if code in seen:
        return set()
    seen.add(code)
    used = set(code.co_names) & set(_DATA_NAMES)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            used |= _data_used(const, module, seen)
    for name in code.co_names:
        helper = module.get(name)
        if isinstance(helper, FunctionType) and helper.__module__ == module.get("__name__"):
            used |= _data_used(helper.__code__, module, seen)
    return used


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that reads the shared example files (itself, through a helper of its module or through one of
    its fixtures) skips, naming them, where the checkout has none beside it, e.g. a fresh clone in a
    temporary folder. Runs before any fixture is set up."""
    function = getattr(item, "function", None)
    if function is None:
        return
    used = _data_used(function.__code__, function.__globals__, set())
    for defs in item._fixtureinfo.name2fixturedefs.values():
        for fixture in defs:
            code = getattr(fixture.func, "__code__", None)
            if code is not None:
                used |= _data_used(code, fixture.func.__globals__, set())
    missing = sorted(str(_DATA_NAMES[n]) for n in used if not _DATA_NAMES[n].exists())
    if missing:
        pytest.skip(f"test data missing: {', '.join(missing)} (set $SCENERAG_DATA to the shared data folder)")


@pytest.fixture(scope="session")
def hydra_graph() -> SceneGraph:
    if not HYDRA.exists():
        pytest.skip(f"test data missing: {HYDRA}")
    return read_scene_graph(HYDRA)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def bolt_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ArcadeDB server with its Bolt plugin, started in-process on 127.0.0.1."""
    import arcadedb_embedded as adb

    from scenerag.store.arcade import _start_jvm

    _start_jvm()
    root = tmp_path_factory.mktemp("arcadedb-server")
    bolt_port = _free_port()
    server = adb.ArcadeDBServer(
        root_path=str(root),
        root_password=BOLT_PASSWORD,
        config={
            "host": "127.0.0.1",
            "http_port": _free_port(),
            "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            "bolt_port": bolt_port,
        },
    )
    server.start()
    server.create_database("scenes")
    try:
        yield f"bolt://root:{BOLT_PASSWORD}@127.0.0.1:{bolt_port}/scenes"
    finally:
        server.stop()


def wait_for(
    condition: Callable[[], bool], what: str, timeout: float = 30.0, detail: Callable[[], str] | None = None
) -> None:
    """Wait until ``condition`` holds; fail the test (never hang) after ``timeout`` seconds, with
    ``detail()`` in the message when given."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f": {detail()}" if detail else ""))
        time.sleep(0.02)


def settle_jvm(timeout: float = 30.0) -> None:
    """Collect Python's and the JVM's garbage and wait until JPype's reference-queue thread is idle, for a
    test that times requests: that thread releases the proxies earlier tests left behind and runs a full
    Python collection after every Java one, holding the GIL (seen in a full suite on a fresh checkout: it
    used 8.4 of 9.7 s while a server test waited; a full collection walks the whole unfrozen Python heap of
    the test process, see docs/server.md)."""
    import gc

    import jpype

    if not jpype.isJVMStarted():
        return
    gc.collect()
    jpype.JClass("java.lang.System").gc()
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return

    def queue_ticks() -> int:
        total = 0
        for task in tasks.iterdir():
            try:
                if (task / "comm").read_text().startswith("Python Referenc"):
                    fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                    total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                continue
        return total

    deadline = time.monotonic() + timeout
    before = queue_ticks()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = queue_ticks()
        if now - before <= 2:  # at most 20 ms of CPU in 250 ms: idle
            return
        before = now


@contextmanager
def served_heap() -> Iterator[None]:
    """The heap a test's in-process server runs with, as ``scenerag serve`` has it: JPype settled and the
    objects alive now frozen (:func:`scenerag.serve.run.freeze_heap`), so the full Python collections JPype
    runs after each Java one do not walk what earlier tests left in this process; unfrozen afterwards."""
    import gc

    from scenerag.serve.run import freeze_heap

    settle_jvm()
    freeze_heap()
    try:
        yield
    finally:
        gc.unfreeze()


def one_value(store: CypherStore, query: str) -> str:
    """The single value ``query`` returns (asserts one row), as text."""
    rows = store.query(query).rows
    assert len(rows) == 1, rows
    return str(next(iter(rows[0].values())))


def hydra_store_fixture(name: str) -> Any:
    """A module-scoped ``store`` fixture: the Hydra example in a fresh embedded store of its own (for read-only
    agent tests; write ``store = hydra_store_fixture("name")`` at a module's top level)."""

    @pytest.fixture(scope="module")
    def store(tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph) -> Iterator[CypherStore]:
        s = open_store(tmp_path_factory.mktemp(name) / "db")
        s.load(hydra_graph)
        yield s
        s.close()

    return store


def symbols_of_class(graph: SceneGraph, cls: str, label: str = "Object") -> list[str]:
    """Sorted symbols of ``graph``'s ``label`` nodes of class ``cls``."""
    return sorted(n.symbol for n in graph.nodes(label) if n.class_name == cls)


def scripted_agent(
    store: CypherStore, replies: list[str], **cfg: Any
) -> tuple[CypherAgent, ScriptedChatModel]:
    """A Cypher agent over ``store`` whose model replies ``replies`` in turn (no embedder), and the model.

    One candidate per round, no planning, no compare form and no time budget unless ``cfg`` asks for them,
    so each reply is one round whatever the machine's load."""
    model = ScriptedChatModel(replies, supports_tools=False)
    settings: dict[str, Any] = {
        "candidates": 1,
        "plan": False,
        "compare_form": False,
        "time_budget_s": None,
        "work_budget_s": None,
        **cfg,
    }
    return CypherAgent(model, store, CypherAgentConfig(embedder="none", **settings)), model


def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> CypherStore:
    if kind == "arcade":
        return open_store(tmp_path / "db")
    return open_store(request.getfixturevalue("bolt_uri"))


@pytest.fixture(scope="module", params=["arcade", "bolt"])
def loaded_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph
) -> Iterator[CypherStore]:
    """The Hydra example loaded into each backend (read-only tests share it)."""
    store = make_store(request.param, request, tmp_path_factory.mktemp(f"store-{request.param}"))
    store.load(hydra_graph)
    yield store
    store.close()


@pytest.fixture(params=["arcade", "bolt"])
def fresh_store(
    request: pytest.FixtureRequest, tmp_path: Path, hydra_graph: SceneGraph
) -> Iterator[CypherStore]:
    """A store of each backend with the Hydra example freshly loaded (for tests that write)."""
    store = make_store(request.param, request, tmp_path)
    store.load(hydra_graph)
    yield store
    store.close()


@pytest.fixture(scope="session")
def seq_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-floor, 8-room synthetic building rendered to 240 Replica-layout frames, once per session."""
    pytest.importorskip("open3d")
    from scenerag.sim.building import BuildingConfig, generate_building
    from scenerag.sim.render import write_sequence

    root = tmp_path_factory.getbasetemp() / "build-small-sequence"
    if not (root / ".complete").exists():
        building = generate_building(BuildingConfig(n_floors=2, rooms_per_floor=2, seed=3))
        write_sequence(building, root, layout="replica", n_frames=240)
        (root / ".complete").touch()
    return root
