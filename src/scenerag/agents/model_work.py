"""Model work counted in reference seconds: what a question's model calls would take on a reference host.

A time budget in wall seconds cuts a question sooner on a slower or busier machine, so the same question,
model and graph get a different answer on another host. Work counted from the calls' own token figures
(prompt tokens evaluated, decode steps) at fixed reference rates is the same wherever it runs; a call that
reports no such figures (an endpoint) counts its wall time, which is the endpoint's own speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scenerag.llm.base import ChatModel, ChatResponse, Message


@dataclass(frozen=True)
class WorkRates:
    """The reference host's speed: prompt tokens evaluated and decode steps per second, and a fixed cost per
    call (tokenizing, setting the grammar up).

    Defaults: the default local model (Qwen2.5-Coder 1.5B Q4_K_M) with the schema grammar on two quiet cores,
    from llama.cpp's own timings of 56 calls over 34 read questions (pooled per run: prompt 56–70 tokens/s, decoding
    20–22 steps/s, 0.1–0.4 s a call outside them), rounded down for a host like blind round 22's."""

    prompt_tps: float = 55.0
    decode_tps: float = 18.0
    call_s: float = 0.4

    def of(self, responses: Sequence[ChatResponse], wall_s: float) -> float:
        """The work of one call (``chat``: one response; ``sample``: the batch it decoded together)."""
        timed = [r.timings for r in responses if r.timings is not None]
        if not timed:
            return wall_s
        return sum(
            self.call_s
            + t.prompt_tokens / self.prompt_tps
            + (t.decode_steps if t.decode_steps is not None else t.generated_tokens) / self.decode_tps
            for t in timed
        )


class MeteredModel:
    """``model`` whose ``chat`` and ``sample`` calls add their work (and wall time) to running totals;
    every other attribute is the wrapped model's."""

    def __init__(self, model: ChatModel, rates: WorkRates | None = None) -> None:
        self.model = model
        self.rates = rates or WorkRates()
        self.work_s = 0.0
        self.wall_s = 0.0

    def reset(self) -> None:
        self.work_s = self.wall_s = 0.0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.model, name)
        if name == "sample" and callable(attr):
            return self._metered_sample(attr)
        return attr

    def _add(self, responses: Sequence[ChatResponse], start: float) -> None:
        wall = time.perf_counter() - start
        self.wall_s += wall
        self.work_s += self.rates.of(responses, wall)

    def _metered_sample(self, sample: Callable[..., Any]) -> Callable[..., Any]:
        def metered(messages: Sequence[Message], **kwargs: Any) -> Any:
            start = time.perf_counter()
            responses = sample(messages, **kwargs)
            self._add(list(responses or ()), start)
            return responses

        return metered

    def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        start = time.perf_counter()
        response = self.model.chat(messages, **kwargs)
        self._add([response], start)
        return response

    def count_tokens(self, text: str) -> int:
        return self.model.count_tokens(text)


__all__ = ["MeteredModel", "WorkRates"]
