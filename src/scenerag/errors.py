"""Error types shared by every layer: each says what went wrong, where, and what to do."""

from __future__ import annotations


class SceneRagError(Exception):
    """Base class of every error scenerag raises on purpose (the CLI prints these as one line)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class SceneGraphError(SceneRagError):
    """An invalid operation on an in-memory scene graph (duplicate symbol, dangling edge, bad name)."""


class SceneGraphFormatError(SceneRagError):
    """A scene-graph file that cannot be read: names the file and the offending field."""

    def __init__(self, path: str, message: str, *, field: str | None = None, hint: str | None = None) -> None:
        self.path = path
        self.field = field
        where = f"{path}: {field}" if field else path
        super().__init__(f"{where}: {message}", hint=hint)


class StoreError(SceneRagError):
    """The graph database could not be opened, loaded or reached."""
