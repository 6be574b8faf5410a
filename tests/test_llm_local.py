"""The local GGUF backend with the real default model (Qwen2.5-Coder-1.5B Q4_K_M) through llama-cpp-python.

Skipped only when llama-cpp-python or the model parts are not installed; the skip reason says which.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from scenerag.llm import LLMError, Message, ToolSpec, estimate_tokens, make_chat_model
from scenerag.llm.local import LocalChatModel
from scenerag.llm.model_files import default_cache_path, find_part_paths


def _skip_reason() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'scenerag[local]')"
    if os.environ.get("SCENERAG_GGUF") or default_cache_path().is_file():
        return None
    try:
        find_part_paths()
    except LLMError as exc:
        return f"the default model is not available: {exc}"
    return None


_SKIP_REASON = _skip_reason()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(_SKIP_REASON is not None, reason=str(_SKIP_REASON))]

WEATHER_TOOL = ToolSpec(
    name="get_weather",
    description="Current weather of a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture(scope="module")
def model() -> Iterator[LocalChatModel]:
    chat = make_chat_model("local", n_ctx=2048)
    assert isinstance(chat, LocalChatModel)
    yield chat


def test_answers_a_trivial_prompt(model: LocalChatModel) -> None:
    response = model.chat(
        [
            Message.system("You are a concise assistant."),
            Message.user("What is 2 + 3? Reply with the number only."),
        ],
        max_tokens=8,
    )
    assert "5" in response.message.content
    assert response.usage.input_tokens > 10 and 0 < response.usage.output_tokens <= 8
    assert response.model == "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert response.timings is not None and response.timings.generated_tokens > 0
    assert response.timings.generation_tokens_per_s > 0


def test_reply_satisfies_a_json_schema(model: LocalChatModel) -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["room", "chairs"],
        "properties": {"room": {"type": "string"}, "chairs": {"type": "integer"}},
    }
    response = model.chat(
        [
            Message.user(
                "The kitchen contains 4 chairs and a table. "
                "Give the room name and its number of chairs as JSON."
            )
        ],
        response_schema=schema,
        max_tokens=40,
    )
    value = json.loads(response.message.content)
    assert set(value) == {"room", "chairs"}
    assert isinstance(value["room"], str) and isinstance(value["chairs"], int)
    assert value["chairs"] == 4 and "kitchen" in value["room"].lower()


def test_tool_call_through_the_constrained_action(model: LocalChatModel) -> None:
    assert model.supports_tools is False
    history = [Message.user("What is the weather in Paris right now? Use a tool.")]
    first = model.chat(history, tools=[WEATHER_TOOL], max_tokens=40)
    assert first.finish_reason == "tool_calls"
    [call] = first.message.tool_calls
    assert call.name == "get_weather" and "paris" in str(call.arguments.get("city", "")).lower()

    history += [first.message, Message.tool(call.id, '{"city": "Paris", "sky": "sunny", "celsius": 21}')]
    second = model.chat(history, tools=[WEATHER_TOOL], max_tokens=60)
    assert second.finish_reason == "stop" and not second.message.tool_calls
    assert "21" in second.message.content or "sunny" in second.message.content.lower()


def test_tokens_are_counted_with_the_model_tokenizer(model: LocalChatModel) -> None:
    text = "MATCH (r:Room)-[:CONTAINS]->(o:Object) RETURN r.nodeSymbol, count(o)"
    exact = model.count_tokens(text)
    assert exact == len(model._model.llama.tokenize(text.encode(), add_bos=False))
    assert 0.6 * exact <= estimate_tokens(text) <= 1.6 * exact  # the documented estimate is in range
    assert model.count_tokens("") == 0


def test_models_are_loaded_once_per_process(model: LocalChatModel) -> None:
    again = LocalChatModel(n_ctx=2048)
    assert again._model is model._model


def test_a_prompt_longer_than_the_context_window_is_refused(model: LocalChatModel) -> None:
    long_prompt = "chair table lamp sofa " * 700  # about 2800 tokens > n_ctx 2048
    with pytest.raises(
        LLMError, match=r"the prompt has 28[0-9][0-9] tokens, the context window 2048"
    ) as info:
        model.chat([Message.user(long_prompt)], max_tokens=4)
    assert info.value.kind == "context_overflow" and "n_ctx" in str(info.value)


def test_system_prompt_state_is_kept_and_replies_do_not_depend_on_order(
    model: LocalChatModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new conversation starts from the saved KV state of its system turn (memory, and a file another
    process can read); the same question gives the same reply whatever ran before."""
    monkeypatch.setenv("SCENERAG_CACHE", str(tmp_path))
    system = Message.system("You answer questions about rooms with one short word. " * 8)

    def ask(q: str) -> str:
        return model.chat([system, Message.user(q)], max_tokens=6, stop=["\n"]).message.content

    first = ask("Name a room in a house.")
    files = list((tmp_path / "kv").glob("*.bin"))
    assert len(files) == 1 and files[0].stat().st_size > 0
    ask("Name a piece of furniture.")
    assert ask("Name a room in a house.") == first
    model._model.prefix_states.clear()  # as a new process: the state comes from the file
    assert ask("Name a room in a house.") == first
    stopped = model.chat(
        [system, Message.user("Count from 1 to 5, one per line.")], max_tokens=20, stop=["\n"]
    )
    assert "\n" not in stopped.message.content
