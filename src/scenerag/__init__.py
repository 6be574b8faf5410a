"""scenerag: LLM reasoning over large 3D scene graphs without pasting the graph into a prompt."""

from scenerag.errors import SceneGraphError, SceneGraphFormatError, SceneRagError, StoreError
from scenerag.graph import Edge, Node, SceneGraph, read_scene_graph, write_scene_graph

__version__ = "0.1.0"

__all__ = [
    "Edge",
    "Node",
    "SceneGraph",
    "SceneGraphError",
    "SceneGraphFormatError",
    "SceneRagError",
    "StoreError",
    "__version__",
    "read_scene_graph",
    "write_scene_graph",
]
