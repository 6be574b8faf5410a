"""One graph, many clients (issue 24 item 4): while `scenerag serve` (or a viewer) holds an embedded
database, other `scenerag` commands on the same --db go through it, as a user would run them (subprocesses).
Also: the share file's rules (0600, removed at exit, stale ones detected), and `serve`'s default model
loading in the background with `/health` saying when it is ready.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from conftest import HYDRA
from scenerag import SceneGraph
from scenerag.serve import free_port
from scenerag.serve.share import (
    SHARE_FILE,
    RemoteStore,
    discover,
    open_store_or_shared,
    publish,
    share_store,
    wait_for_share,
)
from scenerag.store import CypherStore, open_store

COUNT = "MATCH (o:Object) RETURN count(o) AS n"


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "SCENERAG_LLM"}, "COLUMNS": "200", **extra}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenerag.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=_env(),
    )


@pytest.fixture()
def db(tmp_path: Path, hydra_graph: SceneGraph) -> Path:
    path = tmp_path / "db"
    with open_store(path) as store:
        store.load(hydra_graph)
    return path


# -- the share file ----------------------------------------------------------------------------------------


def test_share_file_is_private_and_removed_at_exit(tmp_path: Path) -> None:
    with publish(tmp_path, "http://127.0.0.1:1", kind="serve") as info:
        path = tmp_path / SHARE_FILE
        assert path.stat().st_mode & 0o777 == 0o600
        data = json.loads(path.read_text())
        assert data["pid"] == os.getpid() and data["token"] == info.token and len(info.token) >= 32
        assert discover(tmp_path) == info
    assert not path.exists()


def test_stale_and_unsafe_share_files_are_ignored(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    path = tmp_path / SHARE_FILE
    body = {"url": "http://127.0.0.1:1", "token": "t" * 43, "pid": int(dead.stdout), "kind": "serve"}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(body, out)
    assert discover(tmp_path) is None and not path.exists()  # the holder is gone: stale, removed
    path.write_text(json.dumps(body | {"pid": os.getpid()}))
    path.chmod(0o644)
    assert discover(tmp_path) is None  # readable by others: not trusted


# -- the CLI beside a running server ------------------------------------------------------------------------


@pytest.fixture()
def served(db: Path, tmp_path: Path) -> Iterator[tuple[Path, str, subprocess.Popen[str]]]:
    """`scenerag serve` on ``db`` in another process, with the default model spec from SCENERAG_LLM
    (the scripted model: no GGUF load in this test)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "scenerag.cli", "serve", "--db", str(db), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        env=_env(SCENERAG_LLM="scripted"),
    )
    try:
        wait_for_share(db, timeout_s=180)
        yield db, f"http://127.0.0.1:{port}", proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def test_cli_commands_work_beside_a_running_server(
    served: tuple[Path, str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    db, url, proc = served
    ran = _cli("cypher", COUNT, "--db", str(db), "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["rows"] == [{"n": 65}]

    big = _cli(
        "cypher",
        "MATCH (p:MeshPlace), (q:MeshPlace) RETURN p.nodeSymbol AS p, q.nodeSymbol AS q",
        "--db",
        str(db),
        "--json",
        "--max-rows",
        "5000",
        cwd=tmp_path,
    )
    assert big.returncode == 0, big.stderr
    assert len(json.loads(big.stdout)["rows"]) == 5000  # the CLI's own caps, not the server's 1000 rows

    schema = _cli("schema", "--db", str(db), cwd=tmp_path)
    assert schema.returncode == 0 and "Object (65)" in schema.stdout, schema.stderr

    wrong = _cli("cypher", "MATCH (o:Objekt) RETURN o", "--db", str(db), cwd=tmp_path)
    assert wrong.returncode == 1 and "unknown node label 'Objekt'" in wrong.stderr

    write = _cli("cypher", "CREATE (:Object {nodeSymbol: 'O1'})", "--write", "--db", str(db), cwd=tmp_path)
    assert (
        write.returncode == 1 and "does not accept writes" in write.stderr and "--allow-write" in write.stderr
    )

    load = _cli("load", str(HYDRA), "--db", str(db), cwd=tmp_path)
    assert load.returncode == 1 and "held by `scenerag serve`" in load.stderr, load.stderr

    exported = tmp_path / "export.json"
    export = _cli("export", "--db", str(db), str(exported), cwd=tmp_path)
    assert export.returncode == 0 and "166 nodes" in export.stdout, export.stderr

    remote = open_store_or_shared(db, create=False)  # what the viewer opens beside a server
    assert isinstance(remote, RemoteStore) and remote.query(COUNT).rows == [{"n": 65}]
    holder = discover(db)
    with share_store(remote, db) as shared:
        assert shared is None and discover(db) == holder  # the server's share file stays

    health = httpx2.get(url + "/health", timeout=10).json()
    assert health["load"]["llm"]["state"] == "ready"  # `serve` loads the default model spec at start
    assert health["details"]["llm"] == "scripted"

    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert not (db / SHARE_FILE).exists()  # removed at exit
    alone = _cli("cypher", COUNT, "--db", str(db), "--json", cwd=tmp_path)  # opens the database itself again
    assert alone.returncode == 0 and json.loads(alone.stdout)["rows"] == [{"n": 65}], alone.stderr


def test_a_process_holding_the_database_can_share_it(db: Path, tmp_path: Path) -> None:
    """What the viewer does: it holds the store and shares it on a loopback port for the block."""
    store: CypherStore = open_store(db, create=False)
    try:
        with share_store(store, db) as info:
            assert info is not None and info.kind == "view"
            ran = _cli("cypher", COUNT, "--db", str(db), "--json", cwd=tmp_path)
            assert ran.returncode == 0, ran.stderr
            assert json.loads(ran.stdout)["rows"] == [{"n": 65}]
            unauthorised = httpx2.post(info.url + "/cypher", json={"query": COUNT}, timeout=10)
            assert unauthorised.status_code == 401  # only the token in the 0600 file opens it
        assert not (db / SHARE_FILE).exists()
    finally:
        store.close()
    with open_store(db, create=False) as again:  # released: a direct open works again
        assert again.query(COUNT).rows == [{"n": 65}]
