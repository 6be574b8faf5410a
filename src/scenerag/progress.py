"""Progress reporting: long operations take a ``progress(stage, done, total)`` callback; ``progress_bar``
turns it into rich progress bars (one per stage) on stderr, for the CLI and scripts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ProgressFn = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)``."""


@contextmanager
def progress_bar(description: str = "", *, console: Any = None) -> Iterator[ProgressFn]:
    """A ``progress(stage, done, total)`` callback driving one rich bar per stage (elapsed and remaining
    time shown); ``console`` defaults to stderr so piped output stays clean."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    prefix = f"{description} " if description else ""
    with Progress(
        TextColumn(prefix + "[bold]{task.description:<12}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console or Console(stderr=True),
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update
