"""An OpenAI-compatible chat-completions endpoint that accepts images (GPT-4o-class APIs, vLLM / Ollama /
llama.cpp serving a VLM such as Qwen2.5-VL): used by the VLM keyframe describer and the VLM detector.

Contract: ``VisionEndpoint.ask(prompt, images)`` sends one user turn with the images as base64 JPEG data
URLs and returns the reply text and token usage; transient failures are retried with the shared
``RetryPolicy``; every failure is an ``LLMError`` naming the endpoint and what to do. The ``openai`` SDK
is imported lazily; tests pass a stand-in ``client`` with ``chat.completions.create``.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from scenerag.llm.base import LLMError, RetryPolicy, Usage, call_with_retries

_DEFAULT_URL = "https://api.openai.com/v1"
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def image_data_url(rgb: np.ndarray, *, quality: int = 85, max_side: int = 768) -> str:
    """A ``data:image/jpeg;base64,...`` URL of an RGB image, downscaled so its longer side is ``max_side``."""
    from PIL import Image

    im = Image.fromarray(np.asarray(rgb, dtype=np.uint8))
    scale = max_side / max(im.size)
    if scale < 1.0:
        im = im.resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def parse_json_object(text: str, source: str) -> dict[str, Any]:
    """The first JSON object in a reply (code fences and chatter around it are tolerated)."""
    match = _JSON_OBJECT.search(text or "")
    if match:
        try:
            value = json.loads(match.group(0))
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
    raise LLMError(
        "bad_response",
        f"{source} did not return a JSON object: {(text or '')[:160]!r}",
        hint="use a model that follows JSON instructions, or raise max_tokens if the reply was cut off",
        model=source,
    )


class VisionEndpoint:
    """One vision-capable model behind the OpenAI chat-completions wire format."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        client: Any | None = None,
    ) -> None:
        if not model:
            raise LLMError(
                "bad_request",
                "no vision model name given",
                hint="set description.vlm_model or segmentation.options.model (e.g. gpt-4o-mini)",
            )
        self.model = model
        self.base_url = (
            base_url
            or os.environ.get("SCENERAG_OPENAI_BASE_URL")
            or os.environ.get("OPENAI_BASE_URL")
            or _DEFAULT_URL
        ).rstrip("/")
        self.name = f"vision:{model}@{self.base_url}"
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.usage = Usage()
        if client is not None:
            self._client = client
            return
        try:
            import openai
        except ImportError as exc:
            raise LLMError(
                "missing_dependency",
                "the 'openai' package is not installed",
                hint="pip install 'scenerag[openai]'",
            ) from exc
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if "openai.com" in self.base_url:
                raise LLMError(
                    "auth",
                    f"no API key for {self.base_url} (model {model})",
                    hint="set OPENAI_API_KEY or point OPENAI_BASE_URL at a local VLM server",
                )
            key = "not-needed"
        self._client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=timeout_s, max_retries=0)

    def ask(
        self,
        prompt: str,
        images: Sequence[np.ndarray],
        *,
        system: str | None = None,
        json_reply: bool = False,
        max_tokens: int = 300,
        temperature: float = 0.0,
    ) -> tuple[str, Usage]:
        """Send ``prompt`` with ``images``; return the reply text and this call's token usage."""
        content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
        content += [{"type": "image_url", "image_url": {"url": image_data_url(im)}} for im in images]
        messages: list[dict[str, Any]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": content})
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if json_reply:
            kwargs["response_format"] = {"type": "json_object"}
        try:
            response = call_with_retries(
                lambda: self._client.chat.completions.create(**kwargs),
                policy=self.retry,
                retry_after=self._retry_decision,
            )
        except LLMError:
            raise
        except Exception as exc:
            raise self._error(exc) from exc
        try:
            text = response.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMError(
                "bad_response", f"{self.name}: reply has no message content", model=self.name
            ) from exc
        usage = getattr(response, "usage", None)
        used = Usage(
            int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)
        )
        self.usage = self.usage + used
        return text, used

    @staticmethod
    def _retry_decision(exc: BaseException) -> float | bool | None:
        status = getattr(exc, "status_code", None)
        name = type(exc).__name__
        if name == "APITimeoutError":
            return False
        if name == "APIConnectionError":
            return None
        if isinstance(status, int) and (status in (408, 409, 429) or status >= 500):
            return None
        return False

    def _error(self, exc: BaseException) -> LLMError:
        status = getattr(exc, "status_code", None)
        name = type(exc).__name__
        text = str(getattr(exc, "message", exc))
        if name in ("APITimeoutError", "APIConnectionError"):
            return LLMError(
                "unreachable",
                f"cannot reach the vision endpoint {self.base_url} ({text})",
                hint="check that the VLM server is running there (the URL usually ends in /v1)",
                model=self.name,
            )
        if status in (401, 403):
            return LLMError(
                "auth", f"{self.base_url} refused the API key ({text})", model=self.name, status_code=status
            )
        if status == 404:
            return LLMError(
                "model_not_found",
                f"{self.base_url} does not serve {self.model!r} ({text})",
                hint=f"list the served models with GET {self.base_url}/models",
                model=self.name,
                status_code=status,
            )
        if status == 429:
            return LLMError(
                "rate_limit",
                f"{self.base_url} rate-limited {self.model}",
                model=self.name,
                status_code=status,
            )
        if isinstance(status, int):
            return LLMError(
                "bad_request",
                f"{self.base_url} rejected the request (HTTP {status}): {text}",
                hint="the model may not accept images; use a vision-language model",
                model=self.name,
                status_code=status,
            )
        return LLMError("bad_response", f"{self.name}: {exc}", model=self.name)


__all__ = ["VisionEndpoint", "image_data_url", "parse_json_object"]
