"""Deadlines for running queries: one watchdog thread calls each query's cancel callback at its deadline.

Contract: ``watchdog().at(deadline, cancel)`` (``deadline`` on ``time.monotonic()``) calls ``cancel()``
once, from the watchdog thread, when the deadline passes, unless the returned handle was cancelled (leaving
the ``with`` block cancels it). Callbacks must be quick and thread-safe (terminate a running query, set an
event); an exception in one is swallowed. A single thread serves every query of the process, so a deadline
costs a heap entry, not a thread.

Why a watchdog rather than the engine's own timeout: embedded ArcadeDB reads its command timeout from the
database's shared configuration, so concurrent queries with different limits would overwrite each other's.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType


class Deadline:
    """A scheduled call; ``cancel()`` prevents it (a no-op once it ran). ``fired`` says whether it ran."""

    __slots__ = ("_fired", "_fn", "deadline")

    def __init__(self, deadline: float, fn: Callable[[], None]) -> None:
        self.deadline = deadline
        self._fn: Callable[[], None] | None = fn
        self._fired = False

    @property
    def fired(self) -> bool:
        return self._fired

    def cancel(self) -> None:
        self._fn = None

    def _run(self) -> None:
        fn, self._fn = self._fn, None
        if fn is None:
            return
        self._fired = True
        with contextlib.suppress(Exception):
            fn()

    def __enter__(self) -> Deadline:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cancel()


class Watchdog:
    """Calls scheduled callbacks at their deadlines from one daemon thread (started on first use)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Deadline]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def at(self, deadline: float, fn: Callable[[], None]) -> Deadline:
        """Call ``fn`` at ``deadline`` (monotonic seconds); use the handle as a context manager."""
        entry = Deadline(deadline, fn)
        with self._cond:
            heapq.heappush(self._heap, (deadline, next(self._seq), entry))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="scenerag-deadlines", daemon=True)
                self._thread.start()
            if self._heap[0][2] is entry:
                self._cond.notify()
        return entry

    def after(self, seconds: float, fn: Callable[[], None]) -> Deadline:
        """Call ``fn`` ``seconds`` from now."""
        return self.at(self._clock() + max(0.0, float(seconds)), fn)

    def pending(self) -> int:
        """Scheduled calls not yet due (cancelled ones included until the thread next wakes)."""
        with self._cond:
            return len(self._heap)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    # Most queries end long before their deadline: their cancelled entries are dropped here,
                    # whenever the thread wakes, instead of waking it once each at its deadline.
                    while self._heap and self._heap[0][2]._fn is None:
                        heapq.heappop(self._heap)
                    now = self._clock()
                    if self._heap and self._heap[0][0] <= now:
                        _, _, entry = heapq.heappop(self._heap)
                        break
                    self._cond.wait(None if not self._heap else self._heap[0][0] - now)
            entry._run()


_watchdog = Watchdog()


def watchdog() -> Watchdog:
    """The process-wide watchdog."""
    return _watchdog


@contextlib.contextmanager
def cancel_at(deadline: float, fn: Callable[[], None]) -> Iterator[Deadline]:
    """``with cancel_at(deadline, running.terminate) as d:`` — ``d.fired`` tells whether it was called."""
    with _watchdog.at(deadline, fn) as entry:
        yield entry
