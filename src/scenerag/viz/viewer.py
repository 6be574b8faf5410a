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
from scenerag.serve.config import is_loopback
from scenerag.serve.llm_provider import ChatModelProvider, LlmSource
from scenerag.serve.store_access import StoreAccess
from scenerag.viz.layout import SceneLayout, compute_layout, edge_colors
from scenerag.viz.style import HIGHLIGHT, SELECTED

if TYPE_CHECKING:
    import viser

    from scenerag.agents.result import AgentResult
    from scenerag.store.base import CypherStore, QueryResult

DEFAULT_VIEWER_PORT = 8080
#: labels are always shown for layers at or above this rank (rooms, floors, buildings)
LABELED_RANK = 40
MAX_LISTED_ROWS = 20
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
        low, high = self.layout.bounds()
        center = (low + high) / 2.0
        span = float(max(np.max(high - low), 1.0))
        self.server.initial_camera.look_at = tuple(float(v) for v in center)
        self.server.initial_camera.position = (
            float(center[0] + 0.55 * span),
            float(center[1] - 0.55 * span),
            float(center[2] + 0.5 * span),
        )

        @scene.on_click()
        def _clicked(event: Any) -> None:
            symbol = self.layout.pick(event.ray_origin, event.ray_direction)
            if symbol is not None:
                self.select(symbol)

    # -- GUI -------------------------------------------------------------------------------------------
    def _build_gui(self) -> None:
        gui = self.server.gui
        gui.configure_theme(control_width="large")
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
        """Draw ``symbols`` (those in the graph) in the highlight colour, larger and labelled; returns them."""
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
            for symbol in wanted[:50]:
                node = self.graph.node(symbol)
                self._highlight_handles.append(
                    self.server.scene.add_label(
                        f"/highlight/labels/{symbol}",
                        f"{symbol} {node.class_name}",
                        position=tuple(float(v) for v in self.layout.positions[symbol]),
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
            lines.append(f"contains {len(children)}: " + ", ".join(c.symbol for c in children[:12]))
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
        try:
            with self._models.session() as model:
                agent = CypherAgent(
                    model, access.read_only(), CypherAgentConfig(max_tool_calls=self.max_tool_calls)
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
        parts.append(f"highlighted: {', '.join(shown) if shown else 'none'}")
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
        lines.append(f"highlighted: {', '.join(shown) if shown else 'none'}")
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
) -> SceneViewer:
    """Open ``db`` (directory, Bolt URI or open store), read its graph and serve the viewer.

    With ``block`` (the CLI), serve until interrupted, then stop and close the store it opened; without,
    return the running viewer (the caller stops it, and closes the store if it passed an open one).
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
