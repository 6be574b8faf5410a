"""The layered layout, the static exports, and the viser viewer driven through headless Chromium.

Chromium is driven over the Chrome DevTools Protocol (a websocket, no extra packages): the page must
connect to the viewer, a question typed into the GUI and the Ask button must run the agent and
highlight the answer's nodes (their scene handles change colour on the server and the screenshot shows
them), and the Cypher box must do the same for a read-only query. Screenshots are written to tmp_path.
Needs Debian's ``chromium`` (``apt-get install chromium``); those tests skip without it.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import numpy as np
import pytest
from PIL import Image

from conftest import wait_for
from scenerag import SceneGraph
from scenerag.graph import ontology as ont
from scenerag.llm import ScriptedChatModel
from scenerag.serve import free_port
from scenerag.store import CypherStore, open_store
from scenerag.viz import (
    HIGHLIGHT,
    PALETTE,
    class_color,
    compute_layout,
    export_html,
    export_png,
    scene_graph_from_store,
)
from scenerag.viz.layout import fit_camera
from scenerag.viz.style import hex_color
from scenerag.viz.viewer import SceneViewer, ViewerError, run_viewer, symbols_in

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-unsafe-swiftshader",
    "--window-size=1280,800",
]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"
)
SIGNS_QUERY = "MATCH (o:Object {class: 'sign'}) RETURN o.nodeSymbol AS s"
SMALL: dict[str, Any] = {"size_in": (6.0, 5.0), "dpi": 80}


# -- a minimal Chrome DevTools Protocol client -----------------------------------------------------------


class Chromium:
    """Headless Chromium with one page, driven over its DevTools websocket."""

    def __init__(self, profile: Path) -> None:
        from websockets.sync.client import connect

        assert CHROMIUM is not None
        profile.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.process.kill()
                raise RuntimeError("chromium did not start")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        page = next(t for t in httpx2.get(f"http://127.0.0.1:{port}/json/list").json() if t["type"] == "page")
        self.socket = connect(page["webSocketDebuggerUrl"], max_size=None)
        self._ids = itertools.count(1)

    def send(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        call_id = next(self._ids)
        self.socket.send(json.dumps({"id": call_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, url: str) -> None:
        self.send("Page.enable")
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"]))
        return result["result"].get("value")

    def screenshot(self, path: Path) -> np.ndarray:
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        path.write_bytes(data)
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))

    def close(self) -> None:
        try:
            self.socket.close()
        finally:
            self.process.terminate()
            self.process.wait(timeout=10)


# Set a text field the way typing does (React listens to the native 'input' event), then click a button.
FILL_FIELD_JS = """
(([labelText, value]) => {
  const label = Array.from(document.querySelectorAll('label')).find(l => l.textContent.trim() === labelText);
  if (!label) return 'no label ' + labelText;
  let box = label.parentElement, field = null;
  while (box && !(field = box.querySelector('input:not([type=checkbox]), textarea:not([aria-hidden])'))) {
    box = box.parentElement;
  }
  if (!field) return 'no field for ' + labelText;
  const proto = field.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value').set.call(field, value);
  field.dispatchEvent(new Event('input', {bubbles: true}));
  return 'ok';
})
"""
CLICK_BUTTON_JS = """
((text) => {
  const button = Array.from(document.querySelectorAll('button')).find(b => b.textContent.trim() === text);
  if (!button) return 'no button ' + text;
  button.click();
  return 'ok';
})
"""


def highlight_pixels(image: np.ndarray) -> int:
    """Pixels close to the highlight magenta (no palette colour comes near it)."""
    r, g, b = (image[..., i].astype(int) for i in range(3))
    return int(((r > 180) & (g < 90) & (b > 150)).sum())


def non_blank(image: np.ndarray) -> bool:
    return (
        float(image.reshape(-1, 3).std(axis=0).max()) > 10.0
        and len(np.unique(image.reshape(-1, 3), axis=0)) > 50
    )


# -- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph) -> Iterator[CypherStore]:
    s = open_store(tmp_path_factory.mktemp("viewer") / "db")
    s.load(hydra_graph)
    yield s
    s.close()


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator[Chromium]:
    if CHROMIUM is None:
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    chromium = Chromium(tmp_path / "profile")
    yield chromium
    chromium.close()


def signs(graph: SceneGraph) -> list[str]:
    return [n.symbol for n in graph.nodes("Object") if n.class_name == "sign"]


# -- layout, colours, store read-back ----------------------------------------------------------------------


def test_layout_lifts_each_layer_to_its_own_height(hydra_graph: SceneGraph) -> None:
    layout = compute_layout(hydra_graph, layer_gap=4.0)
    assert list(layout.layers) == ["Room", "MeshPlace", "Object"]  # top layer first
    lift = {"Room": 8.0, "MeshPlace": 4.0, "Object": 0.0}
    for node in hydra_graph.nodes():
        x, y, z = node.position
        assert np.allclose(layout.positions[node.symbol], (x, y, z + lift[node.label]), atol=1e-4)
    room_z = layout.layers["Room"].positions[:, 2].min()
    assert room_z > layout.layers["MeshPlace"].positions[:, 2].max() - 4.0
    assert sum(len(p) for p in layout.edge_pairs.values()) == hydra_graph.num_edges
    boxed = [n for n in hydra_graph.nodes("Object") if n.bbox_dim is not None]
    assert layout.box_segments.shape == (12 * len(boxed), 2, 3)
    first = hydra_graph.node(layout.box_symbols[0])
    corners = layout.box_segments[:12].reshape(-1, 3)
    assert np.allclose(corners.max(axis=0) - corners.min(axis=0), first.bbox_dim, atol=1e-4)


def test_class_colours_are_stable(hydra_graph: SceneGraph) -> None:
    assert class_color("sign") == (197, 176, 213) and class_color("lounge") == (140, 86, 75)
    assert class_color("Sign") == class_color(" sign ")
    classes = {n.class_name for n in hydra_graph.nodes()}
    colours = {class_color(c) for c in classes}
    assert colours <= set(PALETTE) and len(colours) >= len(classes) - 4
    assert HIGHLIGHT not in PALETTE
    layout = compute_layout(hydra_graph)
    obj = layout.layers["Object"]
    for symbol, colour in zip(obj.symbols, obj.colors, strict=True):
        assert tuple(colour) == class_color(hydra_graph.node(symbol).class_name)


def test_pick_finds_the_node_under_a_ray(hydra_graph: SceneGraph) -> None:
    layout = compute_layout(hydra_graph)
    for symbol in ("R1", signs(hydra_graph)[0]):
        x, y, z = layout.positions[symbol]
        assert layout.pick((x, y, z + 50.0), (0.0, 0.0, -1.0)) == symbol
    assert layout.pick((1000.0, 1000.0, 1000.0), (0.0, 0.0, 1.0)) is None


def test_scene_graph_reads_back_from_the_store(store: CypherStore, hydra_graph: SceneGraph) -> None:
    graph = scene_graph_from_store(store)
    assert graph.label_counts() == hydra_graph.label_counts()
    assert graph.edge_type_counts() == hydra_graph.edge_type_counts()
    for node in hydra_graph.nodes():
        back = graph.node(node.symbol)
        assert back.class_name == node.class_name and np.allclose(back.position, node.position)
        assert (back.bbox_dim is None) == (node.bbox_dim is None)
    assert graph.metadata["skipped_nodes"] == 0 and graph.metadata["skipped_edges"] == 0


def test_symbols_in_rows(hydra_graph: SceneGraph) -> None:
    rows = [{"r": {"nodeSymbol": "R1", "class": "lounge"}, "s": "O3"}, {"xs": ["P754", "X1", "hello"]}]
    assert symbols_in(rows) == ["R1", "O3", "P754", "X1"]
    assert symbols_in(rows, {n.symbol for n in hydra_graph.nodes()}) == ["R1", "O3", "P754"]


# -- static exports ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("view", ["3d", "top"])
def test_export_png(tmp_path: Path, hydra_graph: SceneGraph, view: str) -> None:
    plain = np.asarray(
        Image.open(export_png(hydra_graph, tmp_path / f"plain-{view}.png", view=view, **SMALL)).convert("RGB")
    )
    marked = np.asarray(
        Image.open(
            export_png(
                hydra_graph, tmp_path / f"marked-{view}.png", view=view, highlight=signs(hydra_graph), **SMALL
            )
        ).convert("RGB")
    )
    assert non_blank(plain) and non_blank(marked)
    assert highlight_pixels(plain) == 0 and highlight_pixels(marked) > 10 * len(signs(hydra_graph))
    with pytest.raises(ViewerError, match="O99999") as failed:
        export_png(hydra_graph, tmp_path / "bad.png", highlight=["O99999"])
    assert "AgentResult" not in str(failed.value) and "--highlight O3,R1" in str(failed.value)


def test_export_html_is_self_contained(tmp_path: Path, hydra_graph: SceneGraph) -> None:
    marked = signs(hydra_graph)
    page = export_html(hydra_graph, tmp_path / "graph.html", highlight=marked, title="Hydra <small>")
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and " src=" not in text  # nothing fetched
    assert "Hydra &lt;small&gt;" in text
    start = text.index('id="scene-data">') + len('id="scene-data">')
    data = json.loads(text[start : text.index("</script>", start)])
    assert len(data["nodes"]) == hydra_graph.num_nodes and len(data["edges"]) == hydra_graph.num_edges
    assert [data["nodes"][i]["s"] for i in data["highlight"]] == marked
    by_symbol = {n["s"]: n for n in data["nodes"]}
    assert by_symbol["R1"]["l"] == "Room" and by_symbol["R1"]["c"] == "lounge"
    # the legend names object classes by their own colours (no layer is "green")
    assert data["classes"][0] == {"name": "seating", "count": 22, "color": hex_color(class_color("seating"))}
    assert len(data["classes"]) == 12 and "green" not in text


@needs_chromium
def test_export_html_renders_in_chromium(tmp_path: Path, hydra_graph: SceneGraph, browser: Chromium) -> None:
    page = export_html(hydra_graph, tmp_path / "graph.html", highlight=signs(hydra_graph))
    browser.open(page.as_uri())
    wait_for(lambda: browser.evaluate("window.sceneReady === true"), "the page's script")
    image = browser.screenshot(tmp_path / "graph-html.png")
    assert non_blank(image) and highlight_pixels(image) > 50
    # a real click on R1 (mouse events through DevTools) selects it and lists its neighbours
    x, y = browser.evaluate("window.sceneLocate('R1')")
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        browser.send(
            "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
        )
    selection = browser.evaluate("document.getElementById('selection').textContent")
    assert selection.startswith("R1") and "lounge" in selection
    listed = set(selection.split("neighbours: ")[1].split(", "))
    assert listed == {n.symbol for n in hydra_graph.neighbors("R1")}


# -- the live viewer in Chromium ----------------------------------------------------------------------------


@needs_chromium
def test_viewer_question_and_cypher_through_the_gui(
    tmp_path: Path, store: CypherStore, hydra_graph: SceneGraph, browser: Chromium
) -> None:
    answer_symbols = signs(hydra_graph)
    model = ScriptedChatModel([SIGNS_QUERY], supports_tools=False)  # the agent formats the rows itself
    viewer = SceneViewer(hydra_graph, store=store, llm=model, port=free_port())
    try:
        assert viewer.client_count() == 0
        browser.open(viewer.url)
        wait_for(lambda: viewer.client_count() == 1, "the page to connect to the viewer")
        time.sleep(2.0)  # let the scene render
        before = browser.screenshot(tmp_path / "viewer-before.png")
        assert non_blank(before) and highlight_pixels(before) == 0

        assert browser.evaluate(FILL_FIELD_JS + "(['Question', 'Which signs are there?'])") == "ok"
        wait_for(
            lambda: viewer.question_box.value == "Which signs are there?", "the question to reach the server"
        )
        assert browser.evaluate(CLICK_BUTTON_JS + "('Ask')") == "ok"
        wait_for(lambda: viewer.last_result is not None, "the agent's answer")
        assert viewer.last_result is not None and viewer.last_result.answer is not None
        assert set(viewer.highlighted) == set(answer_symbols) == set(viewer.last_result.symbols)
        assert all(viewer.node_color(s) == HIGHLIGHT for s in answer_symbols)
        other = next(n for n in hydra_graph.nodes("Object") if n.class_name != "sign")
        assert viewer.node_color(other.symbol) == class_color(other.class_name)
        assert SIGNS_QUERY in viewer.answer_md.content  # the agent's Cypher is shown in the GUI
        browser.evaluate(CLOSE_NOTICES_JS)
        time.sleep(1.5)
        after = browser.screenshot(tmp_path / "viewer-answer.png")
        assert non_blank(after) and highlight_pixels(after) > 20
        if SCREENSHOTS:
            Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
            shutil.copy(tmp_path / "viewer-answer.png", Path(SCREENSHOTS) / "viewer-answer.png")

        query = "MATCH (r:Room {class: 'lounge'}) RETURN r"
        assert browser.evaluate(FILL_FIELD_JS + f'(["Query", "{query}"])') == "ok"
        wait_for(lambda: viewer.cypher_box.value == query, "the query to reach the server")
        assert browser.evaluate(CLICK_BUTTON_JS + "('Run')") == "ok"
        lounge = [n.symbol for n in hydra_graph.nodes("Room") if n.class_name == "lounge"]
        wait_for(lambda: viewer.last_query is not None, "the query's result")
        assert viewer.highlighted == lounge
        assert viewer.node_color(lounge[0]) == HIGHLIGHT
        assert all(
            viewer.node_color(s) == class_color("sign") for s in answer_symbols
        )  # previous answer reset
        assert "1 row(s)" in viewer.cypher_md.content

        assert browser.evaluate(CLICK_BUTTON_JS + "('Clear highlight')") == "ok"
        wait_for(lambda: viewer.highlighted == [], "the highlight to clear")
        assert viewer.node_color(lounge[0]) == class_color("lounge")
    finally:
        viewer.stop()


def test_viewer_api_without_a_browser(store: CypherStore, hydra_graph: SceneGraph) -> None:
    viewer = run_viewer(store, port=free_port(), block=False, highlight=["O43", "R1"])
    try:
        assert viewer.graph.label_counts() == hydra_graph.label_counts()
        assert viewer.highlighted == ["O43", "R1"] and viewer.node_color("O43") == HIGHLIGHT  # --highlight
        text = viewer.select("R1")
        assert "R1" in text and "lounge" in text and viewer.selected == "R1"
        busiest = max(hydra_graph.nodes(), key=lambda n: len(hydra_graph.children(n.symbol)))
        children = hydra_graph.children(busiest.symbol)
        assert len(children) > 12
        listed = viewer.select(busiest.symbol).split(f"contains {len(children)}: ")[1]
        assert listed.endswith(f", …and {len(children) - 12} more") and listed.count(",") == 12
        legend = viewer.legend.content
        for cls in {n.class_name for n in hydra_graph.nodes("Object")}:
            assert f"{cls} (" in legend
        assert hex_color(class_color("seating")) in legend and "seating (22)" in legend
        assert viewer.highlight(["O3", "nope"]) == ["O3"] and viewer.node_color("O3") == HIGHLIGHT
        result = viewer.run_cypher(
            "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {nodeSymbol: 'O3'}) RETURN p, o"
        )
        parents = [p.symbol for p in hydra_graph.parents("O3")]
        assert len(result.rows) == len(parents) and set(viewer.highlighted) == {*parents, "O3"}
        with pytest.raises(Exception, match="write"):
            viewer.run_cypher("MATCH (n) DETACH DELETE n")
        assert scene_graph_from_store(store).num_nodes == hydra_graph.num_nodes
        with pytest.raises(Exception, match="language model"):
            viewer.ask("How many objects?")  # no LLM configured
        assert viewer.ask_button.disabled is True
    finally:
        viewer.stop()


def test_viewer_refuses_remote_binds_and_needs_a_store_for_queries(hydra_graph: SceneGraph) -> None:
    with pytest.raises(ViewerError, match="no authentication"):
        SceneViewer(hydra_graph, host="0.0.0.0", port=free_port())
    viewer = SceneViewer(hydra_graph, port=free_port())
    try:
        with pytest.raises(ViewerError, match="no database"):
            viewer.run_cypher("MATCH (n) RETURN n LIMIT 1")
        assert viewer.cypher_button.disabled is True
        assert viewer.highlight([ont.SYMBOL_KEY]) == []
    finally:
        viewer.stop()


# -- `scenerag view` (the CLI) in Chromium: highlighted nodes at their screen positions --------------------

#: with SCENERAG_SCREENSHOTS=<folder> the screenshots are also written there (docs/images for the README)
SCREENSHOTS = os.environ.get("SCENERAG_SCREENSHOTS")
CLOSE_NOTICES_JS = """
(() => {
  const buttons = Array.from(document.querySelectorAll('.mantine-Notification-closeButton, .mantine-Notification-root button'));
  buttons.forEach(b => b.click());
  return buttons.length;
})()
"""
CANVAS_RECT_JS = """
(() => {
  const c = Array.from(document.querySelectorAll('canvas')).find(c => c.width > 0 && c.height > 0);
  if (!c) return null;
  const r = c.getBoundingClientRect();
  return [r.left, r.top, r.width, r.height, window.devicePixelRatio];
})()
"""


def highlight_pixels_near(image: np.ndarray, x: float, y: float, radius: int = 6) -> int:
    """Highlight-coloured pixels within ``radius`` of ``(x, y)``."""
    x0, y0 = round(x), round(y)
    patch = image[max(0, y0 - radius) : y0 + radius + 1, max(0, x0 - radius) : x0 + radius + 1]
    return highlight_pixels(patch)


def start_cli_viewer(db: Path, port: int, *args: str) -> tuple[subprocess.Popen[str], str]:
    """``scenerag view`` in a subprocess; returns it and its URL once it serves."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "scenerag.cli", "view", "--db", str(db), "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if line.startswith("scenerag viewer: "):
            return proc, line.split()[2]
    proc.kill()
    raise AssertionError("scenerag view did not start: " + "".join(seen))


@needs_chromium
def test_cli_view_draws_highlighted_nodes_at_their_screen_positions(
    tmp_path: Path, hydra_graph: SceneGraph, browser: Chromium
) -> None:
    """`scenerag view --highlight O43,R1` (commas) in a real browser: magenta pixels where the initial
    camera projects each highlighted node's pin head and the room R1 itself, none at another room."""
    db = tmp_path / "db"
    s = open_store(db)
    s.load(hydra_graph)
    s.close()
    marked = ["O43", "R1"]  # the bicycle (a small object under the places) and the lounge
    proc, url = start_cli_viewer(db, free_port(), "--highlight", ",".join(marked), "--llm", "none")
    try:
        browser.open(url)
        wait_for(lambda: browser.evaluate(CANVAS_RECT_JS) is not None, "the 3D view", timeout=60)
        layout = compute_layout(hydra_graph)
        camera = fit_camera(layout)
        image = np.zeros((1, 1, 3), np.uint8)

        def drawn() -> bool:
            nonlocal image
            browser.evaluate(CLOSE_NOTICES_JS)
            image = browser.screenshot(tmp_path / "cli-view.png")
            return non_blank(image) and highlight_pixels(image) > 100

        wait_for(drawn, "the highlighted scene to render", timeout=60)
        time.sleep(1.0)  # let the last frame settle, then look again
        image = browser.screenshot(tmp_path / "cli-view.png")
        left, top, width, height, ratio = browser.evaluate(CANVAS_RECT_JS)
        assert ratio == 1 and width > 400 and height > 300
        assert left + width <= image.shape[1] - 200  # the docked control panel sits beside the view

        def on_screen(points: np.ndarray) -> np.ndarray:
            return camera.project(points, width, height) + np.asarray([left, top])

        heads = on_screen(layout.pin_heads(marked))
        for symbol, (x, y) in zip(marked, heads, strict=True):
            assert 0 <= x < left + width and 0 <= y < top + height, symbol
            assert highlight_pixels_near(image, x, y) >= 30, (
                f"no highlight at {symbol}'s pin head ({x:.0f}, {y:.0f})"
            )
        (rx, ry), (other_x, other_y) = on_screen(np.asarray([layout.positions["R1"], layout.positions["R2"]]))
        assert highlight_pixels_near(image, rx, ry) >= 30  # the room itself, in the top layer
        assert highlight_pixels_near(image, other_x, other_y, radius=4) == 0  # R2 keeps its class colour
        if SCREENSHOTS:
            Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
            shutil.copy(tmp_path / "cli-view.png", Path(SCREENSHOTS) / "viewer-highlight.png")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cli_highlight_errors_name_the_flag(tmp_path: Path, store: CypherStore) -> None:
    """Unknown --highlight symbols: one line naming them and the flag, no Python-API words."""
    db = tmp_path / "db"
    s = open_store(db)
    s.load(scene_graph_from_store(store))
    s.close()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scenerag.cli",
            "view",
            "--db",
            str(db),
            "--png",
            str(tmp_path / "x.png"),
            "--highlight",
            "O3,NOPE1",
            "--highlight",
            "ZZ9",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "NOPE1, ZZ9" in lines[0] and "--highlight O3,R1" in lines[0]
    assert "AgentResult" not in proc.stderr and "Error" not in proc.stderr


def test_viewer_loads_its_model_at_start(store: CypherStore, hydra_graph: SceneGraph) -> None:
    """The model loads in the background when the viewer starts; a model that cannot load says why in the
    answer box instead of at the first question."""
    viewer = SceneViewer(hydra_graph, store=store, llm=ScriptedChatModel([]), port=free_port())
    try:
        assert viewer.model_ready.wait(30)
        assert viewer.answer_md.content == "_the answer's nodes are highlighted in the scene_"
    finally:
        viewer.stop()
    viewer = SceneViewer(hydra_graph, store=store, llm="nonsense:model", port=free_port())
    try:
        wait_for(lambda: "could not be loaded" in viewer.answer_md.content, "the load failure to show")
        assert "unknown chat model spec" in viewer.answer_md.content and not viewer.model_ready.is_set()
    finally:
        viewer.stop()
