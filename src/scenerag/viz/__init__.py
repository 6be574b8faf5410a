"""Seeing scene graphs: the viser web viewer (layered 3D graph, answers highlighted), static PNG/HTML
exports for reports, and the layered layout they share. viser and matplotlib load only when used.
"""

from scenerag.viz.layout import LayerLayout, SceneLayout, compute_layout
from scenerag.viz.store_graph import scene_graph_from_store
from scenerag.viz.style import HIGHLIGHT, PALETTE, class_color

__all__ = [
    "HIGHLIGHT",
    "PALETTE",
    "LayerLayout",
    "SceneLayout",
    "SceneViewer",
    "ViewerError",
    "class_color",
    "compute_layout",
    "export_html",
    "export_png",
    "run_viewer",
    "scene_graph_from_store",
]


def __getattr__(name: str) -> object:
    """Lazy access to the viewer and exporters (they import viser / matplotlib)."""
    if name in ("SceneViewer", "ViewerError", "run_viewer"):
        from scenerag.viz import viewer

        return getattr(viewer, name)
    if name in ("export_png", "export_html"):
        from scenerag.viz import export

        return getattr(export, name)
    raise AttributeError(f"module 'scenerag.viz' has no attribute {name!r}")
