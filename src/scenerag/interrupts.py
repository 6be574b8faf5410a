"""Clean interruption of long operations by SIGINT, SIGTERM and SIGHUP.

The embedded ArcadeDB JVM is started with ``-Xrs`` (``store/arcade.py``), so these signals reach Python's
own handlers instead of the JVM's: JPype's forwarding of them from the JVM's signal thread into Python
crashed the process (SIGSEGV in ``PyObject_RichCompare``, an ``hs_err_pid*.log``), and the JVM's own
SIGTERM handler would end the process without Python's cleanup.

``handle_signals()`` (the CLI wraps its long commands in it) installs handlers that raise ``Interrupted``
in the main thread, so ``finally`` blocks and rollbacks run and the exit status is 128 + the signal
number. Python runs a handler only between bytecodes, never while the main thread is inside a Java call,
so a watcher thread, woken through the signal wakeup fd, also calls the callbacks registered with
``cancel_on_signal`` at once (the embedded store terminates its running query that way). A second signal
while the first is being handled ends the process at once (``os._exit``) without cleanup: the embedded
store's atomic load still leaves the previous graph live.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A signal ended the operation; ``exit_code`` is the conventional 128 + signal number."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(self.signal_name)

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = False
        self.signum: int | None = None  # the first signal received under handle_signals()
        self.raised = False  # Interrupted has been raised for it in the main thread
        self.received = 0  # signals the watcher has seen
        self.deferred = 0  # depth of critical() blocks
        self.cancellers: dict[int, Callable[[], None]] = {}
        self.next_key = 0


_state = _State()


def _raise_pending() -> None:
    if _state.signum is not None and not _state.raised and not _state.deferred:
        _state.raised = True
        raise Interrupted(_state.signum)


def _handler(signum: int, frame: object) -> None:
    """The Python-level handler (main thread, between bytecodes)."""
    if _state.signum is None:
        _state.signum = signum
    _raise_pending()


def _on_signal(signum: int) -> None:
    """The watcher thread's reaction: cancel what is running; a second signal exits at once."""
    with _state.lock:
        _state.received += 1
        if _state.signum is None:
            _state.signum = signum
        first = _state.received == 1
        cancellers = list(_state.cancellers.values()) if first else []
    if not first:
        name = Interrupted(signum).signal_name
        with contextlib.suppress(OSError):
            os.write(2, f"\ninterrupted again ({name}): exiting without cleanup\n".encode())
        os._exit(128 + signum)
    for cancel in cancellers:
        with contextlib.suppress(Exception):
            cancel()


def _watch(read_fd: int) -> None:
    while True:
        try:
            data = os.read(read_fd, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            return
        for signum in data:
            if signum in HANDLED_SIGNALS:
                _on_signal(signum)


@contextlib.contextmanager
def handle_signals() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into ``Interrupted`` for the duration of the block (main thread
    only; elsewhere, or nested, it does nothing). Handlers and the wakeup fd are restored afterwards."""
    if threading.current_thread() is not threading.main_thread() or _state.active:
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous = {sig: signal.getsignal(sig) for sig in HANDLED_SIGNALS}
    with _state.lock:
        _state.active, _state.signum, _state.raised, _state.received = True, None, False, 0
    old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for sig in HANDLED_SIGNALS:
        signal.signal(sig, _handler)
    watcher = threading.Thread(target=_watch, args=(read_fd,), name="scenerag-signals", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(old_wakeup)
        os.close(write_fd)  # the watcher reads EOF and returns
        watcher.join(timeout=5)
        os.close(read_fd)
        with _state.lock:
            _state.active, _state.signum, _state.received = False, None, 0


@contextlib.contextmanager
def cancel_on_signal(cancel: Callable[[], None]) -> Iterator[None]:
    """While the block runs, a signal under ``handle_signals()`` calls ``cancel()`` from the watcher
    thread (it must be thread-safe and quick, e.g. terminate a running query); called at once when a
    signal already arrived."""
    with _state.lock:
        key = _state.next_key
        _state.next_key += 1
        _state.cancellers[key] = cancel
        already = _state.signum is not None
    if already:
        with contextlib.suppress(Exception):
            cancel()
    try:
        yield
    finally:
        with _state.lock:
            _state.cancellers.pop(key, None)


def pending_signal() -> int | None:
    """The signal received under ``handle_signals()``, if any."""
    return _state.signum


def raise_if_interrupted() -> None:
    """Raise ``Interrupted`` now (main thread) if a signal arrived and has not been raised yet: call it
    where an operation cancelled by ``cancel_on_signal`` fails, so the failure reads as the interruption."""
    if threading.current_thread() is threading.main_thread():
        _raise_pending()


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """Postpone ``Interrupted`` until the block ends (main thread): for short commit sections, such as
    swapping a loaded database in, that must not stop half-way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.deferred += 1
    try:
        yield
    finally:
        _state.deferred -= 1
    _raise_pending()
