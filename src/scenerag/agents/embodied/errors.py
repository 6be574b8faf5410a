"""Errors of the EmbodiedRAG agents: a bad agent/benchmark configuration or a bad task selection."""

from __future__ import annotations

from scenerag.errors import SceneRagError


class EmbodiedConfigError(SceneRagError):
    """An EmbodiedRAG planner, retriever or benchmark was configured with values it cannot use."""
