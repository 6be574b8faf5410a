"""OpenAIEmbedder against a real in-process HTTP server speaking the /v1/embeddings wire format."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from scenerag.retrieval.embeddings import EmbeddingError, make_embedder
from scenerag.retrieval.embeddings_openai import OpenAIEmbedder

pytest.importorskip("openai")

DIM = 8


def fake_vector(text: str) -> list[float]:
    """Deterministic, deliberately unnormalised vector of a text."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 128) / 10.0 for b in digest[:DIM]]


class EmbeddingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), EmbeddingHandler)
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self.fail_next = 0  # answer this many requests with HTTP 500 first


class EmbeddingHandler(BaseHTTPRequestHandler):
    server: EmbeddingServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        if self.path != "/v1/embeddings":
            self._reply(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        self.server.requests.append(body)
        self.server.auth_headers.append(self.headers.get("Authorization"))
        if self.server.fail_next > 0:
            self.server.fail_next -= 1
            self._reply(500, {"error": {"message": "temporary failure", "type": "server_error"}})
            return
        if body.get("model") != "test-embed":
            self._reply(
                404, {"error": {"message": f"model {body.get('model')!r} not found", "type": "invalid"}}
            )
            return
        texts = body["input"]
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)]
        data.reverse()  # clients must order by "index", not by position
        self._reply(
            200,
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            },
        )


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def base_url(srv: EmbeddingServer) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}/v1"


def test_embeds_in_batches_in_input_order_and_normalised(server: EmbeddingServer) -> None:
    embedder = OpenAIEmbedder("test-embed", base_url=base_url(server), api_key="sk-test", dim=DIM)
    texts = [f"object number {i}" for i in range(10)] + ["object number 3"]
    progress: list[tuple[str, int, int]] = []
    vectors = embedder.embed(texts, batch_size=4, progress=lambda *a: progress.append(a))
    assert vectors.shape == (11, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    for text, row in zip(texts, vectors, strict=True):
        expected = np.asarray(fake_vector(text), dtype=np.float32)
        assert np.allclose(row, expected / np.linalg.norm(expected), atol=1e-6)
    # 10 distinct texts, batches of <= 4: three requests, each asking for float encoding
    assert [len(r["input"]) for r in server.requests] == [4, 4, 2]
    assert all(r["encoding_format"] == "float" and r["model"] == "test-embed" for r in server.requests)
    assert server.auth_headers[0] == "Bearer sk-test"
    assert progress[0] == ("embed", 0, 10) and progress[-1] == ("embed", 10, 10)
    # cached texts are not requested again
    embedder.embed(["object number 1", "object number 2"])
    assert len(server.requests) == 3
    assert embedder.stats().texts_encoded == 10


def test_dimension_is_probed_and_factory_spec(server: EmbeddingServer) -> None:
    embedder = make_embedder("openai:test-embed", base_url=base_url(server))
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.name == "openai:test-embed"
    assert embedder.dim == DIM
    assert len(server.requests) == 1
    assert embedder.embed([]).shape == (0, DIM)


def test_transient_server_errors_are_retried(server: EmbeddingServer) -> None:
    server.fail_next = 1
    embedder = OpenAIEmbedder("test-embed", base_url=base_url(server), dim=DIM, max_retries=2)
    assert embedder.embed(["retry me"]).shape == (1, DIM)
    assert len(server.requests) == 2


def test_error_status_raises_embedding_error(server: EmbeddingServer) -> None:
    embedder = OpenAIEmbedder("no-such-model", base_url=base_url(server), dim=DIM, max_retries=0)
    with pytest.raises(EmbeddingError, match=r"HTTP 404 .*no-such-model"):
        embedder.embed(["x"])
    server.fail_next = 5
    flaky = OpenAIEmbedder("test-embed", base_url=base_url(server), dim=DIM, max_retries=1)
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        flaky.embed(["x"])


def test_unreachable_endpoint_raises_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound but not listening: connections are refused, and no one else gets it
        port = s.getsockname()[1]
        embedder = OpenAIEmbedder(
            "test-embed", base_url=f"http://127.0.0.1:{port}/v1", dim=DIM, max_retries=0, timeout_s=5
        )
        with pytest.raises(
            EmbeddingError, match=rf"cannot reach the embedding endpoint http://127\.0\.0\.1:{port}/v1"
        ):
            embedder.embed(["hello"])


def test_bad_specs_and_arguments() -> None:
    with pytest.raises(EmbeddingError, match="unknown embedder spec"):
        make_embedder("clip:whatever")
    with pytest.raises(EmbeddingError, match="unknown embedder spec"):
        make_embedder("openai:")
    with pytest.raises(EmbeddingError, match="does not exist"):
        make_embedder("st:/nonexistent/model/folder")
    embedder = OpenAIEmbedder("test-embed", base_url="http://127.0.0.1:9/v1", dim=DIM)
    with pytest.raises(EmbeddingError, match="single string"):
        embedder.embed("chair")  # type: ignore[arg-type]
