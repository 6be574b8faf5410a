"""In-memory 3D scene graphs: typed model, ontology, and file formats."""

from scenerag.graph import ontology
from scenerag.graph.io import read_scene_graph, write_scene_graph
from scenerag.graph.model import Edge, Node, SceneGraph

__all__ = ["Edge", "Node", "SceneGraph", "ontology", "read_scene_graph", "write_scene_graph"]
