"""Benchmark records: every script in ``benchmarks/`` writes what it measured, with the conditions it ran
under, as one JSON file (default ``benchmarks/results/<script>.json``; ``--record PATH`` elsewhere,
``--record -`` for none). A figure quoted in README.md or docs/ names the script that prints it and comes
with the committed record.

A record holds the script and its command line, the arguments, the commit and the source files modified
at that commit, the machine (cores, CPU, memory) and how busy it was with *other* work during the run
(``machine.other_cpu_cores``: CPU seconds used by other processes per wall second, from ``/proc/stat`` minus
this process and its waited-for children; ``machine.load`` is ``quiet`` below 0.25 cores, else
``loaded``), the script's own ``conditions`` (perception oracle or computed, LLM live or replayed or none,
the model) and its ``results``.

Usage in a script::

    from bench_record import BenchRecord, add_record_argument

    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(args, perception="oracle", llm="none")
    ...
    record.results["rows"] = rows
    record.write()
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
RESULTS = BENCHMARKS / "results"
QUIET_BELOW_CORES = 0.25


def default_record_path(script: str | None = None) -> Path:
    """``benchmarks/results/<script stem>.json``."""
    return RESULTS / f"{Path(script or sys.argv[0]).stem}.json"


def add_record_argument(parser: argparse.ArgumentParser, script: str | None = None) -> None:
    """Add ``--record PATH`` (default ``benchmarks/results/<script>.json``; ``-`` writes none)."""
    default = default_record_path(script)
    parser.add_argument(
        "--record",
        default=str(default),
        metavar="PATH",
        help=f"write the results and run conditions as JSON here ('-' for none; default {_rel(default)})",
    )


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(BENCHMARKS.parent))
    except ValueError:
        return str(path)


def _busy_cpu_s() -> float | None:
    """CPU seconds the whole machine has been busy (all cores), from /proc/stat; None where unreadable."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    """CPU seconds of this process (all threads, JVM included) and its waited-for children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _git(*args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=BENCHMARKS.parent, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip("\n") if proc.returncode == 0 else None


def _jsonable(value: Any) -> Any:
    """Arguments and results as JSON values (paths and other objects as strings, tuples as lists)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "to_dict"):
        return _jsonable(value.to_dict())
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return _jsonable(asdict(value))
    return str(value)


class BenchRecord:
    """Collects one benchmark run's results and conditions; ``write()`` puts them in the record file.

    Create it right after parsing the arguments (it starts measuring the machine's load then).
    ``conditions`` are the script's own: ``perception`` (``oracle`` / ``computed``), ``llm`` (``none`` /
    ``live`` / ``replay``), ``model``, and anything else a reader needs to interpret the figures.
    """

    def __init__(self, args: argparse.Namespace | None = None, **conditions: Any) -> None:
        self.script = Path(sys.argv[0]).resolve()
        self.args = args
        self.path: Path | None = None
        record = getattr(args, "record", None) if args is not None else str(default_record_path())
        if record not in (None, "", "-"):
            self.path = Path(record)
        self.conditions: dict[str, Any] = dict(conditions)
        self.results: dict[str, Any] = {}
        self._started = dt.datetime.now(dt.UTC)
        self._t0 = time.perf_counter()
        self._busy0 = _busy_cpu_s()
        self._own0 = _own_cpu_s()
        self._load0 = os.getloadavg()

    def machine(self) -> dict[str, Any]:
        wall = time.perf_counter() - self._t0
        busy = _busy_cpu_s()
        other = None
        if busy is not None and self._busy0 is not None and wall > 0:
            other = max(0.0, (busy - self._busy0) - (_own_cpu_s() - self._own0)) / wall
        return {
            "cores": os.cpu_count(),
            "cpu": _cpu_model(),
            "memory_gib": _memory_gib(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_start": [round(v, 2) for v in self._load0],
            "load_average_end": [round(v, 2) for v in os.getloadavg()],
            "other_cpu_cores": None if other is None else round(other, 2),
            "load": None if other is None else ("quiet" if other < QUIET_BELOW_CORES else "loaded"),
        }

    def to_dict(self) -> dict[str, Any]:
        args = {k: v for k, v in vars(self.args).items() if k != "record"} if self.args is not None else {}
        script = _rel(self.script)
        modified = _git("status", "--porcelain", "--untracked-files=no", "--", "src", "benchmarks")
        return {
            "script": script,
            "command": " ".join(["python", script, *map(shlex.quote, sys.argv[1:])]),
            "args": _jsonable(args),
            "started": self._started.isoformat(timespec="seconds"),
            "wall_s": round(time.perf_counter() - self._t0, 1),
            "git": {
                "commit": _git("rev-parse", "HEAD"),
                "modified": [line[3:] for line in (modified or "").splitlines()],
            },
            "machine": self.machine(),
            "conditions": _jsonable(self.conditions),
            "results": _jsonable(self.results),
        }

    def write(self) -> Path | None:
        """Write the record (unless ``--record -``) and say where; returns the path."""
        if self.path is None:
            return None
        data = self.to_dict()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(data, indent=1) + "\n")
        m = data["machine"]
        print(
            f"record: {self.path} (machine {m['load']}: other processes used {m['other_cpu_cores']} of "
            f"{m['cores']} cores)",
            file=sys.stderr,
            flush=True,
        )
        return self.path
