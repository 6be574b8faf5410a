"""The 3D web viewer (viser): a scene graph as layered nodes, edges and object boxes, with a question box
that runs the Cypher agent and highlights the answer's nodes, and a Cypher box for read-only queries.

Contract: the page is served on loopback unless ``allow_remote=True`` (viser has no authentication).
Everything the GUI does goes through the Python API of :class:`SceneViewer` (``ask``, ``run_cypher``,
``highlight``, ``select``), so programs and tests drive it the same way a user does. Questions run in a
worker thread (one at a time); the store is only ever read.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.progress import ProgressChatModel
from scenerag.serve.config import is_loopback
from scenerag.serve.llm_provider import ChatModelProvider, LlmSource
from scenerag.serve.store_access import StoreAccess
from scenerag.viz.layout import CameraView, SceneLayout, compute_layout, edge_colors, fit_camera
from scenerag.viz.style import HIGHLIGHT, SELECTED, class_color, hex_color

if TYPE_CHECKING:
    import viser

    from scenerag.agents.result import AgentResult
    from scenerag.store.base import CypherStore, QueryResult

DEFAULT_VIEWER_PORT = 8080
#: labels are always shown for layers at or above this rank (rooms, floors, buildings)
LABELED_RANK = 40
MAX_LISTED_ROWS = 20
#: children listed in a selection's details, classes in the legend, symbols in "highlighted: ..."
MAX_LISTED_CHILDREN = 12
MAX_LEGEND_CLASSES = 24
MAX_LISTED_HIGHLIGHTS = 30
#: highlighted nodes that get a text label in the scene
MAX_HIGHLIGHT_LABELS = 50
_SYMBOL = re.compile(r"^[A-Za-z][A-Za-z0-9_]*\d$")


class ViewerError(SceneRagError):
    """The viewer cannot start or cannot do what was asked (no store, no model, remote bind refused)."""


def symbols_in(value: Any, known: Iterable[str] | None = None) -> list[str]:
    """Node symbols inside query rows (``nodeSymbol`` of node maps and symbol-like strings), in order;
    only those in ``known`` when given."""
    allowed = set(known) if known is not None else None
    found: dict[str, None] = {}

    def walk(v: Any) -> None:
        if isinstance(v, str):
            if _SYMBOL.match(v) and (allowed is None or v in allowed):
                found.setdefault(v)
        elif isinstance(v, dict):
            sym = v.get(ont.SYMBOL_KEY)
            if isinstance(sym, str) and (allowed is None or sym in allowed):
                found.setdefault(sym)
            for inner in v.values():
                walk(inner)
        elif isinstance(v, (list, tuple)):
            for inner in v:
                walk(inner)

    walk(value)
    return list(found)


def _md_code(text: str) -> str:
    return "```\n" + text.replace("```", "'''") + "\n```"


def listed(items: Sequence[str], limit: int, *, sep: str = ", ") -> str:
    """``items`` joined, the first ``limit`` of them, then ``"…and N more"`` for the rest."""
    shown = sep.join(items[:limit])
    rest = len(items) - limit
    return f"{shown}{sep}…and {rest} more" if rest > 0 else shown


def unknown_symbols_error(missing: Sequence[str]) -> ViewerError:
    """The error for highlight symbols the graph does not have (CLI: ``--highlight``)."""
    return ViewerError(
        f"cannot highlight {len(missing)} symbol(s) not in the graph: {listed(list(missing), 10)}",
        hint="give node symbols of this graph, comma-separated (e.g. --highlight O3,R1); "
        "`scenerag cypher` or `scenerag search` finds them",
    )


def legend_html(graph: SceneGraph, label: str = ont.OBJECT, limit: int = MAX_LEGEND_CLASSES) -> str:
    """An HTML legend of ``label``'s classes: a colour swatch, the class and its count, most common first;
    past ``limit`` classes, "…and N more classes"; last the highlight colour."""
    from html import escape

    counts: dict[str, int] = {}
    for node in graph.nodes(label):
        counts[node.class_name] = counts.get(node.class_name, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    row = (
        '<div style="display:flex;align-items:center;gap:6px;font-size:0.85em;line-height:1.45">'
        '<span style="display:inline-block;width:11px;height:11px;border-radius:50%;background:{color}">'
        "</span>{text}</div>"
    )
    rows = [
        row.format(color=hex_color(class_color(name)), text=f"{escape(name)} ({n})")
        for name, n in ordered[:limit]
    ]
    if len(ordered) > limit:
        rows.append(f'<div style="font-size:0.85em">…and {len(ordered) - limit} more classes</div>')
    rows.append(row.format(color=hex_color(HIGHLIGHT), text="answer / highlight"))
    return "<div>" + "".join(rows) + "</div>"


class _AnswerProgress:
    """Shows the agent's current stage in the answer box while a question runs."""

    def __init__(self, box: Any, question: str) -> None:
        self.box = box
        self.question = question

    def stage(self, name: str, detail: str = "") -> None:
        self.box.content = f"_{name}{': ' + detail if detail else ''}…_  \n{self.question}"


class SceneViewer:
    """A running viewer of ``graph``; ``store`` enables the Cypher box, ``store`` + ``llm`` the question box."""

    def __init__(
        self,
        graph: SceneGraph,
        *,
        store: CypherStore | None = None,
        llm: LlmSource = None,
        host: str = "127.0.0.1",
        port: int = DEFAULT_VIEWER_PORT,
        layer_gap: float | None = None,
        max_tool_calls: int = 5,
        query_timeout_s: float = 10.0,
        max_rows: int = 200,
        allow_remote: bool = False,
        title: str = "scenerag",
    ) -> None:
        if not is_loopback(host) and not allow_remote:
            raise ViewerError(
                f"refusing to serve the viewer on {host!r}: the viewer has no authentication",
                hint="bind 127.0.0.1 and reach it over an SSH tunnel (ssh -L 8080:127.0.0.1:8080 host), or "
                "pass allow_remote=True on a trusted network",
            )
        import viser

        self.graph = graph
        self.layout: SceneLayout = compute_layout(graph, layer_gap=layer_gap)
        self.max_tool_calls = max_tool_calls
        self._access = (
            StoreAccess(store, timeout_s=query_timeout_s, max_rows=max_rows) if store is not None else None
        )
        self._models = ChatModelProvider(llm)
        self._state = threading.RLock()
        self._asks = ThreadPoolExecutor(1, thread_name_prefix="scenerag-viewer-ask")
        self.highlighted: list[str] = []
        self.selected: str | None = None
        self.last_result: AgentResult | None = None
        self.last_query: QueryResult | None = None
        self.server: viser.ViserServer = viser.ViserServer(host=host, port=port, label=title, verbose=False)
        self.node_handles: dict[str, Any] = {}
        self.edge_handles: dict[str, Any] = {}
        self.box_handle: Any | None = None
        self._highlight_handles: list[Any] = []
        self._selection_handles: list[Any] = []
        try:
            self._build_scene()
            self._build_gui()
        except BaseException:
            self.stop()
            raise
        self.model_ready = threading.Event()
        if (
            self._access is not None and self._models.configured
        ):  # load the model now, not at the first question
            threading.Thread(target=self._load_model, name="scenerag-viewer-model", daemon=True).start()

    def _load_model(self) -> None:
        """Load the chat model in the background; the answer box says when questions can be asked."""
        self.answer_md.content = "_loading the language model…_"
        try:
            with self._models.session():
                pass
        except SceneRagError as exc:
            self.answer_md.content = f"**the language model could not be loaded:** {exc}"
            return
        self.model_ready.set()
        if self.last_result is None and self.answer_md.content.startswith("_loading"):
            self.answer_md.content = self._ask_help()

    # -- scene -----------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host = self.server.get_host()
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{shown}:{self.server.get_port()}"

    def _build_scene(self) -> None:
        scene = self.server.scene
        scene.set_up_direction("+z")
        for label, layer in self.layout.layers.items():
            self.node_handles[label] = scene.add_point_cloud(
                f"/nodes/{label}",
                layer.positions,
                layer.colors,
                point_size=2.0 * layer.node_size,
                point_shape="circle",
                precision="float32",
            )
        for edge_type in sorted(self.layout.edge_pairs):
            segments = self.layout.edge_segments(edge_type)
            self.edge_handles[edge_type] = scene.add_line_segments(
                f"/edges/{edge_type}",
                segments,
                edge_colors(edge_type, len(segments)),
                thickness=1.0 if edge_type == ont.CONTAINS else 1.5,
                thickness_units="screen",
            )
        if len(self.layout.box_segments):
            self.box_handle = scene.add_line_segments(
                "/boxes",
                self.layout.box_segments,
                self.layout.box_colors,
                thickness=1.5,
                thickness_units="screen",
            )
        for label, layer in self.layout.layers.items():
            if layer.rank < LABELED_RANK:
                continue
            for symbol, pos in zip(layer.symbols, layer.positions, strict=True):
                node = self.graph.node(symbol)
                scene.add_label(
                    f"/labels/{label}/{symbol}",
                    f"{symbol} {node.class_name}",
                    position=tuple(float(v) for v in pos),
                    anchor="bottom-center",
                )
        self.camera: CameraView = fit_camera(self.layout)
        initial = self.server.initial_camera
        initial.fov = self.camera.fov
        initial.up = self.camera.up
        initial.look_at = self.camera.look_at
        initial.position = self.camera.position
        low, high = self.layout.bounds()
        initial.far = float(max(1000.0, 20.0 * np.max(high - low)))

        @scene.on_click()
        def _clicked(event: Any) -> None:
            symbol = self.layout.pick(event.ray_origin, event.ray_direction)
            if symbol is not None:
                self.select(symbol)

    # -- GUI -------------------------------------------------------------------------------------------
    def _build_gui(self) -> None:
        gui = self.server.gui
        gui.configure_theme(control_width="medium")
        main_panel = getattr(gui, "main_panel", None)
        if main_panel is not None:  # a docked panel sits beside the 3D view, never over the scene
            main_panel.dock_right()
        summary = self.graph.summary()
        gui.add_markdown(f"**{self.graph.num_nodes} nodes, {self.graph.num_edges} edges**  \n{summary}")
        with gui.add_folder("Ask"):
            self.question_box = gui.add_text(
                "Question", "", multiline=False, hint="a question about the scene"
            )
            self.ask_button = gui.add_button(
                "Ask", disabled=self._access is None or not self._models.configured
            )
            self.answer_md = gui.add_markdown(self._ask_help())
        with gui.add_folder("Cypher"):
            self.cypher_box = gui.add_text(
                "Query", "", multiline=True, hint="read-only Cypher (Neo4j dialect)"
            )
            self.cypher_button = gui.add_button("Run", disabled=self._access is None)
            self.cypher_md = gui.add_markdown(
                "" if self._access is not None else "_no database: read-only view_"
            )
        with gui.add_folder("Selection"):
            self.selection_md = gui.add_markdown("_click a node_")
            clear = gui.add_button("Clear highlight")
        self.legend: Any | None = None
        if any(True for _ in self.graph.nodes(ont.OBJECT)):
            with gui.add_folder("Legend: object classes"):
                self.legend = gui.add_html(legend_html(self.graph))
        with gui.add_folder("Layers", expand_by_default=False):
            for label, handle in self.node_handles.items():
                self._visibility_toggle(f"{label} ({len(self.layout.layers[label].symbols)})", [handle])
            for edge_type, handle in self.edge_handles.items():
                self._visibility_toggle(edge_type, [handle])
            if self.box_handle is not None:
                self._visibility_toggle("bounding boxes", [self.box_handle])

        @self.ask_button.on_click
        def _ask(_: Any) -> None:
            self.ask_in_background(self.question_box.value)

        @self.cypher_button.on_click
        def _run(_: Any) -> None:
            self._run_cypher_from_gui(self.cypher_box.value)

        @clear.on_click
        def _clear(_: Any) -> None:
            self.clear_highlight()

    def _ask_help(self) -> str:
        if self._access is None:
            return "_no database: questions need one_"
        if not self._models.configured:
            return "_no language model: start the viewer with an LLM (--llm) to ask questions_"
        return "_the answer's nodes are highlighted in the scene_"

    def _visibility_toggle(self, name: str, handles: Sequence[Any]) -> None:
        box = self.server.gui.add_checkbox(name, True)

        @box.on_update
        def _toggled(_: Any) -> None:
            for handle in handles:
                handle.visible = box.value

    # -- highlighting and selection ----------------------------------------------------------------------
    def node_color(self, symbol: str) -> tuple[int, int, int]:
        """The colour ``symbol`` is drawn in now (the scene handle's colour for it)."""
        label = self.layout.labels[symbol]
        index = self.layout.layers[label].symbols.index(symbol)
        colors = np.asarray(self.node_handles[label].colors)
        return tuple(int(c) for c in colors[index])  # type: ignore[return-value]

    def highlight(self, symbols: Iterable[str]) -> list[str]:
        """Draw ``symbols`` (those in the graph) in the highlight colour and larger, each with a pin: a line
        up to a labelled head above the top layer (seen from above, nothing can hide it); returns them."""
        wanted = [s for s in dict.fromkeys(symbols) if s in self.layout.positions]
        with self._state, self.server.atomic():
            self._reset_colors()
            for handle in self._highlight_handles:
                handle.remove()
            self._highlight_handles = []
            by_label: dict[str, list[str]] = {}
            for symbol in wanted:
                by_label.setdefault(self.layout.labels[symbol], []).append(symbol)
            for label, members in by_label.items():
                layer = self.layout.layers[label]
                index = layer.index()
                colors = layer.colors.copy()
                for symbol in members:
                    colors[index[symbol]] = HIGHLIGHT
                self.node_handles[label].colors = colors
                points = np.asarray([self.layout.positions[s] for s in members], np.float32)
                self._highlight_handles.append(
                    self.server.scene.add_point_cloud(
                        f"/highlight/{label}",
                        points,
                        HIGHLIGHT,
                        point_size=3.2 * layer.node_size,
                        point_shape="circle",
                        precision="float32",
                    )
                )
            if wanted:  # pins: a line up from each node to a head above every layer, where nothing hides it
                heads = self.layout.pin_heads(wanted)
                feet = np.asarray([self.layout.positions[s] for s in wanted], np.float32)
                self._highlight_handles += [
                    self.server.scene.add_line_segments(
                        "/highlight/pins",
                        np.stack([feet, heads], axis=1),
                        HIGHLIGHT,
                        thickness=2.0,
                        thickness_units="screen",
                    ),
                    self.server.scene.add_point_cloud(
                        "/highlight/heads",
                        heads,
                        HIGHLIGHT,
                        point_size=2.0 * self.layout.pin_radius(),
                        point_shape="circle",
                        point_shading="flat",
                        precision="float32",
                    ),
                ]
                for symbol, head in list(zip(wanted, heads, strict=True))[:MAX_HIGHLIGHT_LABELS]:
                    node = self.graph.node(symbol)
                    self._highlight_handles.append(
                        self.server.scene.add_label(
                            f"/highlight/labels/{symbol}",
                            f"{symbol} {node.class_name}",
                            position=tuple(float(v) for v in head),
                            anchor="bottom-center",
                        )
                    )
            self.highlighted = wanted
        return wanted

    def _reset_colors(self) -> None:
        for label in {self.layout.labels[s] for s in self.highlighted}:
            self.node_handles[label].colors = self.layout.layers[label].colors

    def clear_highlight(self) -> None:
        self.highlight([])

    def select(self, symbol: str) -> str:
        """Show ``symbol``'s details in the GUI and mark it in the scene; returns the details text."""
        node = self.graph.node(symbol)
        lines = [f"**{symbol}** · {node.label} · `{node.class_name}`"]
        x, y, z = node.position
        lines.append(f"position ({x:.2f}, {y:.2f}, {z:.2f})")
        if node.bbox_dim is not None:
            lines.append("bbox " + " × ".join(f"{v:.2f}" for v in node.bbox_dim) + " m")
        if node.description:
            lines.append(f"> {node.description}")
        parents = [p.symbol for p in self.graph.parents(symbol)]
        children = self.graph.children(symbol)
        if parents:
            lines.append("in " + ", ".join(parents))
        if children:
            lines.append(
                f"contains {len(children)}: " + listed([c.symbol for c in children], MAX_LISTED_CHILDREN)
            )
        text = "  \n".join(lines)
        with self._state:
            for handle in self._selection_handles:
                handle.remove()
            position = tuple(float(v) for v in self.layout.positions[symbol])
            self._selection_handles = [
                self.server.scene.add_point_cloud(
                    "/selection/node",
                    np.asarray([position], np.float32),
                    SELECTED,
                    point_size=3.6 * self.layout.node_size(symbol),
                    point_shape="circle",
                    precision="float32",
                ),
                self.server.scene.add_label(
                    "/selection/label",
                    f"{symbol} {node.class_name}",
                    position=position,
                    anchor="bottom-center",
                ),
            ]
            self.selected = symbol
            self.selection_md.content = text
        return text

    # -- questions and queries -------------------------------------------------------------------------
    def _require_store(self) -> StoreAccess:
        if self._access is None:
            raise ViewerError(
                "this viewer has no database", hint="start it on a database (run_viewer(db, ...))"
            )
        return self._access

    def ask(self, question: str) -> AgentResult:
        """Answer ``question`` with the Cypher agent (read-only), show the answer and highlight its nodes."""
        from scenerag.agents import CypherAgent, CypherAgentConfig

        access = self._require_store()
        text = (question or "").strip()
        if not text:
            raise ViewerError("the question is empty")
        self.answer_md.content = f"_running:_ {text}"
        progress = _AnswerProgress(self.answer_md, text)
        try:
            with self._models.session() as model:
                agent = CypherAgent(
                    ProgressChatModel(model, progress),
                    access.read_only(),
                    CypherAgentConfig(max_tool_calls=self.max_tool_calls),
                    progress=progress,
                )
                result = agent.run(text)
        except SceneRagError as exc:
            self.answer_md.content = f"**error:** {exc}"
            raise
        shown = self.highlight(result.symbols)
        self.answer_md.content = self._answer_markdown(result, shown)
        self.last_result = result  # set last: watchers see a fully updated GUI
        return result

    def ask_in_background(self, question: str) -> Future[AgentResult]:
        """:meth:`ask` in the viewer's worker thread (what the Ask button does)."""
        return self._asks.submit(self._ask_quietly, question)

    def _ask_quietly(self, question: str) -> AgentResult:
        try:
            return self.ask(question)
        except SceneRagError as exc:
            self.answer_md.content = f"**error:** {exc}"
            raise

    def _answer_markdown(self, result: AgentResult, shown: list[str]) -> str:
        parts = [f"**answer:** {result.answer if result.answer is not None else '(none)'}"]
        if result.error:
            parts.append(f"_warning: {result.error}_")
        for i, tool in enumerate(result.tools, 1):
            status = f"{tool.rows} row(s)" if tool.ok else f"error: {(tool.error or '').splitlines()[0]}"
            parts.append(f"query {i} ({status}):\n{_md_code(tool.ran or tool.input)}")
        parts.append(f"highlighted: {listed(shown, MAX_LISTED_HIGHLIGHTS) if shown else 'none'}")
        u = result.usage
        parts.append(
            f"_{result.llm_calls} LLM call(s), {u.input_tokens}/{u.output_tokens} tokens, {result.wall_s:.1f} s_"
        )
        return "\n\n".join(parts)

    def run_cypher(self, query: str) -> QueryResult:
        """Run a read-only query, list its rows in the GUI and highlight the node symbols they contain."""
        access = self._require_store()
        result = access.read(query)
        shown = self.highlight(symbols_in(result.rows, self.layout.positions))
        lines = [
            f"{len(result.rows)} row(s){' (truncated)' if result.truncated else ''}, {result.elapsed_ms:.0f} ms"
        ]
        for row in result.rows[:MAX_LISTED_ROWS]:
            lines.append("- " + ", ".join(f"{k}: {v}" for k, v in row.items()))
        if len(result.rows) > MAX_LISTED_ROWS:
            lines.append(f"…and {len(result.rows) - MAX_LISTED_ROWS} more rows")
        lines.append(f"highlighted: {listed(shown, MAX_LISTED_HIGHLIGHTS) if shown else 'none'}")
        self.cypher_md.content = "  \n".join(lines)
        self.last_query = result  # set last: watchers see a fully updated GUI
        return result

    def _run_cypher_from_gui(self, query: str) -> None:
        try:
            self.run_cypher(query)
        except SceneRagError as exc:
            self.cypher_md.content = f"**error:** {exc}"

    # -- lifecycle -------------------------------------------------------------------------------------
    def client_count(self) -> int:
        """Browsers connected right now."""
        return len(self.server.get_clients())

    def stop(self) -> None:
        self._asks.shutdown(wait=False, cancel_futures=True)
        self.server.stop()


def run_viewer(
    db: str | Path | CypherStore,
    host: str = "127.0.0.1",
    port: int = DEFAULT_VIEWER_PORT,
    llm: LlmSource = None,
    *,
    block: bool = True,
    layer_gap: float | None = None,
    max_tool_calls: int = 5,
    allow_remote: bool = False,
    highlight: Iterable[str] = (),
) -> SceneViewer:
    """Open ``db`` (directory, Bolt URI or open store), read its graph and serve the viewer.

    ``highlight``: symbols drawn highlighted from the start (unknown ones raise ``ViewerError`` naming
    them). With ``block`` (the CLI), serve until interrupted, then stop and close the store it opened;
    without, return the running viewer (the caller stops it, and closes the store if it passed an open one).
    """
    from scenerag.store.base import CypherStore
    from scenerag.viz.store_graph import scene_graph_from_store

    if not is_loopback(host) and not allow_remote:
        raise ViewerError(f"refusing to serve the viewer on {host!r}: the viewer has no authentication")
    owned = not isinstance(db, CypherStore)
    if owned:
        from scenerag.serve.share import open_store_or_shared

        store = open_store_or_shared(db, create=False)  # through `scenerag serve` if it holds the database
    else:
        store = db  # type: ignore[assignment]
    try:
        graph = scene_graph_from_store(store)
        marked = list(dict.fromkeys(highlight))
        missing = [symbol for symbol in marked if symbol not in graph]
        if missing:
            raise unknown_symbols_error(missing)
        viewer = SceneViewer(
            graph,
            store=store,
            llm=llm,
            host=host,
            port=port,
            layer_gap=layer_gap,
            max_tool_calls=max_tool_calls,
            allow_remote=allow_remote,
        )
    except BaseException:
        if owned:
            store.close()
        raise
    if marked:
        viewer.highlight(marked)
    if not block:
        return viewer
    stop = threading.Event()
    try:
        print(f"scenerag viewer: {viewer.url}  ({graph.summary()}); Ctrl-C to stop", flush=True)
        from scenerag.serve.share import share_store

        # other scenerag commands on this database go through the viewer while it holds it
        with share_store(store, db) if owned else contextlib.nullcontext():  # type: ignore[arg-type]
            stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.stop()
        if owned:
            store.close()
    return viewer
