"""Chat models behind one protocol: local GGUF (llama-cpp-python), OpenAI-compatible servers, Anthropic,
and a scripted model for tests. ``make_chat_model("local" | "openai:MODEL" | ...)`` builds one.

Backends import their SDKs lazily, so importing this package is cheap.
"""

from __future__ import annotations

from scenerag.llm.anthropic import AnthropicChatModel
from scenerag.llm.base import (
    ChatModel,
    ChatResponse,
    GenerationTimings,
    LLMError,
    Message,
    RetryPolicy,
    Role,
    ToolCall,
    ToolSpec,
    Usage,
    estimate_tokens,
)
from scenerag.llm.factory import make_chat_model
from scenerag.llm.local import LocalChatModel
from scenerag.llm.openai_compat import OpenAIChatModel
from scenerag.llm.scripted import ScriptedChatModel, ScriptExhaustedError

__all__ = [
    "AnthropicChatModel",
    "ChatModel",
    "ChatResponse",
    "GenerationTimings",
    "LLMError",
    "LocalChatModel",
    "Message",
    "OpenAIChatModel",
    "RetryPolicy",
    "Role",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "estimate_tokens",
    "make_chat_model",
]
