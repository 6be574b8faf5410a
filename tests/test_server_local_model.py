"""The server's default model, for real (issue 24 item 1): a server started with the ``local`` spec (what
``scenerag serve`` uses unless told otherwise) loads the GGUF model in the background, answers ``/health``
at once while it loads (``load.llm.state``: loading, then ready), and MCP ``ask`` works with it.

Needs the ``[local]`` extra (scripts/setup.sh) and loads a 1.1 GB model: marked slow; run it under the
shared lock on a shared machine.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from scenerag import SceneGraph
from scenerag.serve import BackgroundServer, SceneService, ServerConfig
from scenerag.serve.http_api import create_app
from scenerag.store import CypherStore, open_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph) -> Iterator[CypherStore]:
    pytest.importorskip("llama_cpp", reason="the local model needs the [local] extra")
    s = open_store(tmp_path_factory.mktemp("local-serve") / "db")
    s.load(hydra_graph)
    yield s
    s.close()


async def _ask(url: str, question: str) -> Any:
    from mcp import Client

    async with Client(url) as client:
        return await client.call_tool("ask", {"question": question})


def test_default_local_model_loads_in_the_background_and_answers_over_mcp(store: CypherStore) -> None:
    service = SceneService(store, ServerConfig(rate_limit_per_s=None), llm="local")
    with BackgroundServer(create_app(service)) as srv, httpx2.Client(base_url=srv.url, timeout=10) as c:
        service.warm_up()  # what serve() does once the database is open
        start = time.monotonic()
        first = c.get("/health")
        assert first.status_code == 200 and time.monotonic() - start < 1.0  # not blocked by the load
        states = [first.json()["load"]["llm"]["state"]]
        assert states[0] in ("loading", "ready")
        deadline = time.monotonic() + 600
        while states[-1] == "loading" and time.monotonic() < deadline:
            time.sleep(0.5)
            states.append(c.get("/health").json()["load"]["llm"]["state"])
        llm = c.get("/health").json()["load"]["llm"]
        assert llm["state"] == "ready", llm
        assert llm["load_s"] > 0
        result = asyncio.run(_ask(srv.url + "/mcp", "How many rooms are there?"))
    assert result.is_error is False, result.content
    run = result.structured_content
    assert run["llm_calls"] >= 1 and run["answer"] is not None
