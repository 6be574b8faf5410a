"""Ctrl-C (SIGINT) and SIGTERM during a big `scenerag load` and during a long `scenerag cypher` query, run
as a user would (subprocess): the process exits promptly with status 128 + signal and one clear line, the
JVM leaves no crash log (hs_err_pid*.log), and the graph loaded before is intact and queryable."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scenerag.graph.io import write_scene_graph
from scenerag.sim.outdoor import generate_outdoor_graph

pytestmark = pytest.mark.slow

BIG_PLACES = 200_000  # big enough that the load is still running when the signal arrives
LONG_QUERY = (
    "MATCH (a:Place), (b:Place), (c:Place) "
    "WHERE a.center.x + b.center.x + c.center.x < -1e9 RETURN count(*) AS n"
)  # ~10^9 rows on the small graph: far longer than the test waits
SIGNALS = [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM")]
# Seconds between the load's start and the signal: early (types and first vertices) and well inside it.
LOAD_SIGNALS = [
    pytest.param(signal.SIGINT, 0.5, id="SIGINT"),
    pytest.param(signal.SIGTERM, 3.0, id="SIGTERM"),
]


def _env() -> dict[str, str]:
    drop = {"SCENERAG_DATA", "ARCADEDB_JVM_ERROR_FILE"}
    return {k: v for k, v in os.environ.items() if k not in drop} | {"COLUMNS": "200"}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenerag.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=_env(),
    )


def _spawn(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scenerag.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=_env(),
    )


def _wait_for(condition, proc: subprocess.Popen[str], what: str, timeout_s: float = 240.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the child exited ({proc.returncode}) before {what}: {out[-500:]} {err[-1000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.communicate()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def _has_open_file_under(pid: int, root: Path) -> bool:
    """True once process ``pid`` holds a file under ``root`` open (the embedded database is open)."""
    prefix = str(root.resolve()) + os.sep
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                return True
        except OSError:
            continue
    return False


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("signal-graphs")
    small = generate_outdoor_graph(n_places=1_000, n_regions=4, n_objects=20)
    big = generate_outdoor_graph(
        n_places=BIG_PLACES, n_regions=BIG_PLACES // 1_000, n_objects=BIG_PLACES // 50
    )
    write_scene_graph(small, root / "small.json")
    write_scene_graph(big, root / "big.json")
    return {"small": root / "small.json", "big": root / "big.json"}


@pytest.fixture(scope="module")
def loaded(files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A database holding the small graph (loaded by the CLI) and its node count."""
    root = tmp_path_factory.mktemp("signal-db")
    proc = _cli("load", str(files["small"]), "--db", str(root / "db"), cwd=root)
    assert proc.returncode == 0, proc.stderr
    count = _count(root / "db", root)
    assert count == 1_000 + 4 + 20
    return root / "db", count


@pytest.fixture
def db(loaded: tuple[Path, int], tmp_path: Path) -> tuple[Path, int]:
    """A private copy of the loaded database for one test."""
    source, count = loaded
    shutil.copytree(source, tmp_path / "db")
    return tmp_path / "db", count


def _count(db: Path, cwd: Path) -> int:
    proc = _cli("cypher", "MATCH (n) RETURN count(n) AS n", "--db", str(db), "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return int(json.loads(proc.stdout)["rows"][0]["n"])


def _check_exit(proc: subprocess.Popen[str], sig: signal.Signals, sent_at: float, limit_s: float) -> str:
    try:
        out, err = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"no exit within {limit_s} s of {sig.name}: {out[-500:]} {err[-1000:]}")
    took = time.monotonic() - sent_at
    assert proc.returncode == 128 + sig, (proc.returncode, out[-500:], err[-2000:])
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"interrupted ({sig.name})"), err[-2000:]
    assert "Traceback" not in err and "hs_err" not in err + out, err[-2000:]
    print(f"{sig.name}: exit {proc.returncode} {took:.1f} s after the signal: {last}")
    return last


def _check_intact(db: Path, count: int, generation: str, cwd: Path) -> None:
    assert not list(cwd.rglob("hs_err_pid*.log")), "the JVM wrote a crash log"
    assert (db / "CURRENT").read_text().strip() == generation
    assert sorted(p.name for p in db.glob("gen-*")) == [generation], "the interrupted load left files"
    assert _count(db, cwd) == count


@pytest.mark.parametrize(("sig", "delay_s"), LOAD_SIGNALS)
def test_signal_during_load(
    sig: signal.Signals, delay_s: float, files: dict[str, Path], db: tuple[Path, int], tmp_path: Path
) -> None:
    path, count = db
    generation = (path / "CURRENT").read_text().strip()
    proc = _spawn("load", str(files["big"]), "--db", str(path), cwd=tmp_path)
    # The load has started once it creates the next generation's database beside the live one.
    _wait_for(
        lambda: any(p.parent.name != generation for p in path.glob("gen-*/db")), proc, "the load started"
    )
    time.sleep(delay_s)
    assert proc.poll() is None, "the load ended before the signal"
    sent_at = time.monotonic()
    proc.send_signal(sig)
    last = _check_exit(proc, sig, sent_at, limit_s=120)
    assert last.endswith(f"the previous graph in {path} is unchanged"), last
    _check_intact(path, count, generation, tmp_path)


@pytest.mark.parametrize("sig", SIGNALS)
def test_signal_during_long_query(sig: signal.Signals, db: tuple[Path, int], tmp_path: Path) -> None:
    path, count = db
    generation = (path / "CURRENT").read_text().strip()
    proc = _spawn("cypher", LONG_QUERY, "--db", str(path), "--timeout", "600", cwd=tmp_path)
    # The database is open (then the query starts within milliseconds); give it a second to be running.
    _wait_for(lambda: _has_open_file_under(proc.pid, path), proc, "the database was opened")
    time.sleep(1.5)
    assert proc.poll() is None, "the query ended before the signal"
    sent_at = time.monotonic()
    proc.send_signal(sig)
    last = _check_exit(proc, sig, sent_at, limit_s=30)  # cancelled, not run to its 600 s timeout
    assert last.endswith("the query was cancelled"), last
    _check_intact(path, count, generation, tmp_path)
