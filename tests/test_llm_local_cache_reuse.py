"""``LocalChatModel(cache_reuse="longest")`` with the real default model: a prompt that extends the previous
call's prompt past the system turn evaluates only its new tokens; the default ``system`` mode restarts
from the saved system state. Skipped only when llama-cpp-python or the model is not installed."""

from __future__ import annotations

import pytest

from scenerag.llm import LLMError, Message
from scenerag.llm.local import LocalChatModel

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'scenerag[local]')")
from test_llm_local import _SKIP_REASON

pytestmark = [pytest.mark.slow, pytest.mark.skipif(_SKIP_REASON is not None, reason=str(_SKIP_REASON))]

SYSTEM = Message.system("You are a terse assistant for a kitchen robot. Answer with one short line. " * 6)
TASK = "Task: open the fridge.\nPrevious steps:\n1. search(Fridge) -> OK: Found Fridge_1; moved to P6."


def test_longest_reuse_evaluates_only_the_new_suffix() -> None:
    longest = LocalChatModel(n_ctx=2048, cache_reuse="longest")
    system_only = LocalChatModel(n_ctx=2048)  # the same loaded model and cache, default mode
    first = [SYSTEM, Message.user(f"{TASK}\nWhat next?")]
    second = [SYSTEM, Message.user(f"{TASK}\n2. open(Fridge_1) -> FAILED: too far.\nWhat next?")]
    longest.chat(first, max_tokens=4)
    grown = longest.chat(second, max_tokens=4)
    assert grown.timings is not None
    suffix = longest.count_tokens("2. open(Fridge_1) -> FAILED: too far.\nWhat next?")
    assert grown.timings.prompt_tokens <= suffix + 8  # the task and history came from the cache
    system_only.chat(first, max_tokens=4)
    again = system_only.chat(second, max_tokens=4)
    assert again.timings is not None
    assert again.timings.prompt_tokens >= longest.count_tokens(TASK)  # restarted after the system turn
    assert grown.usage.input_tokens == again.usage.input_tokens  # usage counts the whole prompt either way
    with pytest.raises(LLMError, match="cache_reuse"):
        LocalChatModel(n_ctx=2048, cache_reuse="everything")
