"""``OpenAIChatModel`` against a real HTTP server on 127.0.0.1 speaking the chat-completions wire format.

These tests check the client's wire handling (requests, tool calls, structured replies, retries, errors);
the server's replies are scripted, so they say nothing about any model's quality.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from scenerag.llm import LLMError, Message, RetryPolicy, ToolCall, ToolSpec, make_chat_model
from scenerag.llm.openai_compat import OpenAIChatModel

Reply = tuple[int, dict[str, str], dict[str, Any]]
FAST_RETRY = RetryPolicy(max_retries=2, initial_backoff_s=0.01, max_backoff_s=0.05)
QUERY_TOOL = ToolSpec(
    "run_cypher",
    "Run a read-only Cypher query.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
ROOM_SCHEMA = {
    "type": "object",
    "properties": {"room": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["room", "count"],
    "additionalProperties": False,
}


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeServer:
    """Answers each POST with the next scripted reply (a tuple, or a callable of the request body)."""

    url: str
    replies: list[Reply | Callable[[dict[str, Any]], Reply]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)


def completion(
    content: str | None = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str = "stop",
    model: str = "served-model",
    usage: tuple[int, int] = (11, 3),
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return (
        200,
        {},
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        },
    )


def error(
    status: int, message: str, *, code: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    return (
        status,
        headers or {},
        {"error": {"message": message, "type": "invalid_request_error", "code": code}},
    )


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if not state.replies:
                status, headers, payload = error(500, "test server: no scripted reply left")
            else:
                entry = state.replies.pop(0)
                status, headers, payload = entry(body) if callable(entry) else entry
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def model_for(server: FakeServer, **options: Any) -> OpenAIChatModel:
    options.setdefault("retry", FAST_RETRY)
    return OpenAIChatModel("served-model", base_url=server.url, api_key="test-key", timeout_s=5.0, **options)


def test_plain_chat_request_and_usage(server: FakeServer) -> None:
    server.replies.append(completion("There are 3 chairs.", usage=(42, 7)))
    model = model_for(server)
    response = model.chat([Message.system("You answer."), Message.user("How many chairs?")], max_tokens=64)
    assert response.message.content == "There are 3 chairs."
    assert response.usage.input_tokens == 42 and response.usage.output_tokens == 7
    assert response.model == "served-model" and response.finish_reason == "stop"
    [req] = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer test-key"
    assert req.body["model"] == "served-model"
    assert req.body["temperature"] == 0.0 and req.body["seed"] == 0 and req.body["max_tokens"] == 64
    assert req.body["messages"] == [
        {"role": "system", "content": "You answer."},
        {"role": "user", "content": "How many chairs?"},
    ]
    assert "tools" not in req.body and "response_format" not in req.body


def test_native_tool_calls_round_trip(server: FakeServer) -> None:
    server.replies += [
        completion(
            None,
            finish="tool_calls",
            tool_calls=[
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {
                        "name": "run_cypher",
                        "arguments": '{"query": "MATCH (r:Room) RETURN count(r)"}',
                    },
                }
            ],
        ),
        completion("There are 4 rooms."),
    ]
    model = model_for(server)
    history = [Message.user("How many rooms?")]
    first = model.chat(history, tools=[QUERY_TOOL])
    assert first.finish_reason == "tool_calls"
    assert first.message.tool_calls == [
        ToolCall("call_abc", "run_cypher", {"query": "MATCH (r:Room) RETURN count(r)"})
    ]
    history += [first.message, Message.tool("call_abc", '[{"count(r)": 4}]')]
    assert model.chat(history, tools=[QUERY_TOOL]).message.content == "There are 4 rooms."

    sent_tools = server.requests[0].body["tools"]
    assert sent_tools == [
        {
            "type": "function",
            "function": {
                "name": "run_cypher",
                "description": "Run a read-only Cypher query.",
                "parameters": QUERY_TOOL.parameters,
            },
        }
    ]
    assistant, tool = server.requests[1].body["messages"][1:]
    assert assistant["tool_calls"][0]["id"] == "call_abc"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "query": "MATCH (r:Room) RETURN count(r)"
    }
    assert assistant["content"] is None
    assert tool == {"role": "tool", "tool_call_id": "call_abc", "content": '[{"count(r)": 4}]'}


def test_invalid_tool_arguments_are_a_bad_response(server: FakeServer) -> None:
    server.replies.append(
        completion(
            None,
            finish="tool_calls",
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "run_cypher", "arguments": '{"query": '},
                }
            ],
        )
    )
    with pytest.raises(
        LLMError, match="openai:served-model gave invalid JSON arguments for tool 'run_cypher'"
    ) as info:
        model_for(server).chat([Message.user("q")], tools=[QUERY_TOOL])
    assert info.value.kind == "bad_response"


def test_json_schema_response_format(server: FakeServer) -> None:
    server.replies += [completion('{"room": "kitchen", "count": 3}'), completion("kitchen has 3")]
    model = model_for(server)
    response = model.chat([Message.user("Where are the chairs?")], response_schema=ROOM_SCHEMA)
    assert json.loads(response.message.content) == {"room": "kitchen", "count": 3}
    fmt = server.requests[0].body["response_format"]
    assert fmt == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": ROOM_SCHEMA, "strict": True},
    }
    with pytest.raises(LLMError, match="openai:served-model returned invalid JSON") as info:
        model.chat([Message.user("again")], response_schema=ROOM_SCHEMA)
    assert info.value.kind == "bad_response"


def test_json_schema_rejected_falls_back_to_json_object(server: FakeServer) -> None:
    server.replies += [
        error(400, "response_format type 'json_schema' is not supported"),
        completion('{"room": "hall", "count": 1}'),
        completion('{"room": "bath", "count": 2}'),
    ]
    model = model_for(server)
    response = model.chat([Message.system("Be brief."), Message.user("q")], response_schema=ROOM_SCHEMA)
    assert json.loads(response.message.content) == {"room": "hall", "count": 1}
    assert model.json_mode == "json_object"
    first, second = server.requests[:2]
    assert first.body["response_format"]["type"] == "json_schema"
    assert second.body["response_format"] == {"type": "json_object"}
    system = second.body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(
        "Be brief.\n\nReply with only one JSON value"
    )
    assert '"required":["room","count"]' in system["content"]
    # the working mode is remembered: the next call goes straight to json_object
    model.chat([Message.user("q2")], response_schema=ROOM_SCHEMA)
    assert len(server.requests) == 3 and server.requests[2].body["response_format"] == {"type": "json_object"}


def test_unrelated_bad_request_is_not_retried_as_a_format_problem(server: FakeServer) -> None:
    server.replies.append(
        error(400, "This model's maximum context length is 4096 tokens.", code="context_length_exceeded")
    )
    with pytest.raises(LLMError) as info:
        model_for(server).chat([Message.user("q" * 10)], response_schema=ROOM_SCHEMA)
    assert info.value.kind == "context_overflow" and info.value.status_code == 400
    assert len(server.requests) == 1


def test_rate_limit_is_retried_honouring_retry_after(server: FakeServer) -> None:
    server.replies += [
        error(429, "Rate limit reached", headers={"Retry-After": "0"}),
        error(503, "overloaded"),
        completion("ok"),
    ]
    assert model_for(server).chat([Message.user("q")]).message.content == "ok"
    assert len(server.requests) == 3


def test_persistent_rate_limit_gives_up_after_bounded_retries(server: FakeServer) -> None:
    server.replies += [error(429, "Rate limit reached", headers={"retry-after-ms": "10"})] * 5
    with pytest.raises(LLMError, match="rate-limited served-model") as info:
        model_for(server).chat([Message.user("q")])
    assert info.value.kind == "rate_limit"
    assert len(server.requests) == FAST_RETRY.max_retries + 1


def test_quota_exhaustion_is_not_retried(server: FakeServer) -> None:
    server.replies += [error(429, "You exceeded your current quota", code="insufficient_quota")] * 3
    with pytest.raises(LLMError, match="check billing") as info:
        model_for(server).chat([Message.user("q")])
    assert info.value.kind == "rate_limit" and len(server.requests) == 1


def test_unknown_model_and_bad_key(server: FakeServer) -> None:
    server.replies += [
        error(404, "The model `served-model` does not exist.", code="model_not_found"),
        error(401, "Incorrect API key provided"),
    ]
    model = model_for(server)
    with pytest.raises(LLMError, match="does not serve model 'served-model'") as info:
        model.chat([Message.user("q")])
    assert info.value.kind == "model_not_found" and f"{server.url}/models" in str(info.value)
    with pytest.raises(LLMError, match="refused the API key") as info:
        model.chat([Message.user("q")])
    assert info.value.kind == "auth"


def test_emulated_tools_for_servers_without_a_tool_parser(server: FakeServer) -> None:
    server.replies += [
        completion('{"tool": "run_cypher", "arguments": {"query": "RETURN 1"}}'),
        completion('{"answer": "one"}'),
    ]
    model = model_for(server, supports_tools=False)
    first = model.chat([Message.user("q")], tools=[QUERY_TOOL])
    [call] = first.message.tool_calls
    assert (call.name, call.arguments, first.finish_reason) == (
        "run_cypher",
        {"query": "RETURN 1"},
        "tool_calls",
    )
    second = model.chat([Message.user("q"), first.message, Message.tool(call.id, "[1]")], tools=[QUERY_TOOL])
    assert second.message.content == "one" and not second.message.tool_calls

    body = server.requests[0].body
    assert "tools" not in body
    assert body["response_format"]["json_schema"]["schema"]["oneOf"][0]["properties"]["tool"] == {
        "const": "run_cypher"
    }
    assert "run_cypher: Run a read-only Cypher query." in body["messages"][0]["content"]
    followup = server.requests[1].body["messages"]
    assert [m["role"] for m in followup] == ["system", "user", "assistant", "user"]
    assert followup[3]["content"] == f"Result of run_cypher (call {call.id}):\n[1]"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dead_endpoint_is_reported_as_unreachable() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    model = OpenAIChatModel("m", base_url=url, timeout_s=2.0, retry=FAST_RETRY)
    with pytest.raises(LLMError, match="cannot reach the OpenAI-compatible endpoint") as info:
        model.chat([Message.user("q")])
    assert info.value.kind == "unreachable"
    assert url in str(info.value) and "OPENAI_BASE_URL" in str(info.value)


def test_missing_key_for_api_openai_com(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SCENERAG_OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(
        LLMError, match=r"no API key for https://api.openai.com/v1 \(model gpt-4.1-mini\)"
    ) as info:
        make_chat_model("openai:gpt-4.1-mini")
    assert info.value.kind == "auth" and "OPENAI_API_KEY" in str(info.value)


def test_base_url_from_env_and_no_key_needed_for_local_servers(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("SCENERAG_OPENAI_BASE_URL", server.url)  # takes precedence
    server.replies.append(completion("hi"))
    model = make_chat_model("openai:served-model", retry=FAST_RETRY)
    assert model.chat([Message.user("q")]).message.content == "hi"
    assert model.context_window == 8192  # unknown model: the documented default
    assert make_chat_model("openai:gpt-4o-mini").context_window == 128_000


def test_a_timed_out_request_is_not_retried(server: FakeServer) -> None:
    def slow(body: dict[str, Any]) -> Reply:
        time.sleep(1.0)
        return completion("late")

    server.replies.append(slow)
    model = OpenAIChatModel("served-model", base_url=server.url, api_key="k", timeout_s=0.2, retry=FAST_RETRY)
    with pytest.raises(LLMError, match=r"no reply from .* within 0\.2 s") as info:
        model.chat([Message.user("q")])
    assert info.value.kind == "unreachable" and "timeout_s" in str(info.value)
    assert len(server.requests) == 1


def test_stop_strings_are_sent(server: FakeServer) -> None:
    server.replies.append(completion("MATCH (n) RETURN n"))
    model_for(server).chat([Message.user("q")], stop=["\nQ:", "\n\n"])
    assert server.requests[0].body["stop"] == ["\nQ:", "\n\n"]
