"""Build a :class:`ChatModel` from a spec string: ``local``, ``local:/path.gguf``, ``openai:MODEL``,
``anthropic:MODEL`` or ``scripted``.

With ``spec=None`` the ``SCENERAG_LLM`` environment variable is used, else ``local``. Keyword options go to
the backend's constructor (e.g. ``n_ctx`` for local, ``base_url``/``api_key``/``supports_tools`` for
OpenAI-compatible servers, ``script`` for the scripted model).
"""

from __future__ import annotations

import os
from typing import Any

from scenerag.llm.base import ChatModel, LLMError

DEFAULT_SPEC = "local"
SPEC_FORMS = ("local", "local:/path/to/model.gguf", "openai:MODEL", "anthropic:MODEL", "scripted")


def make_chat_model(spec: str | None = None, **options: Any) -> ChatModel:
    """The chat model named by ``spec`` (see module docstring); raises ``LLMError`` on a bad spec."""
    text = (spec if spec is not None else os.environ.get("SCENERAG_LLM") or DEFAULT_SPEC).strip()
    backend, _, arg = text.partition(":")
    backend = backend.lower()
    if backend == "local":
        from scenerag.llm.local import LocalChatModel

        return LocalChatModel(arg or options.pop("model_path", None), **options)
    if backend == "openai":
        from scenerag.llm.openai_compat import OpenAIChatModel

        return OpenAIChatModel(arg or options.pop("model", ""), **options)
    if backend == "anthropic":
        from scenerag.llm.anthropic import AnthropicChatModel

        return AnthropicChatModel(arg or options.pop("model", ""), **options)
    if backend == "scripted":
        from scenerag.llm.scripted import ScriptedChatModel

        return ScriptedChatModel(options.pop("script", ()), **options)
    raise LLMError(
        "bad_request",
        f"unknown chat model spec {text!r}",
        hint="use one of: " + ", ".join(SPEC_FORMS) + " (or set SCENERAG_LLM)",
    )
