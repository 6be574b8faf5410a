"""The LLM commands as a user runs them (subprocess), against a scripted OpenAI-compatible endpoint that
answers slowly: stage lines on stderr with no silence over 2 s, ``--quiet``, ``update``'s total time limit,
``plan`` refusing a missing start before any model call, and a dead endpoint as one error line."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import HYDRA

#: the bar of the issue: an LLM command never leaves stderr silent for longer than this (seconds)
MAX_SILENCE_S = 2.0


@dataclass
class ScriptedEndpoint:
    """An OpenAI-compatible ``/v1/chat/completions`` that answers each request with the next scripted
    (delay in seconds, reply text); once the script is spent it repeats the last entry."""

    url: str = ""
    script: list[tuple[float, str]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def endpoint() -> Iterator[ScriptedEndpoint]:
    state = ScriptedEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            state.requests.append(body)
            delay, text = state.script[min(len(state.requests), len(state.script)) - 1]
            time.sleep(delay)
            payload = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1700000000,
                "model": "scripted-slow",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112},
            }
            data = json.dumps(payload).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (update's time limit)
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr_lines: list[tuple[float, str]]  # (seconds since start, line)
    stdout_stamps: list[float]
    wall_s: float

    @property
    def stderr(self) -> str:
        return "\n".join(line for _, line in self.stderr_lines)

    def longest_silence(self) -> float:
        """The longest time with no output (stderr or stdout), from the first line to the last one; what
        comes after the last line is interpreter teardown (see :meth:`teardown`)."""
        stamps = sorted([t for t, _ in self.stderr_lines] + self.stdout_stamps)
        return max((b - a for a, b in itertools.pairwise(stamps)), default=0.0)

    def teardown(self) -> float:
        """Seconds from the last output line to the end of the process."""
        return self.wall_s - max([t for t, _ in self.stderr_lines] + self.stdout_stamps)


def run_timed(*args: str, url: str = "", timeout: float = 300) -> Run:
    """Run the CLI, time-stamping each stderr line as it arrives."""
    env = {k: v for k, v in os.environ.items() if k not in ("SCENERAG_LLM", "SCENERAG_DEBUG")}
    env |= {"COLUMNS": "200", "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": url or "http://127.0.0.1:9/v1"}
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "scenerag.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.monotonic() - start, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert proc.stdout is not None
    stdout, stamps = [], []
    for line in proc.stdout:
        stamps.append(time.monotonic() - start)
        stdout.append(line)
    proc.wait(timeout=timeout)
    wall = time.monotonic() - start
    reader.join(timeout=10)
    return Run(proc.returncode, "".join(stdout), lines, stamps, wall)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-progress") / "db"
    proc = subprocess.run(
        [sys.executable, "-m", "scenerag.cli", "load", str(HYDRA), "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return path


def test_ask_reports_its_stages_and_is_never_silent(db: Path, endpoint: ScriptedEndpoint) -> None:
    endpoint.script = [(4.0, "MATCH (r:Room) RETURN count(r) AS rooms")]
    run = run_timed(
        "ask", "How many rooms are there?", "--db", str(db), "--llm", "openai:slow", url=endpoint.url
    )
    assert run.returncode == 0, run.stderr
    assert "answer: 5" in run.stdout
    stages = [line.split("  ", 2)[-1] for _, line in run.stderr_lines]
    names = [s.split(":")[0] for s in stages if not s.startswith("... still")]
    for name in (
        "opening the database",
        "loading the model",
        "linking",
        "examples",
        "generating",
        "running query",
        "answer",
    ):
        assert name in names, run.stderr
    assert names.index("linking") < names.index("examples") < names.index("generating")
    assert names.index("generating") < names.index("running query") < names.index("answer")
    assert any(
        "tokens in" in s and "tok/s" in s for s in stages
    )  # generating: 12 tokens in 4.0 s (3.0 tok/s)
    assert any(s.startswith("... still generating") for s in stages)  # the heartbeat during the slow reply
    assert run.stderr_lines[0][0] < 3.0  # the first line comes early
    assert run.longest_silence() <= MAX_SILENCE_S, run.stderr_lines
    assert run.teardown() < 5.0  # after the answer, the process ends (the database is already closed)


def test_quiet_prints_only_the_result(db: Path, endpoint: ScriptedEndpoint) -> None:
    endpoint.script = [(0.0, "MATCH (r:Room) RETURN count(r) AS rooms")]
    run = run_timed(
        "ask",
        "How many rooms are there?",
        "--db",
        str(db),
        "--llm",
        "openai:slow",
        "--quiet",
        url=endpoint.url,
    )
    assert run.returncode == 0 and "answer: 5" in run.stdout
    assert run.stderr_lines == []


def test_update_ends_within_its_time_limit(db: Path, endpoint: ScriptedEndpoint) -> None:
    endpoint.script = [(60.0, "MATCH (n:Object {nodeSymbol: 'O43'}) SET n.class = 'bag'")]
    limit = 4.0
    run = run_timed(
        "update", "the bicycle is actually a bag", "--db", str(db), "--llm", "openai:slow",
        "--timeout", f"{limit:g}", url=endpoint.url,
    )  # fmt: skip
    assert run.returncode == 124, run.stderr
    assert run.wall_s < limit + 6.0  # the limit, plus interpreter start and exit
    errors = [line for _, line in run.stderr_lines if line.startswith("error:")]
    assert errors == [
        "error: update: no write found within the 4 s limit (--timeout); nothing was changed. Raise "
        "--timeout, use a faster --llm, or give the write yourself with --cypher"
    ]
    assert run.longest_silence() <= MAX_SILENCE_S, run.stderr_lines
    assert run.stdout == ""
    count = subprocess.run(
        [sys.executable, "-m", "scenerag.cli", "cypher", "MATCH (o:Object {class: 'bicycle'}) RETURN count(o) AS n",
         "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert json.loads(count.stdout)["rows"] == [{"n": 1}]  # nothing was written, the database reopens


def test_update_through_the_pipeline(db: Path, endpoint: ScriptedEndpoint) -> None:
    endpoint.script = [(0.5, "MATCH (n:Object {nodeSymbol: 'O43'}) SET n.class = 'bag'")]
    run = run_timed(
        "update", "the bicycle is actually a bag", "--db", str(db), "--llm", "openai:slow", url=endpoint.url
    )
    assert run.returncode == 0, run.stderr
    assert (
        "MATCH (n:Object {nodeSymbol: 'O43'}) SET n.class = 'bag'" in run.stdout
        and "not applied" in run.stdout
    )
    prompt = endpoint.requests[0]["messages"][-1]["content"]
    assert "'bicycle' is Object class 'bicycle' (O43)" in prompt
    assert "checking write" in run.stderr


def test_plan_checks_the_start_before_any_model_call(db: Path, endpoint: ScriptedEndpoint) -> None:
    endpoint.script = [(0.0, "Goal: (holding O43)")]
    run = run_timed("plan", "Pick up the bicycle.", "--db", str(db), "--llm", "openai:slow", url=endpoint.url)
    assert run.returncode == 1 and endpoint.requests == []
    errors = [line for _, line in run.stderr_lines if line.startswith("error:")]
    assert errors == [
        "error: the graph has no Agent node to start from: pass --start with a place symbol (e.g. the robot's "
        "current place) or a position x,y,z"
    ]
    run = run_timed(
        "plan",
        "Pick up the bicycle.",
        "--db",
        str(db),
        "--llm",
        "openai:slow",
        "--start",
        "P99999",
        url=endpoint.url,
    )
    assert run.returncode == 1 and endpoint.requests == []
    assert "--start 'P99999' is not a node of the graph" in run.stderr
    assert "start=" not in run.stderr


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["ask", "ground"])
def test_a_dead_endpoint_is_one_error_line(db: Path, command: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    run = run_timed(
        command, "How many rooms are there?", "--db", str(db), "--llm", "openai:dead", "--quiet", url=url
    )
    assert run.returncode == 1 and run.stdout == ""
    assert len(run.stderr_lines) == 1, run.stderr
    line = run.stderr_lines[0][1]
    assert line.startswith("error: no answer: the language model failed: unreachable: cannot reach")
    assert url in line and "warning" not in line and "LLM call(s)" not in line
