"""scenerag.progress: stage lines, the heartbeat (thread form, on a buffer), and the chat-model wrapper."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Sequence
from typing import Any

from scenerag.llm import ScriptedChatModel
from scenerag.llm.base import ChatResponse, Message
from scenerag.progress import SILENT, ProgressChatModel, StderrProgress


class Recorder:
    def __init__(self) -> None:
        self.stages: list[tuple[str, str]] = []

    def stage(self, name: str, detail: str = "") -> None:
        self.stages.append((name, detail))


def test_stage_lines_and_heartbeat_on_a_stream() -> None:
    out = io.StringIO()
    with StderrProgress(out, heartbeat_s=0.3, tty=False) as progress:
        progress.stage("linking")
        progress.stage("generating", "model\tname\nsplit")
        time.sleep(1.0)
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"\s*\d+\.\d s  linking", lines[0])
    assert lines[1].endswith("generating: model name split")  # one line whatever the detail holds
    assert any("... still generating" in line for line in lines[2:])
    count = len(lines)
    time.sleep(0.5)
    assert len(out.getvalue().splitlines()) == count  # closed: no more heartbeat


def test_spinner_is_cleared_on_close() -> None:
    out = io.StringIO()
    with StderrProgress(out, tty=True) as progress:
        progress.stage("examples")
        time.sleep(0.35)
    text = out.getvalue()
    assert "\r" in text and "examples" in text and text.endswith("\r\x1b[K")


def test_the_model_wrapper_reports_generation() -> None:
    recorder = Recorder()
    model = ProgressChatModel(ScriptedChatModel(["MATCH (n) RETURN n"]), recorder)
    reply = model.chat([Message.user("hi")])
    assert reply.message.content == "MATCH (n) RETURN n"
    assert recorder.stages[0] == ("generating", "scripted")
    assert re.fullmatch(r"\d+ tokens in \d+\.\d s \(\d+\.\d tok/s\)", recorder.stages[1][1])
    assert model.name == "scripted" and model.count_tokens("a b") == model.model.count_tokens("a b")
    assert SILENT.stage("anything") is None


def test_batched_sampling_is_reported_too() -> None:
    class Sampler(ScriptedChatModel):
        def sample(self, messages: Sequence[Message], *, n: int = 1, **kwargs: Any) -> list[ChatResponse]:
            return [self.chat(messages) for _ in range(n)]

    recorder = Recorder()
    model = ProgressChatModel(Sampler(["a", "b", "c"]), recorder)
    replies = model.sample([Message.user("hi")], n=3)
    assert [r.message.content for r in replies] == ["a", "b", "c"]
    assert recorder.stages[0] == ("generating", "scripted, 3 candidate(s)")
    assert recorder.stages[1][1].startswith("3 replies, ")
