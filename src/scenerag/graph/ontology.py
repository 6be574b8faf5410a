"""The scene-graph ontology: layer labels, edge types, symbols and naming rules.

The ontology is open: any label, edge type or property that is a valid identifier may be added at run
time. The constants below are the Heracles/Hydra conventions the rest of scenerag knows about.
"""

from __future__ import annotations

import re

# Node labels (graph layers), top to bottom.
BUILDING = "Building"
FLOOR = "Floor"
ROOM = "Room"
PLACE = "Place"
MESH_PLACE = "MeshPlace"
OBJECT = "Object"
FUNCTIONAL_ELEMENT = "FunctionalElement"
KEYFRAME = "Keyframe"
AGENT = "Agent"

KNOWN_LABELS: tuple[str, ...] = (
    BUILDING,
    FLOOR,
    ROOM,
    PLACE,
    MESH_PLACE,
    OBJECT,
    FUNCTIONAL_ELEMENT,
    KEYFRAME,
    AGENT,
)

# Height of each known layer in the hierarchy: a CONTAINS edge goes from a higher layer to a lower one.
LAYER_RANK: dict[str, int] = {
    BUILDING: 60,
    FLOOR: 50,
    ROOM: 40,
    PLACE: 30,
    MESH_PLACE: 30,
    OBJECT: 20,
    AGENT: 20,
    KEYFRAME: 20,
    FUNCTIONAL_ELEMENT: 10,
}

# Edge types.
CONTAINS = "CONTAINS"
HAS_ELEMENT = "HAS_ELEMENT"
SEES = "SEES"
OBJECT_CONNECTED = "OBJECT_CONNECTED"
PLACE_CONNECTED = "PLACE_CONNECTED"
MESH_PLACE_CONNECTED = "MESH_PLACE_CONNECTED"
ROOM_CONNECTED = "ROOM_CONNECTED"

# Edge types that form an acyclic hierarchy: an unbounded path over them ends within the layer count.
HIERARCHY_EDGE_TYPES: frozenset[str] = frozenset({CONTAINS, HAS_ELEMENT})

# Reserved property names written by scenerag itself.
SYMBOL_KEY = "nodeSymbol"
CLASS_KEY = "class"
#: ``SceneGraph.metadata`` key: label -> every class the perception can name (a labelspace), seen or not
KNOWN_CLASSES = "known_classes"
#: labelspace classes for layout and surfaces ("floor", "wall", "path", "thing"): questions use the words as
#: frames of reference ("closest to the floor", "the path to R3", "things in the lounge"), not as things to find
BACKGROUND_CLASSES = frozenset(
    {
        "floor", "ground", "ceiling", "wall", "sky", "road", "sidewalk", "path", "surface", "structure",
        "thing", "unknown", "building", "water", "grass", "sand", "hill", "rock", "stairs", "bridge", "dock",
    }
)  # fmt: skip
CENTER_KEY = "center"
BBOX_CENTER_KEY = "bbox_center"
BBOX_DIM_KEY = "bbox_dim"
DESCRIPTION_KEY = "description"
RESERVED_NODE_KEYS: frozenset[str] = frozenset(
    {SYMBOL_KEY, CLASS_KEY, CENTER_KEY, BBOX_CENTER_KEY, BBOX_DIM_KEY, DESCRIPTION_KEY, "x", "y", "z"}
)

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SYMBOL = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_SYMBOL_SHAPE = re.compile(r"[A-Za-z]\d+")
#: a word of running text shaped like a node symbol, one or two letters then digits ("O43", "R3", "p4452"):
#: what agents read symbols out of questions, answers and goals with (check with :func:`has_symbol_shape`)
SYMBOL_IN_TEXT = re.compile(r"\b[A-Za-z]{1,2}\d+\b")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_identifier(name: str) -> bool:
    """True when ``name`` can be used unquoted as a Cypher label, relationship type or property key."""
    return bool(_IDENTIFIER.match(name))


def is_symbol(symbol: str) -> bool:
    """True for a node symbol such as ``O12``, ``P345``, ``R1`` or ``p18`` (letter first, no spaces)."""
    return bool(_SYMBOL.match(symbol))


def has_symbol_shape(value: object) -> bool:
    """True for the letter-then-digits shape answers and queries name nodes by (``O12``, ``R3``, ``p4452``);
    narrower than :func:`is_symbol`, which any stored symbol satisfies."""
    return isinstance(value, str) and _SYMBOL_SHAPE.fullmatch(value) is not None


def layer_name(label: str) -> str:
    """A label as a snake-case word: ``MeshPlace`` -> ``mesh_place``, ``Object`` -> ``object``."""
    return _CAMEL_BOUNDARY.sub("_", label).lower()


def sibling_edge_type(label: str) -> str:
    """Edge type for an edge within one layer: ``MeshPlace`` -> ``MESH_PLACE_CONNECTED``."""
    return layer_name(label).upper() + "_CONNECTED"


def label_from_layer_name(name: str) -> str:
    """Label for a Hydra/spark_dsg layer name: ``MESH_PLACES`` -> ``MeshPlace``, ``ROOMS`` -> ``Room``."""
    known = {
        "BUILDINGS": BUILDING,
        "FLOORS": FLOOR,
        "ROOMS": ROOM,
        "PLACES": PLACE,
        "MESH_PLACES": MESH_PLACE,
        "OBJECTS": OBJECT,
        "AGENTS": AGENT,
        "KEYFRAMES": KEYFRAME,
        "FUNCTIONAL_ELEMENTS": FUNCTIONAL_ELEMENT,
        "REGIONS": ROOM,
    }
    if name.upper() in known:
        return known[name.upper()]
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    label = "".join(w[:1].upper() + w[1:].lower() for w in words) or "Node"
    if label.endswith("s") and len(label) > 1:
        label = label[:-1]
    return label if is_identifier(label) else f"L{label}"


def hydra_symbol(node_id: int) -> str:
    """Symbol of a 64-bit Hydra node id: top byte is the character, lower 56 bits the index."""
    char = (node_id >> 56) & 0xFF
    index = node_id & ((1 << 56) - 1)
    if 32 < char < 127 and chr(char).isalpha():
        return f"{chr(char)}{index}"
    return f"N{node_id}"


def hydra_id(symbol: str) -> int:
    """Inverse of :func:`hydra_symbol` for ``<letter><index>`` symbols."""
    if not symbol or not symbol[0].isalpha() or not symbol[1:].isdigit():
        raise ValueError(f"symbol {symbol!r} is not of the form <letter><index>")
    return (ord(symbol[0]) << 56) | int(symbol[1:])
