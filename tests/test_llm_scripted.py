"""The scripted chat model, the shared helpers of ``scenerag.llm.base`` and the ``make_chat_model`` factory."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scenerag.errors import SceneRagError
from scenerag.llm import (
    ChatModel,
    LLMError,
    Message,
    RetryPolicy,
    ScriptedChatModel,
    ScriptExhaustedError,
    ToolCall,
    ToolSpec,
    Usage,
    estimate_tokens,
    make_chat_model,
)
from scenerag.llm.base import (
    call_with_retries,
    is_strict_schema,
    parse_json_reply,
    parse_retry_after,
    parse_tool_action,
    tool_action_history,
    tool_action_instructions,
    tool_action_schema,
)

QUERY_TOOL = ToolSpec(
    name="run_cypher",
    description="Run a read-only Cypher query against the scene graph.",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


# -- scripted model ----------------------------------------------------------------------------------
def test_scripted_replays_text_tool_calls_and_callables_in_order() -> None:
    def echo_last(messages: list[Message]) -> str:
        return f"saw {len(messages)} messages, last: {messages[-1].content}"

    model = ScriptedChatModel(
        [
            ToolCall("", "run_cypher", {"query": "MATCH (o:Object) RETURN count(o)"}),
            echo_last,
            "done",
        ]
    )
    assert isinstance(model, ChatModel)
    history = [Message.system("You query scene graphs."), Message.user("How many objects?")]

    first = model.chat(history, tools=[QUERY_TOOL])
    assert first.finish_reason == "tool_calls"
    [call] = first.message.tool_calls
    assert call.id == "call_1"  # empty ids are filled in
    assert call.arguments == {"query": "MATCH (o:Object) RETURN count(o)"}

    history += [first.message, Message.tool(call.id, '[{"count(o)": 42}]')]
    second = model.chat(history)
    assert second.message.content == 'saw 4 messages, last: [{"count(o)": 42}]'
    assert second.finish_reason == "stop"

    assert model.chat(history).message.content == "done"
    assert model.remaining == 0
    assert [len(c.messages) for c in model.calls] == [2, 4, 4]
    assert model.calls[0].tools == [QUERY_TOOL]
    assert model.calls[1].tools == []


def test_scripted_usage_is_the_documented_estimate() -> None:
    model = ScriptedChatModel(["forty two"])
    response = model.chat([Message.user("how many chairs")])
    assert response.usage.output_tokens == estimate_tokens("assistant: forty two")
    assert response.usage.input_tokens == estimate_tokens("user: how many chairs")
    assert model.count_tokens("MATCH (n) RETURN n") == estimate_tokens("MATCH (n) RETURN n")


def test_scripted_runs_out_with_a_clear_error() -> None:
    model = ScriptedChatModel(["only reply"])
    model.chat([Message.user("one")])
    with pytest.raises(ScriptExhaustedError, match=r"script exhausted after 1 replies \(call 2"):
        model.chat([Message.user("two")])
    assert isinstance(ScriptExhaustedError("bad_response", "x"), LLMError)


def test_scripted_raises_scripted_errors_and_checks_json_replies() -> None:
    model = ScriptedChatModel(
        [
            LLMError("rate_limit", "slow down"),
            {"answer": "kitchen"},
            "not json",
            '```json\n{"answer": "hall"}\n```',
        ]
    )
    with pytest.raises(LLMError) as info:
        model.chat([Message.user("q")])
    assert info.value.kind == "rate_limit"
    assert json.loads(model.chat([Message.user("q")], response_schema=ANSWER_SCHEMA).message.content) == {
        "answer": "kitchen"
    }
    with pytest.raises(LLMError, match="scripted returned invalid JSON") as bad:
        model.chat([Message.user("q")], response_schema=ANSWER_SCHEMA)
    assert bad.value.kind == "bad_response"
    fenced = model.chat([Message.user("q")], response_schema=ANSWER_SCHEMA)
    assert fenced.message.content == '{"answer": "hall"}'


# -- message and usage types -------------------------------------------------------------------------
def test_message_constructors_and_usage_arithmetic() -> None:
    call = ToolCall("c1", "run_cypher", {"query": "RETURN 1"})
    assert Message.system("s").role == "system"
    assert Message.assistant("thinking", tool_calls=[call]).to_dict() == {
        "role": "assistant",
        "content": "thinking",
        "tool_calls": [{"id": "c1", "name": "run_cypher", "arguments": {"query": "RETURN 1"}}],
    }
    assert Message.tool("c1", "[]").to_dict() == {"role": "tool", "content": "[]", "tool_call_id": "c1"}
    total = sum([Usage(10, 2), Usage(5, 1), Usage(1, 1)])
    assert total == Usage(16, 4)
    assert total.total_tokens == 20
    assert Usage(1, 2) + Usage(3, 4) == Usage(4, 6)
    assert isinstance(SceneRagError, type) and issubclass(LLMError, SceneRagError)
    assert str(LLMError("auth", "no key", hint="set it")) == "auth: no key (set it)"


def test_estimate_tokens_rule() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("   ") == 0
    assert estimate_tokens("chair") == 1
    assert estimate_tokens("a chair") == 2
    assert estimate_tokens("nodeSymbol") == 2  # ceil(10 / 8)
    assert estimate_tokens("(n:Room)") == 5  # ( n : Room )
    assert (
        estimate_tokens("-[:CONTAINS]->") == 5
    )  # -[: (2) CONTAINS (1) ]-> (2): punctuation runs ceil(len / 2)
    assert estimate_tokens("2024") == 4  # digits count one each
    assert estimate_tokens("été") == 3  # non-ASCII: one per character


# -- JSON replies ------------------------------------------------------------------------------------
def test_parse_json_reply_checks_type_and_required_keys() -> None:
    value, text = parse_json_reply(' {"answer": "x"} ', ANSWER_SCHEMA, "m")
    assert value == {"answer": "x"} and text == '{"answer": "x"}'
    with pytest.raises(LLMError, match="wrong type: expected object, got list"):
        parse_json_reply("[1]", ANSWER_SCHEMA, "m")
    with pytest.raises(LLMError, match="required key"):
        parse_json_reply('{"other": 1}', ANSWER_SCHEMA, "m")
    with pytest.raises(LLMError, match="model m returned invalid JSON"):
        parse_json_reply('{"answer": "cut', ANSWER_SCHEMA, "m")
    with pytest.raises(LLMError, match="wrong type"):
        parse_json_reply("true", {"type": "integer"}, "m")  # bool is not an integer
    assert parse_json_reply("3", {"type": ["integer", "null"]}, "m")[0] == 3


def test_strict_schema_detection() -> None:
    strict = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert is_strict_schema(strict)
    assert not is_strict_schema(ANSWER_SCHEMA)  # additionalProperties not false
    nested = {
        "type": "object",
        "properties": {"inner": ANSWER_SCHEMA},
        "required": ["inner"],
        "additionalProperties": False,
    }
    assert not is_strict_schema(nested)
    assert is_strict_schema({"type": "array", "items": strict})


# -- retries -----------------------------------------------------------------------------------------
class _Flaky:
    def __init__(self, failures: int, exc: Exception) -> None:
        self.failures = failures
        self.exc = exc
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc
        return "ok"


def test_retries_back_off_exponentially_and_honour_retry_after() -> None:
    slept: list[float] = []
    flaky = _Flaky(3, RuntimeError("busy"))
    policy = RetryPolicy(max_retries=5, initial_backoff_s=1.0, max_backoff_s=3.0)
    assert call_with_retries(flaky, policy=policy, retry_after=lambda e: None, sleep=slept.append) == "ok"
    assert flaky.calls == 4
    assert 0.5 <= slept[0] <= 1.0 and 1.0 <= slept[1] <= 2.0 and 1.5 <= slept[2] <= 3.0  # jittered ×[0.5, 1]

    slept.clear()
    flaky = _Flaky(1, RuntimeError("429"))
    call_with_retries(flaky, policy=policy, retry_after=lambda e: 2.5, sleep=slept.append)
    assert slept == [2.5]
    slept.clear()
    call_with_retries(
        _Flaky(1, RuntimeError("429")), policy=policy, retry_after=lambda e: 99.0, sleep=slept.append
    )
    assert slept == [3.0]  # capped at max_backoff_s


def test_retries_are_bounded_and_skip_non_retryable_errors() -> None:
    slept: list[float] = []
    flaky = _Flaky(10, RuntimeError("down"))
    with pytest.raises(RuntimeError, match="down"):
        call_with_retries(
            flaky,
            policy=RetryPolicy(max_retries=2, initial_backoff_s=0.01),
            retry_after=lambda e: None,
            sleep=slept.append,
        )
    assert flaky.calls == 3 and len(slept) == 2
    flaky = _Flaky(10, ValueError("bad request"))
    with pytest.raises(ValueError):
        call_with_retries(flaky, policy=RetryPolicy(), retry_after=lambda e: False, sleep=slept.append)
    assert flaky.calls == 1
    flaky = _Flaky(10, RuntimeError("slow"))
    with pytest.raises(RuntimeError):  # the waiting budget ends it before max_retries
        call_with_retries(
            flaky,
            policy=RetryPolicy(max_retries=10, max_total_s=5.0),
            retry_after=lambda e: 3.0,
            sleep=lambda s: None,
        )
    assert flaky.calls == 2


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


# -- tool actions (tool calling for models without native support) ----------------------------------
def test_tool_action_schema_and_parsing() -> None:
    schema = tool_action_schema([QUERY_TOOL])
    tool_branch, answer_branch = schema["oneOf"]
    assert tool_branch["properties"]["tool"] == {"const": "run_cypher"}
    assert tool_branch["properties"]["arguments"]["required"] == ["query"]
    assert answer_branch["properties"]["answer"] == {"type": "string"}
    assert (
        tool_action_schema([QUERY_TOOL], ANSWER_SCHEMA)["oneOf"][1]["properties"]["answer"] == ANSWER_SCHEMA
    )
    text = tool_action_instructions([QUERY_TOOL])
    assert "run_cypher: Run a read-only Cypher query" in text and '"required":["query"]' in text

    message, finish = parse_tool_action(
        {"tool": "run_cypher", "arguments": {"query": "RETURN 1"}}, [QUERY_TOOL], "m", "call_7"
    )
    assert finish == "tool_calls" and message.tool_calls == [
        ToolCall("call_7", "run_cypher", {"query": "RETURN 1"})
    ]
    message, finish = parse_tool_action({"answer": "three"}, [QUERY_TOOL], "m", "x")
    assert finish == "stop" and message.content == "three" and not message.tool_calls
    message, _ = parse_tool_action(
        {"answer": {"answer": "k"}}, [QUERY_TOOL], "m", "x", structured_answer=True
    )
    assert json.loads(message.content) == {"answer": "k"}
    with pytest.raises(LLMError, match="unknown tool 'drop_db'"):
        parse_tool_action({"tool": "drop_db", "arguments": {}}, [QUERY_TOOL], "m", "x")
    with pytest.raises(LLMError, match="neither a tool call nor an answer"):
        parse_tool_action({"thought": "hmm"}, [QUERY_TOOL], "m", "x")


def test_tool_action_history_rewrites_tool_turns() -> None:
    call = ToolCall("c9", "run_cypher", {"query": "RETURN 1"})
    rewritten = tool_action_history(
        [
            Message.user("q"),
            Message.assistant("", [call]),
            Message.tool("c9", "[1]"),
        ]
    )
    assert [m.role for m in rewritten] == ["user", "assistant", "user"]
    assert json.loads(rewritten[1].content) == {"tool": "run_cypher", "arguments": {"query": "RETURN 1"}}
    assert rewritten[2].content == "Result of run_cypher (call c9):\n[1]"
    assert all(not m.tool_calls and m.tool_call_id is None for m in rewritten)


# -- factory -----------------------------------------------------------------------------------------
def test_factory_builds_scripted_and_reads_env(monkeypatch: pytest.MonkeyPatch) -> None:
    model = make_chat_model("scripted", script=["hi"])
    assert isinstance(model, ScriptedChatModel)
    assert model.chat([Message.user("x")]).message.content == "hi"
    monkeypatch.setenv("SCENERAG_LLM", "scripted")
    assert isinstance(make_chat_model(), ScriptedChatModel)
    with pytest.raises(LLMError, match="unknown chat model spec 'gemini:pro'") as info:
        make_chat_model("gemini:pro")
    assert info.value.kind == "bad_request" and "openai:MODEL" in str(info.value)


def test_factory_passes_model_names_with_colons_to_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("SCENERAG_OPENAI_BASE_URL", raising=False)
    model: Any = make_chat_model("openai:qwen2.5-coder:7b")
    assert model.name == "openai:qwen2.5-coder:7b"
    assert model.model == "qwen2.5-coder:7b"
    assert model.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(LLMError, match="no model name"):
        make_chat_model("openai")
