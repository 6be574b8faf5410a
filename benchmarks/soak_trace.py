"""Tracing for ``server_soak.py --trace DIR``: what the server process was doing when a ``/health`` poll was slow.

Two halves:

* :func:`server_env` gives the server process an environment that turns on (a) the JVM's unified logging
  of collections and safepoints (``DIR/jvm-gc.log``) and of JIT compilations (``DIR/jvm-jit.log``), both
  stamped with wall-clock time, and (b) :func:`install_probe`, run in the server at interpreter start by a
  ``sitecustomize`` module in ``DIR/py`` put first on its ``PYTHONPATH``: Python's collections (start, length,
  generation, thread) from ``gc.callbacks``, and (``--trace-sampler``) a sampler thread that wakes every
  ``SAMPLE_S`` and logs each time it could not run for longer than ``GAP_S`` (the GIL held by another
  thread, or the process not scheduled), with every Python thread's innermost frames and CPU priority at
  the end of the gap. Both go to ``DIR/py-trace.jsonl``.
* :func:`align` reads those files after the run and, for every slow poll of the soak's timeline, lists the
  events whose time overlaps it.

The sampler costs a wake-up every ``SAMPLE_S`` (one GIL hand-off), so it is off unless asked for; the JVM's
logs and the collection callbacks cost little (the records ``server_soak-warm-up-*.json`` were taken with
them on).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

#: the sampler's period and the gap it reports (s)
SAMPLE_S = 0.002
GAP_S = 0.020
PROBE_FILE = "py-trace.jsonl"
ENV_KEY = "SCENERAG_SOAK_TRACE"
SAMPLER_KEY = "SCENERAG_SOAK_TRACE_SAMPLER"


def server_env(trace_dir: Path, env: dict[str, str], *, sampler: bool = False) -> dict[str, str]:
    """``env`` with the JVM logs and the Python probe of ``trace_dir`` turned on (see module docstring);
    the probe's sampler thread only with ``sampler`` (its wake-ups take the GIL, which changes what it
    measures a little; the collections' callbacks cost nothing worth counting)."""
    trace_dir = trace_dir.resolve()
    py = trace_dir / "py"
    py.mkdir(parents=True, exist_ok=True)
    (py / "sitecustomize.py").write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "import soak_trace\n"
        f"soak_trace.install_probe(os.environ[{ENV_KEY!r}])\n"
        "sys.path.pop(0)\n"
    )
    deco = "time,uptimemillis,tid,tags"
    jvm = (
        f"-Xlog:gc*,safepoint:file={trace_dir / 'jvm-gc.log'}:{deco} "
        f"-Xlog:jit+compilation=debug:file={trace_dir / 'jvm-jit.log'}:{deco} "
        # names the threads that take longer than 20 ms to reach a safepoint (in the GC/safepoint log)
        "-XX:+UnlockDiagnosticVMOptions -XX:+SafepointTimeout -XX:SafepointTimeoutDelay=20"
    )
    out = dict(env)
    out["ARCADEDB_JVM_ARGS"] = (env.get("ARCADEDB_JVM_ARGS", "") + " " + jvm).strip()
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(py), env.get("PYTHONPATH", "")) if p)
    out[ENV_KEY] = str(trace_dir)
    out[SAMPLER_KEY] = "1" if sampler else ""
    return out


def install_probe(trace_dir: str) -> None:
    """In the server: log Python's collections and the sampler's gaps to ``trace_dir/py-trace.jsonl``."""
    import gc

    out = open(Path(trace_dir) / PROBE_FILE, "a", buffering=1)  # noqa: SIM115 (the process's life)
    lock = threading.Lock()
    started: dict[int, float] = {}

    def write(row: dict[str, Any]) -> None:
        with lock:
            out.write(json.dumps(row) + "\n")

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        tid = threading.get_native_id()
        if phase == "start":
            started[tid] = time.time()
            return
        t0 = started.pop(tid, None)
        if t0 is None:
            return
        ms = (time.time() - t0) * 1000.0
        if info["generation"] == 2 or ms >= 2.0:
            write(
                {
                    "ev": "pygc",
                    "t": t0,
                    "ms": round(ms, 2),
                    "gen": info["generation"],
                    "collected": info["collected"],
                    "thread": threading.current_thread().name,
                    "tid": tid,
                }
            )

    gc.callbacks.append(on_gc)

    def frames() -> list[dict[str, Any]]:
        names = {t.ident: t for t in threading.enumerate()}
        rows = []
        for ident, frame in sys._current_frames().items():
            thread = names.get(ident)
            if thread is None or thread is threading.current_thread():
                continue
            stack = []
            f: Any = frame
            while f is not None and len(stack) < 4:
                stack.append(f"{Path(f.f_code.co_filename).name}:{f.f_lineno}:{f.f_code.co_name}")
                f = f.f_back
            nice = None
            if thread.native_id is not None:
                with contextlib.suppress(OSError):
                    nice = os.getpriority(os.PRIO_PROCESS, thread.native_id)
            rows.append({"thread": thread.name, "tid": thread.native_id, "nice": nice, "stack": stack})
        return rows

    def sample() -> None:
        last = time.time()
        while True:
            time.sleep(SAMPLE_S)
            now = time.time()
            if now - last > GAP_S:
                write({"ev": "gap", "t": last, "ms": round((now - last) * 1000.0, 1), "threads": frames()})
            last = time.time()

    if os.environ.get(SAMPLER_KEY):
        threading.Thread(target=sample, name="soak-trace-sampler", daemon=True).start()


_LOG_LINE = re.compile(
    r"^\[(?P<time>[^\]]+)\]\[(?P<up>\d+)ms\]\[(?P<tid>\d+)\]\[(?P<tags>[^\]]+)\s*\] (?P<msg>.*)$"
)
_PAUSE = re.compile(r"(?P<what>Pause \w+(?: \([^)]*\))*).* (?P<ms>[\d.]+)ms$")
_SAFEPOINT = re.compile(
    r"Safepoint \"(?P<op>[^\"]+)\".*Reaching safepoint: (?P<reach>\d+) ns.*?At safepoint: (?P<at>\d+) ns.*?Total: (?P<total>\d+) ns"
)


def _jvm_time(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("+0000", "+00:00")).timestamp()


def jvm_events(trace_dir: Path) -> list[dict[str, Any]]:
    """Collections, safepoints and JIT compilations from the JVM's logs: {ev, t (epoch s), ms, what}."""
    events: list[dict[str, Any]] = []
    gc_log = trace_dir / "jvm-gc.log"
    if gc_log.is_file():
        for line in gc_log.read_text(errors="replace").splitlines():
            m = _LOG_LINE.match(line)
            if not m:
                continue
            end = _jvm_time(m["time"])
            if sp := _SAFEPOINT.search(m["msg"]):
                ms = int(sp["total"]) / 1e6
                events.append(
                    {
                        "ev": "safepoint",
                        "t": end - ms / 1000.0,
                        "ms": round(ms, 2),
                        "what": f"{sp['op']} (reaching {int(sp['reach']) / 1e6:.2f} ms)",
                    }
                )
            elif m["tags"].strip() == "gc" and (p := _PAUSE.search(m["msg"])):
                ms = float(p["ms"])
                events.append({"ev": "jvmgc", "t": end - ms / 1000.0, "ms": ms, "what": p["what"]})
    jit_log = trace_dir / "jvm-jit.log"
    if jit_log.is_file():
        for line in jit_log.read_text(errors="replace").splitlines():
            m = _LOG_LINE.match(line)
            if m:
                events.append({"ev": "jit", "t": _jvm_time(m["time"]), "ms": 0.0, "what": m["msg"][:120]})
    return events


def probe_events(trace_dir: Path) -> list[dict[str, Any]]:
    path = trace_dir / PROBE_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def align(
    trace_dir: Path, polls: list[tuple[float, float]], slow_ms: float = 50.0, margin_s: float = 0.05
) -> list[dict[str, Any]]:
    """For each poll (wall-clock start s, latency ms) slower than ``slow_ms``: the JVM's and the probe's
    events overlapping it (``margin_s`` either side), and how many JIT compilations the JVM logged in it."""
    events = sorted(jvm_events(trace_dir) + probe_events(trace_dir), key=lambda e: e["t"])
    out = []
    for start, ms in polls:
        if ms <= slow_ms:
            continue
        lo, hi = start - margin_s, start + ms / 1000.0 + margin_s
        near = [e for e in events if e["t"] <= hi and e["t"] + e.get("ms", 0.0) / 1000.0 >= lo]
        jit = [e for e in near if e["ev"] == "jit"]
        out.append(
            {
                "poll_start": start,
                "poll_ms": ms,
                "jit_compilations": len(jit),
                "events": [
                    {**e, "t_rel_ms": round((e["t"] - start) * 1000.0, 1)} for e in near if e["ev"] != "jit"
                ],
            }
        )
    return out


def summary(trace_dir: Path) -> dict[str, Any]:
    """Counts and worst cases of each kind of event over the whole run."""
    events = jvm_events(trace_dir) + probe_events(trace_dir)
    out: dict[str, Any] = {}
    for kind in ("jvmgc", "safepoint", "pygc", "gap", "jit"):
        rows = [e for e in events if e["ev"] == kind]
        worst = sorted(rows, key=lambda e: -e.get("ms", 0.0))[:5]
        out[kind] = {
            "n": len(rows),
            "max_ms": max((e.get("ms", 0.0) for e in rows), default=0.0),
            "worst": [{k: v for k, v in e.items() if k != "threads"} for e in worst] if kind != "jit" else [],
        }
    return out


if __name__ == "__main__":  # python benchmarks/soak_trace.py DIR: the summary of a traced run
    print(json.dumps(summary(Path(sys.argv[1])), indent=1))
