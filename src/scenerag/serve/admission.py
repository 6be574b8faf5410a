"""Admission control for store queries: a fixed number run at once, in two lanes, with deadlines.

Contract:

* At most ``slots`` queries hold a slot at once; ``heavy`` queries hold at most ``heavy_slots`` of them, so
  ``slots - heavy_slots`` slots always stay free for ``cheap`` ones, and a freed slot goes to the oldest
  waiting cheap query first. Waiting queries of each lane are served first come, first served.
* Each lane's queue is bounded (``queue_limit``): a query arriving at a full queue is refused at once with
  a 503 ``ServiceError`` (``kind="overloaded"``) carrying ``retry_after_s``.
* A query's deadline counts from its arrival. One that cannot start before it — still queued at its
  deadline, or predicted to wait longer than its time left from the lane's recent run times — gets the same
  503, the former at its deadline, the latter at once. The time left after the wait is what the query may
  run (the store cancels it at the deadline).
* ``stats()`` never blocks on a query: it reads counters under a lock held for microseconds (``/health``).

Every method is thread-safe; waits are on per-ticket events, so waking one waiter never wakes the others.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from scenerag.serve.errors import ServiceError

Lane = Literal["cheap", "heavy"]
LANES: tuple[Lane, ...] = ("cheap", "heavy")
#: weight of the newest run time in a lane's moving average
EWMA_ALPHA = 0.2


def default_slots() -> int:
    """Queries run at once by default: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(eq=False)
class Ticket:
    """One query's place in admission: granted (holding a slot) once ``granted`` is set."""

    lane: Lane
    arrival: float
    deadline: float
    granted: threading.Event = field(default_factory=threading.Event)
    started: float | None = None
    released: bool = False

    def time_left(self, now: float) -> float:
        return self.deadline - now


@dataclass
class _LaneState:
    limit: int
    queue_limit: int
    running: int = 0
    queue: deque[Ticket] = field(default_factory=deque)
    holders: set[Ticket] = field(default_factory=set)
    admitted: int = 0
    refused: int = 0
    expired: int = 0
    mean_run_s: float | None = None


class Admission:
    """Slots, two lanes and bounded queues for store queries (see module docstring)."""

    def __init__(
        self,
        slots: int | None = None,
        *,
        heavy_slots: int | None = None,
        queue_limit: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.slots = int(slots or default_slots())
        if self.slots < 1:
            raise ValueError("slots must be >= 1")
        heavy = max(1, self.slots // 2) if heavy_slots is None else int(heavy_slots)
        if not 1 <= heavy <= self.slots:
            raise ValueError("heavy_slots must be within 1..slots")
        queue = 8 * self.slots if queue_limit is None else int(queue_limit)
        if queue < 0:
            raise ValueError("queue_limit must be >= 0")
        self._clock = clock
        self._lock = threading.Lock()
        self._lanes: dict[Lane, _LaneState] = {
            "cheap": _LaneState(self.slots, queue),
            "heavy": _LaneState(heavy, max(1, queue // 4) if queue else 0),
        }
        self._running = 0

    @property
    def heavy_slots(self) -> int:
        return self._lanes["heavy"].limit

    # -- admission --------------------------------------------------------------------------------------
    def enqueue(self, lane: Lane, deadline: float, *, arrival: float | None = None) -> Ticket:
        """Take a place for a query due by ``deadline`` (monotonic): granted at once when a slot is free,
        else queued. Raises the 503 ``ServiceError`` when the lane's queue is full or the predicted wait
        exceeds the time left. Never blocks."""
        now = self._clock()
        ticket = Ticket(lane, now if arrival is None else arrival, deadline)
        with self._lock:
            state = self._lanes[lane]
            if self._can_start(lane) and not self._waiting_before(lane):
                self._grant(ticket, now)
                return ticket
            if len(state.queue) >= state.queue_limit:
                state.refused += 1
                raise self._busy(lane, f"the {lane}-query queue is full ({state.queue_limit} waiting)")
            wait = self._predicted_wait(lane, len(state.queue) + 1, now)
            if wait is not None and wait > ticket.time_left(now):
                state.refused += 1
                raise self._busy(
                    lane,
                    f"the {len(state.queue)} {lane} queries waiting ahead would not leave this one time to run "
                    f"before its deadline ({ticket.time_left(now):.1f} s left, ~{wait:.1f} s expected wait)",
                    wait,
                )
            state.queue.append(ticket)
        return ticket

    def wait(self, ticket: Ticket) -> float:
        """Block until ``ticket`` holds a slot; return the seconds left before its deadline. At the deadline
        a still-queued ticket leaves the queue and the 503 ``ServiceError`` is raised."""
        while not ticket.granted.is_set():
            left = ticket.time_left(self._clock())
            if left <= 0 or not ticket.granted.wait(left):
                with self._lock:
                    if not ticket.granted.is_set():
                        state = self._lanes[ticket.lane]
                        state.queue.remove(ticket)
                        state.expired += 1
                        waited = self._clock() - ticket.arrival
                        raise self._busy(
                            ticket.lane,
                            f"the query waited {waited:.1f} s for a free slot and reached its deadline "
                            "before it could start",
                        )
        return ticket.time_left(self._clock())

    def release(self, ticket: Ticket) -> None:
        """Give back ``ticket``'s slot (idempotent; a queued ticket just leaves the queue)."""
        now = self._clock()
        with self._lock:
            if ticket.released:
                return
            ticket.released = True
            state = self._lanes[ticket.lane]
            if not ticket.granted.is_set():
                if ticket in state.queue:
                    state.queue.remove(ticket)
                return
            state.running -= 1
            state.holders.discard(ticket)
            self._running -= 1
            if ticket.started is not None:
                run = now - ticket.started
                state.mean_run_s = (
                    run
                    if state.mean_run_s is None
                    else (1 - EWMA_ALPHA) * state.mean_run_s + EWMA_ALPHA * run
                )
            self._dispatch(now)

    @contextmanager
    def slot(self, lane: Lane, deadline: float, *, arrival: float | None = None) -> Iterator[float]:
        """Enqueue, wait and release around the block; yields the seconds left before the deadline."""
        ticket = self.enqueue(lane, deadline, arrival=arrival)
        try:
            yield self.wait(ticket)
        finally:
            self.release(ticket)

    def stats(self) -> dict[str, Any]:
        """Slots, running and queued queries per lane, and how many were admitted, refused or expired."""
        with self._lock:
            lanes = {
                name: {
                    "slots": s.limit,
                    "running": s.running,
                    "queued": len(s.queue),
                    "queue_limit": s.queue_limit,
                    "admitted": s.admitted,
                    "refused": s.refused,
                    "expired": s.expired,
                    "mean_run_ms": None if s.mean_run_s is None else round(1000 * s.mean_run_s, 1),
                }
                for name, s in self._lanes.items()
            }
            return {
                "slots": self.slots,
                "running": self._running,
                "queued": sum(len(s.queue) for s in self._lanes.values()),
                "lanes": lanes,
            }

    # -- internals (under the lock) ---------------------------------------------------------------------
    def _can_start(self, lane: Lane) -> bool:
        return self._running < self.slots and self._lanes[lane].running < self._lanes[lane].limit

    def _waiting_before(self, lane: Lane) -> bool:
        """Whether queued queries have priority over a new ``lane`` query (cheap ones always do)."""
        return bool(self._lanes["cheap"].queue) or (lane == "heavy" and bool(self._lanes["heavy"].queue))

    def _grant(self, ticket: Ticket, now: float) -> None:
        state = self._lanes[ticket.lane]
        state.running += 1
        state.holders.add(ticket)
        state.admitted += 1
        self._running += 1
        ticket.started = now
        ticket.granted.set()

    def _dispatch(self, now: float) -> None:
        for lane in LANES:  # cheap first
            queue = self._lanes[lane].queue
            while queue and self._can_start(lane):
                self._grant(queue.popleft(), now)

    def _predicted_wait(self, lane: Lane, position: int, now: float) -> float | None:
        """Seconds until the ``position``-th queued query of ``lane`` starts, from the lane's mean run time:
        the soonest expected end among its running queries, then ``mean / slots`` per query ahead (None before
        any run finished, or when the lane is not full: then other lanes hold the slots briefly)."""
        state = self._lanes[lane]
        if state.mean_run_s is None or state.running < state.limit:
            return None
        mean = state.mean_run_s
        ends = [min(t.started + mean, t.deadline) for t in state.holders if t.started is not None]
        first = max(0.0, min(ends, default=now) - now)
        return first + (position - 1) * state.mean_run_s / state.limit

    def _busy(self, lane: Lane, why: str, wait: float | None = None) -> ServiceError:
        state = self._lanes[lane]
        guess = (
            wait
            if wait is not None
            else self._predicted_wait(lane, len(state.queue) + 1, self._clock()) or 1.0
        )
        retry = max(1, math.ceil(guess))
        return ServiceError(
            "overloaded",
            f"the server is busy: {why}",
            status=503,
            hint=f"retry after {retry} s, or make the query cheaper (anchor it on a nodeSymbol, bound hops, "
            "add LIMIT)",
            retry_after_s=retry,
        )
