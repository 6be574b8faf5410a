"""Errors of the KeySG construction pipeline (``scenerag.build``): each names the stage, file or field
at fault."""

from __future__ import annotations

from scenerag.errors import SceneRagError


class BuildError(SceneRagError):
    """A build stage could not run on its input (empty reconstruction, no floors, bad cache, bad config)."""

    def __init__(self, stage: str, message: str, *, hint: str | None = None) -> None:
        self.stage = stage
        super().__init__(f"build stage {stage!r}: {message}", hint=hint)


class MissingComponentError(BuildError):
    """An optional component (model weights, endpoint, Python package) the chosen option needs is absent."""
