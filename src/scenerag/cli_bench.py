"""``scenerag bench …``: the benchmark commands (one function per benchmark, registered on ``bench_app``).

Each command prints its tables with rich and can write the raw records as JSON; heavy imports stay inside
the command so ``scenerag --help`` stays fast.
"""

from __future__ import annotations

import typer

bench_app = typer.Typer(
    name="bench",
    help="Benchmarks that print the papers' tables (success, tokens, latency) for this machine.",
    no_args_is_help=True,
)
