"""The viewer reads graphs back with :func:`scenerag.store.export.export_graph` (one implementation)."""

from scenerag.store.export import export_graph as scene_graph_from_store

__all__ = ["scene_graph_from_store"]
