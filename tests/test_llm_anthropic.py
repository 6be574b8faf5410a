"""``AnthropicChatModel`` against a real HTTP server on 127.0.0.1 speaking the Messages API wire format.

These tests check the client's wire handling (system separation, tool_use/tool_result mapping, JSON via a
forced tool, retries, errors); the server's replies are scripted and say nothing about model quality.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from scenerag.llm import LLMError, Message, RetryPolicy, ToolCall, ToolSpec, make_chat_model
from scenerag.llm.anthropic import REPLY_TOOL, AnthropicChatModel

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
}


@dataclass
class FakeServer:
    url: str
    replies: list[Reply] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)


def message(*blocks: dict[str, Any], stop: str = "end_turn", usage: tuple[int, int] = (20, 5)) -> Reply:
    return (
        200,
        {},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": list(blocks),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        },
    )


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def error(status: int, kind: str, text_: str, headers: dict[str, str] | None = None) -> Reply:
    return status, headers or {}, {"type": "error", "error": {"type": kind, "message": text_}}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status, headers, payload = (
                state.replies.pop(0)
                if state.replies
                else error(500, "api_error", "test server: no scripted reply left")
            )
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
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def model_for(server: FakeServer, **options: Any) -> AnthropicChatModel:
    options.setdefault("retry", FAST_RETRY)
    return AnthropicChatModel("claude-test", base_url=server.url, api_key="sk-test", timeout_s=5.0, **options)


def test_system_prompt_is_separated_and_usage_reported(server: FakeServer) -> None:
    server.replies.append(message(text("Three "), text("chairs."), usage=(31, 4)))
    response = model_for(server).chat(
        [Message.system("You answer."), Message.system("Be brief."), Message.user("How many chairs?")]
    )
    assert response.message.content == "Three chairs."
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 4)
    assert response.finish_reason == "stop" and response.model == "claude-test"
    path, headers, body = server.requests[0]
    assert path == "/v1/messages"
    assert headers.get("x-api-key") == "sk-test" or headers.get("authorization") == "Bearer sk-test"
    assert body["system"] == "You answer.\n\nBe brief."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "How many chairs?"}]}]
    assert body["max_tokens"] == 4096 and body["model"] == "claude-test"
    assert "tools" not in body and "tool_choice" not in body


def test_tool_use_and_tool_result_mapping(server: FakeServer) -> None:
    server.replies += [
        message(
            text("Let me look."),
            tool_use("toolu_1", "run_cypher", {"query": "MATCH (r:Room) RETURN r"}),
            tool_use("toolu_2", "run_cypher", {"query": "MATCH (o:Object) RETURN o"}),
            stop="tool_use",
        ),
        message(text("Two rooms, five objects.")),
    ]
    model = model_for(server)
    history = [Message.user("Describe the scene.")]
    first = model.chat(history, tools=[QUERY_TOOL])
    assert first.finish_reason == "tool_calls" and first.message.content == "Let me look."
    assert first.message.tool_calls == [
        ToolCall("toolu_1", "run_cypher", {"query": "MATCH (r:Room) RETURN r"}),
        ToolCall("toolu_2", "run_cypher", {"query": "MATCH (o:Object) RETURN o"}),
    ]
    history += [first.message, Message.tool("toolu_1", "[2 rooms]"), Message.tool("toolu_2", "[5 objects]")]
    assert model.chat(history, tools=[QUERY_TOOL]).message.content == "Two rooms, five objects."

    assert server.requests[0][2]["tools"] == [
        {
            "name": "run_cypher",
            "description": "Run a read-only Cypher query.",
            "input_schema": QUERY_TOOL.parameters,
        }
    ]
    turns = server.requests[1][2]["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]  # the two results share one user turn
    assert turns[1]["content"] == [
        {"type": "text", "text": "Let me look."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "run_cypher",
            "input": {"query": "MATCH (r:Room) RETURN r"},
        },
        {
            "type": "tool_use",
            "id": "toolu_2",
            "name": "run_cypher",
            "input": {"query": "MATCH (o:Object) RETURN o"},
        },
    ]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[2 rooms]"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "[5 objects]"},
    ]


def test_temperature_is_sent_and_defaults_to_zero(server: FakeServer) -> None:
    server.replies += [message(text("a")), message(text("b"))]
    model = model_for(server)
    model.chat([Message.user("q")])
    model.chat([Message.user("q")], temperature=0.7)
    assert server.requests[0][2]["temperature"] == 0
    assert server.requests[1][2]["temperature"] == 0.7


def test_temperature_is_left_out_where_the_request_cannot_take_it(server: FakeServer) -> None:
    server.replies += [message(text("a")), message(text("b")), message(text("c"))]
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    model_for(server, extra_body=thinking).chat([Message.user("q")])
    model_for(server, extra_body={"temperature": 1.0}).chat([Message.user("q")])
    model_for(server, send_temperature=False).chat([Message.user("q")])
    bodies = [body for _, _, body in server.requests]
    assert "temperature" not in bodies[0] and bodies[0]["thinking"]["type"] == "enabled"
    assert bodies[1]["temperature"] == 1.0  # the caller's own value, not ours
    assert "temperature" not in bodies[2]


def test_a_model_that_refuses_temperature_is_asked_again_without_it(server: FakeServer) -> None:
    server.replies += [
        error(400, "invalid_request_error", "`temperature` is deprecated for this model."),
        message(text("first")),
        message(text("second")),
        error(400, "invalid_request_error", "messages: at least one message is required"),
    ]
    model = model_for(server)
    assert model.chat([Message.user("q")]).message.content == "first"
    assert model.chat([Message.user("q")]).message.content == "second"
    assert [("temperature" in body) for _, _, body in server.requests] == [True, False, False]
    assert not model.send_temperature
    with pytest.raises(LLMError) as info:  # other 400s are not repeated
        model.chat([Message.user("q")])
    assert info.value.kind == "bad_request" and len(server.requests) == 4


def test_json_reply_through_a_forced_tool(server: FakeServer) -> None:
    server.replies += [
        message(tool_use("toolu_9", REPLY_TOOL, {"room": "kitchen", "count": 3}), stop="tool_use"),
        message(tool_use("toolu_8", REPLY_TOOL, {"value": ["a", "b"]}), stop="tool_use"),
        message(tool_use("toolu_7", REPLY_TOOL, {"room": "hall"}), stop="tool_use"),
    ]
    model = model_for(server)
    response = model.chat([Message.user("Where?")], response_schema=ROOM_SCHEMA)
    assert json.loads(response.message.content) == {"room": "kitchen", "count": 3}
    assert response.finish_reason == "stop" and not response.message.tool_calls
    body = server.requests[0][2]
    assert body["tool_choice"] == {"type": "tool", "name": REPLY_TOOL}
    assert body["tools"][0]["name"] == REPLY_TOOL and body["tools"][0]["input_schema"] == ROOM_SCHEMA

    list_schema = {"type": "array", "items": {"type": "string"}}
    assert json.loads(model.chat([Message.user("Which?")], response_schema=list_schema).message.content) == [
        "a",
        "b",
    ]
    wrapped = server.requests[1][2]["tools"][0]["input_schema"]
    assert wrapped == {"type": "object", "properties": {"value": list_schema}, "required": ["value"]}

    with pytest.raises(LLMError, match="without the required key\\(s\\) count") as info:
        model.chat([Message.user("Where?")], response_schema=ROOM_SCHEMA)
    assert info.value.kind == "bad_response"


def test_json_reply_with_other_tools_forces_any_tool(server: FakeServer) -> None:
    server.replies += [
        message(tool_use("t1", "run_cypher", {"query": "RETURN 1"}), stop="tool_use"),
        message(tool_use("t2", REPLY_TOOL, {"room": "den", "count": 1}), stop="tool_use"),
    ]
    model = model_for(server)
    first = model.chat([Message.user("q")], tools=[QUERY_TOOL], response_schema=ROOM_SCHEMA)
    assert first.message.tool_calls[0].name == "run_cypher"
    second = model.chat([Message.user("q")], tools=[QUERY_TOOL], response_schema=ROOM_SCHEMA)
    assert json.loads(second.message.content) == {"room": "den", "count": 1}
    assert server.requests[0][2]["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in server.requests[0][2]["tools"]] == ["run_cypher", REPLY_TOOL]


def test_overload_and_rate_limit_are_retried(server: FakeServer) -> None:
    server.replies += [
        error(529, "overloaded_error", "Overloaded"),
        error(429, "rate_limit_error", "slow down", headers={"retry-after": "0"}),
        message(text("ok")),
    ]
    assert model_for(server).chat([Message.user("q")]).message.content == "ok"
    assert len(server.requests) == 3


def test_errors_are_classified(server: FakeServer) -> None:
    server.replies += [
        error(404, "not_found_error", "model: claude-test"),
        error(401, "authentication_error", "invalid x-api-key"),
        error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
    ]
    model = model_for(server)
    kinds = []
    for _ in range(3):
        with pytest.raises(LLMError) as info:
            model.chat([Message.user("q")])
        kinds.append(info.value.kind)
    assert kinds == ["model_not_found", "auth", "context_overflow"]
    assert len(server.requests) == 3  # none of these is retried


def test_dead_endpoint_is_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = AnthropicChatModel(
        "claude-test", base_url=f"http://127.0.0.1:{port}", api_key="k", timeout_s=2.0, retry=FAST_RETRY
    )
    with pytest.raises(LLMError, match=f"cannot reach the Anthropic API at http://127.0.0.1:{port}") as info:
        model.chat([Message.user("q")])
    assert info.value.kind == "unreachable"


def test_missing_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(LLMError, match=r"no API key for https://api\.anthropic\.com") as info:
        make_chat_model("anthropic:claude-sonnet-4-5")
    assert info.value.kind == "auth" and "ANTHROPIC_API_KEY" in str(info.value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert make_chat_model("anthropic:claude-sonnet-4-5").name == "anthropic:claude-sonnet-4-5"


def test_stop_strings_go_as_stop_sequences(server: FakeServer) -> None:
    server.replies += [message(text("MATCH (n) RETURN n"))]
    model_for(server).chat([Message.user("q")], stop=["\nQ:", "\n\n"])
    assert server.requests[0][2]["stop_sequences"] == ["\nQ:"]  # whitespace-only ones are refused by the API
