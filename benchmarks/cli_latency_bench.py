"""Whole-process latency of the CLI's quick commands on the Hydra example, as a user sees it (a fresh
process each time, interpreter start included): ``scenerag search`` cold, ``scenerag index`` when nothing
changed and after a one-node write, and ``scenerag --version`` as the floor of any command.

Issue 24's bars: ``search`` cold <= 2 s, an unchanged ``index`` <= 1 s. Prints one table (median and worst
of ``--runs`` processes per command) and writes ``benchmarks/results/cli_latency_bench.json``.

    python benchmarks/cli_latency_bench.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_record import BenchRecord, add_record_argument

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SCENERAG_DATA") or ROOT.parent / "shared" / "data")
HYDRA = DATA / "hydra_small_indoor_dsg.json"
BARS_S = {"search (cold)": 2.0, "index (unchanged)": 1.0}


def timed(*args: str) -> tuple[float, str]:
    """Wall seconds of one CLI process, and its stdout; a failure ends the benchmark."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "scenerag.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"scenerag {' '.join(args)} failed:\n{proc.stderr}")
    return wall, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per command")
    add_record_argument(parser)
    args = parser.parse_args()
    if not HYDRA.exists():
        raise SystemExit(f"{HYDRA} not found: set SCENERAG_DATA to the shared data folder")
    record = BenchRecord(args, embedder="all-MiniLM-L6-v2 (numpy, minilm)", llm="none", perception="none")

    with tempfile.TemporaryDirectory(prefix="scenerag-cli-latency-") as tmp:
        db = str(Path(tmp) / "db")
        timed("load", str(HYDRA), "--db", db)
        build_s, built = timed("index", "--db", db)
        samples: dict[str, list[float]] = {"--version": [], "search (cold)": [], "index (unchanged)": []}
        changed: list[float] = []
        summaries: dict[str, str] = {"index (first build)": built.strip().splitlines()[0]}
        for i in range(args.runs):
            samples["--version"].append(timed("--version")[0])
            wall, out = timed("search", "something to sit on", "--db", db, "-k", "5")
            assert "seating" in out, out
            samples["search (cold)"].append(wall)
            wall, out = timed("index", "--db", db)
            assert out.startswith("up to date"), out
            samples["index (unchanged)"].append(wall)
            summaries["index (unchanged)"] = out.strip().splitlines()[0]
            cls = "armchair" if i % 2 == 0 else "seating"
            timed(
                "cypher",
                f"MATCH (o:Object {{nodeSymbol: 'O0'}}) SET o.class = '{cls}'",
                "--db",
                db,
                "--write",
            )
            wall, out = timed("index", "--db", db)
            changed.append(wall)
            summaries["index (one node changed)"] = out.strip().splitlines()[0]
        samples["index (one node changed)"] = changed

    rows = []
    print(f"{'command':<26}{'median s':>10}{'worst s':>10}{'bar s':>8}")
    for name, values in samples.items():
        bar = BARS_S.get(name)
        row = {
            "command": name,
            "median_s": round(statistics.median(values), 3),
            "worst_s": round(max(values), 3),
            "samples_s": [round(v, 3) for v in values],
            "bar_s": bar,
            "meets_bar": None if bar is None else max(values) <= bar,
        }
        rows.append(row)
        print(f"{name:<26}{row['median_s']:>10.2f}{row['worst_s']:>10.2f}{'' if bar is None else bar:>8}")
    print(f"first index build (166 nodes): {build_s:.2f} s")
    for name, text in summaries.items():
        print(f"  {name}: {text}")
    record.results.update(rows=rows, first_build_s=round(build_s, 3), outputs=summaries, runs=args.runs)
    record.write()


if __name__ == "__main__":
    main()
