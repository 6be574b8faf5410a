"""Colours shared by the viewer and the static exports: a stable class palette, edge and highlight colours.

Contract: :func:`class_color` maps a class name to the same colour in every run and on every machine (a
CRC32 of the name indexes a fixed 20-colour palette), so figures of one graph always agree.
"""

from __future__ import annotations

import zlib

RGB = tuple[int, int, int]

#: 20 distinguishable colours (matplotlib's tab20, strong then light shades)
PALETTE: tuple[RGB, ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (174, 199, 232),
    (255, 187, 120),
    (152, 223, 138),
    (255, 152, 150),
    (197, 176, 213),
    (196, 156, 148),
    (247, 182, 210),
    (199, 199, 199),
    (219, 219, 141),
    (158, 218, 229),
)
#: answer nodes: a saturated magenta no palette entry comes close to
HIGHLIGHT: RGB = (255, 0, 220)
SELECTED: RGB = (255, 215, 0)
CONTAINS_COLOR: RGB = (150, 150, 150)
OTHER_EDGE_COLOR: RGB = (120, 120, 200)
#: within-layer edges by type
EDGE_COLORS: dict[str, RGB] = {
    "CONTAINS": CONTAINS_COLOR,
    "HAS_ELEMENT": (170, 130, 90),
    "SEES": (200, 200, 120),
    "OBJECT_CONNECTED": (70, 160, 90),
    "PLACE_CONNECTED": (60, 110, 200),
    "MESH_PLACE_CONNECTED": (60, 110, 200),
    "ROOM_CONNECTED": (200, 90, 60),
}


def class_color(class_name: str) -> RGB:
    """The palette colour of ``class_name`` (stable across runs)."""
    return PALETTE[zlib.crc32(class_name.strip().lower().encode("utf-8")) % len(PALETTE)]


def edge_color(edge_type: str) -> RGB:
    return EDGE_COLORS.get(edge_type, OTHER_EDGE_COLOR)


def hex_color(rgb: RGB) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)
