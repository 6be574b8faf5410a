"""Progress reporting for the CLI and scripts.

Two forms:

* **bars** for countable work (load, index, build): long operations take a ``progress(stage, done, total)``
  callback; :func:`progress_bar` turns it into rich progress bars (one per stage) on stderr;
* **stages** for LLM commands (ask, ground, plan, update): the pipeline calls ``progress.stage(name,
  detail)`` at each stage boundary (linking, examples, generating, running query, answer).
  :data:`SILENT` ignores them; :class:`StderrProgress` prints each as one line on stderr and, between
  them, never leaves stderr silent for longer than its heartbeat: on a terminal a spinner with the current
  stage and its running time, elsewhere (a pipe, a log) a ``... still <stage>`` line.
  :class:`ProgressChatModel` wraps any chat model so that every call reports ``generating`` and then the
  tokens it produced and their rate.

Contract of the stage protocol: ``stage()`` is cheap, never raises, may be called from any thread, and
prints nothing to stdout (piped answers stay clean).
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TextIO, runtime_checkable

if TYPE_CHECKING:
    from scenerag.llm.base import ChatModel, ChatResponse, Message

ProgressFn = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)``."""

#: the longest a :class:`StderrProgress` lets stderr stay silent (seconds)
DEFAULT_HEARTBEAT_S = 1.0
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


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


@runtime_checkable
class StageProgress(Protocol):
    """Receives the stages of a long operation (see module docstring)."""

    def stage(self, name: str, detail: str = "") -> None:
        """A stage begins (``name``: e.g. ``"linking"``), or reports on itself again with ``detail``."""


class _Silent:
    """The default: stages are ignored."""

    def stage(self, name: str, detail: str = "") -> None:
        return None


SILENT: StageProgress = _Silent()


# The heartbeat runs in a small helper process: the embedded database's JVM start (JPype) and other native
# calls can hold the GIL for seconds, which would stall a heartbeat thread. The parent sends each stage as one
# line "<monotonic time>\t<name>\t<detail>" on the helper's stdin; the helper prints it and, between stages,
# the spinner or "... still" lines; end of input ends it (spinner cleared).
_HELPER = r"""
import os, select, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; end of input ends this
start, beat, tty = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1"
frames, turn = "\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f", 0
current, since, last, shown, buf = "starting", start, time.monotonic(), False, b""
def write(text):
    global last, shown
    if shown:
        text, shown = "\r\x1b[K" + text, False
    os.write(2, text.encode("utf-8", "replace"))
    last = time.monotonic()
while True:
    wait = 0.1 if tty else max(0.02, beat - (time.monotonic() - last))
    if select.select([0], [], [], wait)[0]:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            stamp, name, detail = (line.decode("utf-8", "replace").split("\t", 2) + ["", ""])[:3]
            if name != current:
                current, since = name, float(stamp)
            write(f"{float(stamp) - start:5.1f} s  {name}" + (f": {detail}" if detail else "") + "\n")
    now = time.monotonic()
    if tty:
        turn += 1
        write(f"\r{frames[turn % len(frames)]} {current} {now - since:.0f} s\x1b[K")
        shown = True
    elif now - last >= beat:
        write(f"{now - start:5.1f} s  ... still {current} ({now - since:.0f} s)\n")
if shown:
    write("")
"""


class StderrProgress:
    """Stage lines on stderr with a heartbeat; use it as a context manager.

    Each :meth:`stage` call prints ``<seconds since start> s  <name>: <detail>``. While no stage line comes,
    a terminal shows a spinner line (``⠙ generating 3 s``) redrawn every 0.1 s; other streams get a
    ``... still <name> (<n> s)`` line whenever ``heartbeat_s`` passed without output. The heartbeat lives in
    a helper process, so a native call holding the GIL (the JVM starting, a model loading) cannot silence
    it; where no helper can be started, a thread does the same. :meth:`close` (or leaving the ``with``
    block) stops the heartbeat and clears the spinner before anything else is printed.

    ``stream``: where the lines go; the helper process can only write to the real stderr, so any other
    stream (a test's buffer) is written by the thread.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
        tty: bool | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.heartbeat_s = float(heartbeat_s)
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty()) if callable(isatty) else False
        self.tty = tty
        self.started = time.monotonic()
        self.current = "starting"
        self._stage_started = self.started
        self._last_write = self.started
        self._spinner_shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._helper: subprocess.Popen[bytes] | None = None
        self._closed = False

    # -- the protocol -----------------------------------------------------------------------------------
    def stage(self, name: str, detail: str = "") -> None:
        now = time.monotonic()
        name, detail = _one_line(name), _one_line(detail)
        with self._lock:
            if self._helper is not None and self._send(f"{now!r}\t{name}\t{detail}\n"):
                return
            if name != self.current:
                self._stage_started = now
            self.current = name
            text = f"{now - self.started:5.1f} s  {name}" + (f": {detail}" if detail else "")
            self._write(text + "\n", clear=True)

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> StderrProgress:
        if self._helper is None and self._thread is None and not self._closed:
            if self.stream is sys.stderr or self.stream is sys.__stderr__:
                self._helper = self._spawn()
            if self._helper is None:
                self._thread = threading.Thread(target=self._beat, name="scenerag-progress", daemon=True)
                self._thread.start()
        return self

    def close(self) -> None:
        """Stop the heartbeat and clear the spinner (idempotent; later stages print plain lines)."""
        self._stop.set()
        with self._lock:
            helper, self._helper = self._helper, None
            self._closed = True
        if helper is not None:
            with contextlib.suppress(OSError, ValueError):
                assert helper.stdin is not None
                helper.stdin.close()
            try:
                helper.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                helper.kill()
                helper.wait()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        with self._lock:
            if self._spinner_shown:
                self._write("", clear=True)

    def __enter__(self) -> StderrProgress:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------------------
    def _spawn(self) -> subprocess.Popen[bytes] | None:
        """The heartbeat helper process, or None where none can be started."""
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        try:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    _HELPER,
                    repr(self.started),
                    repr(self.heartbeat_s),
                    "1" if self.tty else "0",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                close_fds=True,
            )
        except (OSError, ValueError):
            return None

    def _send(self, line: str) -> bool:
        """Hand one stage line to the helper (under the lock); False when it is gone."""
        assert self._helper is not None and self._helper.stdin is not None
        try:
            self._helper.stdin.write(line.encode("utf-8", "replace"))
            self._helper.stdin.flush()
            return True
        except (OSError, ValueError):
            self._helper = None
            return False

    def _write(self, text: str, *, clear: bool = False) -> None:
        """Write under the lock; ``clear`` first erases a spinner line."""
        prefix = ""
        if clear and self._spinner_shown:
            prefix = "\r\x1b[K"
            self._spinner_shown = False
        try:
            self.stream.write(prefix + text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream must not break the command
            return
        self._last_write = time.monotonic()

    def _beat(self) -> None:
        frames = itertools.cycle(_SPINNER)
        tick = 0.1 if self.tty else min(0.25, self.heartbeat_s / 4)
        while not self._stop.wait(tick):
            now = time.monotonic()
            with self._lock:
                if self._stop.is_set():
                    return
                since = now - self._stage_started
                if self.tty:
                    self._write(f"\r{next(frames)} {self.current} {since:.0f} s\x1b[K")
                    self._spinner_shown = True
                elif now - self._last_write >= self.heartbeat_s:
                    self._write(f"{now - self.started:5.1f} s  ... still {self.current} ({since:.0f} s)\n")


def _one_line(text: str) -> str:
    return " ".join(str(text).replace("\t", " ").split())


def generation_summary(response: ChatResponse) -> str:
    """``"42 tokens in 2.4 s (17.5 tok/s)"`` for one model reply: the generation rate where the backend
    timed it apart from prompt evaluation (local models), else tokens over the call's wall time."""
    timings = response.timings
    if timings is not None and timings.generated_tokens and timings.generation_s > 0:
        return (
            f"{timings.generated_tokens} tokens in {response.elapsed_s:.1f} s "
            f"({timings.generation_tokens_per_s:.1f} tok/s; prompt {timings.prompt_tokens} tokens)"
        )
    out = response.usage.output_tokens
    rate = out / response.elapsed_s if response.elapsed_s > 0 else 0.0
    return f"{out} tokens in {response.elapsed_s:.1f} s ({rate:.1f} tok/s)"


def batch_summary(responses: Sequence[ChatResponse]) -> str:
    """``"3 replies, 61 tokens in 4.2 s (14.5 tok/s)"`` for replies decoded together (one prompt evaluation)."""
    if len(responses) == 1:
        return generation_summary(responses[0])
    tokens = sum(r.usage.output_tokens for r in responses)
    elapsed = max((r.elapsed_s for r in responses), default=0.0)
    rate = tokens / elapsed if elapsed > 0 else 0.0
    return f"{len(responses)} replies, {tokens} tokens in {elapsed:.1f} s ({rate:.1f} tok/s)"


class ProgressChatModel:
    """``model`` with each ``chat`` call (and each batched ``sample`` call, where the model has one) reported
    as stage ``generating``: before, the model's name; after, :func:`generation_summary`. Every other
    attribute is the wrapped model's."""

    def __init__(self, model: ChatModel, progress: StageProgress) -> None:
        self.model = model
        self.progress = progress

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.model, name)
        if name == "sample" and callable(attr):
            return self._reported_sample(attr)
        return attr

    def _reported_sample(self, sample: Callable[..., Any]) -> Callable[..., Any]:
        def reported(messages: Sequence[Message], **kwargs: Any) -> Any:
            count = kwargs.get("n", 1)
            self.progress.stage("generating", f"{self.model.name}, {count} candidate(s)")
            responses = sample(messages, **kwargs)
            if responses:
                self.progress.stage("generating", batch_summary(list(responses)))
            return responses

        return reported

    def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        self.progress.stage("generating", self.model.name)
        response = self.model.chat(messages, **kwargs)
        self.progress.stage("generating", generation_summary(response))
        return response

    def count_tokens(self, text: str) -> int:
        return self.model.count_tokens(text)


__all__ = [
    "DEFAULT_HEARTBEAT_S",
    "SILENT",
    "ProgressChatModel",
    "ProgressFn",
    "StageProgress",
    "StderrProgress",
    "batch_summary",
    "generation_summary",
    "progress_bar",
]
