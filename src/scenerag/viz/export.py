"""Static figures of a scene graph for reports: a PNG (matplotlib, layered 3D or top-down) and a
self-contained interactive HTML page (inline canvas + JavaScript, no network access, no libraries).

Contract: both draw the layout of :mod:`scenerag.viz.layout` with the class colours of
:mod:`scenerag.viz.style`; ``highlight`` symbols (e.g. ``AgentResult.symbols``) are drawn larger, in the
highlight colour and labelled. Unknown highlight symbols raise ``ViewerError`` naming them. Returns the
path written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.viz.layout import GROUND_RANK, SceneLayout, compute_layout, layer_rank
from scenerag.viz.style import HIGHLIGHT, class_color, edge_color, hex_color
from scenerag.viz.viewer import ViewerError, unknown_symbols_error

View = Literal["3d", "top"]
#: at most this many node labels are written on a PNG (rooms and highlights first)
MAX_PNG_LABELS = 60


def _highlight_list(graph: SceneGraph, highlight: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(highlight))
    missing = [s for s in wanted if s not in graph]
    if missing:
        raise unknown_symbols_error(missing)
    return wanted


def _rgb(color: tuple[int, int, int] | np.ndarray) -> tuple[float, float, float]:
    c = np.asarray(color, np.float64) / 255.0
    return (float(c[0]), float(c[1]), float(c[2]))


def export_png(
    graph: SceneGraph,
    path: str | Path,
    *,
    highlight: Iterable[str] = (),
    view: View = "3d",
    layout: SceneLayout | None = None,
    title: str | None = None,
    size_in: tuple[float, float] = (10.0, 8.0),
    dpi: int = 150,
) -> Path:
    """Draw ``graph`` to a PNG: ``view="3d"`` (layered, oblique) or ``"top"`` (plan view, real x/y)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if view not in ("3d", "top"):
        raise ViewerError(f"view must be '3d' or 'top' (got {view!r})")
    marked = _highlight_list(graph, highlight)
    lay = layout or compute_layout(graph)
    fig = Figure(figsize=size_in, dpi=dpi)
    FigureCanvasAgg(fig)
    if view == "3d":
        _draw_3d(fig, graph, lay, marked)
    else:
        _draw_top(fig, graph, lay, marked)
    fig.suptitle(title or graph.summary(), fontsize=9)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=dpi)
    return out


def _label_targets(graph: SceneGraph, lay: SceneLayout, marked: list[str]) -> list[str]:
    upper = [s for layer in lay.layers.values() if layer.rank >= 40 for s in layer.symbols]
    return list(dict.fromkeys(marked + upper))[:MAX_PNG_LABELS]


def _draw_3d(fig: Any, graph: SceneGraph, lay: SceneLayout, marked: list[str]) -> None:
    from mpl_toolkits.mplot3d.art3d import Line3DCollection

    ax = fig.add_subplot(projection="3d", computed_zorder=False)  # draw order: highlights on top
    for edge_type in lay.edge_pairs:
        segments = lay.edge_segments(edge_type)
        alpha = 0.25 if edge_type == ont.CONTAINS else 0.6
        ax.add_collection3d(
            Line3DCollection(segments, colors=[_rgb(edge_color(edge_type))], linewidths=0.5, alpha=alpha)
        )
    if len(lay.box_segments):
        colors = lay.box_colors[:, 0, :].astype(np.float64) / 255.0
        ax.add_collection3d(Line3DCollection(lay.box_segments, colors=colors, linewidths=0.4, alpha=0.8))
    for layer in lay.layers.values():
        p = layer.positions
        ax.scatter(
            p[:, 0], p[:, 1], p[:, 2], c=layer.colors / 255.0, s=_marker_area(layer.rank), depthshade=False
        )
    if marked:
        p = np.asarray([lay.positions[s] for s in marked])
        ax.scatter(
            p[:, 0],
            p[:, 1],
            p[:, 2],
            c=[_rgb(HIGHLIGHT)],
            s=90,
            edgecolors="black",
            linewidths=0.8,
            depthshade=False,
        )
    for symbol in _label_targets(graph, lay, marked):
        x, y, z = lay.positions[symbol]
        ax.text(x, y, z, f" {symbol} {graph.node(symbol).class_name}", fontsize=6)
    low, high = lay.bounds()
    span = np.maximum(high - low, 1e-3)
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    ax.set_zlim(low[2], high[2])
    ax.set_box_aspect(tuple(float(v) for v in span), zoom=1.1)
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=0.95)
    ax.view_init(elev=28, azim=-55)
    ax.set_axis_off()
    _legend(ax, graph, lay, marked)


def _draw_top(fig: Any, graph: SceneGraph, lay: SceneLayout, marked: list[str]) -> None:
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    ax = fig.add_subplot()
    real = {n.symbol: np.asarray(n.position[:2]) for n in graph.nodes()}
    for edge_type, pairs in lay.edge_pairs.items():
        segments = [[real[a], real[b]] for a, b in pairs]
        alpha = 0.2 if edge_type == ont.CONTAINS else 0.5
        ax.add_collection(
            LineCollection(segments, colors=[_rgb(edge_color(edge_type))], linewidths=0.5, alpha=alpha)
        )
    for node in graph.nodes():
        if node.bbox_center is None or node.bbox_dim is None or layer_rank(node.label) > GROUND_RANK:
            continue
        (cx, cy, _), (dx, dy, _) = node.bbox_center, node.bbox_dim
        color = _rgb(class_color(node.class_name))
        ax.add_patch(
            Rectangle((cx - dx / 2, cy - dy / 2), dx, dy, fill=False, edgecolor=color, linewidth=0.5)
        )
    for layer in sorted(lay.layers.values(), key=lambda item: -item.rank):  # big upper layers underneath
        p = np.asarray([real[s] for s in layer.symbols])
        ax.scatter(p[:, 0], p[:, 1], c=layer.colors / 255.0, s=_marker_area(layer.rank), zorder=3)
    if marked:
        p = np.asarray([real[s] for s in marked])
        ax.scatter(
            p[:, 0],
            p[:, 1],
            c=[_rgb(HIGHLIGHT)],
            s=90,
            edgecolors="black",
            linewidths=0.8,
            zorder=5,
        )
    for symbol in _label_targets(graph, lay, marked):
        x, y = real[symbol]
        ax.annotate(
            f"{symbol} {graph.node(symbol).class_name}",
            (x, y),
            fontsize=6,
            zorder=6,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    _legend(ax, graph, lay, marked)


#: object classes named in a static legend before "…and N more"
LEGEND_CLASSES = 12


def _legend(ax: Any, graph: SceneGraph, lay: SceneLayout, marked: list[str]) -> None:
    """Layers by marker size (grey: their colour is their nodes' class), then the object classes with their
    colours (most common first, "…and N more"), then the highlight colour."""
    from matplotlib.lines import Line2D

    def marker(color: tuple[float, float, float], rank: int, text: str) -> Line2D:
        size = float(np.sqrt(_marker_area(rank)))
        return Line2D([], [], linestyle="", marker="o", markersize=size, color=color, label=text)

    grey = (0.55, 0.55, 0.55)
    handles = [
        marker(grey, layer.rank, f"{layer.label} ({len(layer.symbols)})") for layer in lay.layers.values()
    ]
    counts: dict[str, int] = {}
    for node in graph.nodes(ont.OBJECT):
        counts[node.class_name] = counts.get(node.class_name, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    handles += [marker(_rgb(class_color(name)), 20, f"{name} ({n})") for name, n in ordered[:LEGEND_CLASSES]]
    if len(ordered) > LEGEND_CLASSES:
        handles.append(
            Line2D([], [], linestyle="", label=f"…and {len(ordered) - LEGEND_CLASSES} more classes")
        )
    if marked:
        handles.append(marker(_rgb(HIGHLIGHT), 40, "answer"))
    ax.legend(handles=handles, loc="upper left", fontsize=6, ncol=2 if len(handles) > 12 else 1)


def _marker_area(rank: int) -> float:
    return {60: 160.0, 50: 120.0, 40: 80.0, 30: 10.0}.get(rank, 22.0)


# -- HTML ----------------------------------------------------------------------------------------------


def html_payload(graph: SceneGraph, lay: SceneLayout, marked: list[str], title: str) -> dict[str, Any]:
    """The data the HTML page draws: nodes (drawn positions), edges by index, layers, highlights."""
    symbols = list(lay.positions)
    index = {s: i for i, s in enumerate(symbols)}
    colors = {
        s: hex_color((int(c[0]), int(c[1]), int(c[2])))
        for layer in lay.layers.values()
        for s, c in zip(layer.symbols, layer.colors, strict=True)
    }
    nodes = []
    for s in symbols:
        node = graph.node(s)
        nodes.append(
            {
                "s": s,
                "l": node.label,
                "c": node.class_name,
                "p": [round(float(v), 3) for v in lay.positions[s]],
                "r": round(lay.layers[node.label].node_size, 3),
                "col": colors[s],
                "d": node.description or "",
            }
        )
    edge_types = sorted(lay.edge_pairs)
    edges = [[index[a], index[b], t] for t, etype in enumerate(edge_types) for a, b in lay.edge_pairs[etype]]
    boxes = []
    for symbol in lay.box_symbols:
        node = graph.node(symbol)
        assert node.bbox_center is not None and node.bbox_dim is not None
        boxes.append(
            [
                index[symbol],
                *[round(float(v), 3) for v in node.bbox_center],
                *[round(float(v), 3) for v in node.bbox_dim],
            ]
        )
    return {
        "title": title,
        "summary": graph.summary(),
        "layers": [{"label": layer.label, "count": len(layer.symbols)} for layer in lay.layers.values()],
        "edgeTypes": [{"name": t, "color": hex_color(edge_color(t))} for t in edge_types],
        "classes": _class_legend(graph),
        "nodes": nodes,
        "edges": edges,
        "boxes": boxes,
        "highlight": [index[s] for s in marked],
        "highlightColor": hex_color(HIGHLIGHT),
        "labelRank": 40,
        "ranks": {layer.label: layer.rank for layer in lay.layers.values()},
    }


def _class_legend(graph: SceneGraph, limit: int = 24) -> list[dict[str, Any]]:
    """Object classes with their colours and counts, most common first (at most ``limit``; the last
    entry counts the rest)."""
    counts: dict[str, int] = {}
    for node in graph.nodes(ont.OBJECT):
        counts[node.class_name] = counts.get(node.class_name, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    out: list[dict[str, Any]] = [
        {"name": name, "count": n, "color": hex_color(class_color(name))} for name, n in ordered[:limit]
    ]
    if len(ordered) > limit:
        out.append({"name": f"…and {len(ordered) - limit} more classes", "count": None, "color": None})
    return out


def export_html(
    graph: SceneGraph,
    path: str | Path,
    *,
    highlight: Iterable[str] = (),
    layout: SceneLayout | None = None,
    title: str | None = None,
) -> Path:
    """Write a self-contained interactive page of ``graph``: drag to orbit, wheel to zoom, hover for
    details, click to list a node's neighbours, toggle layers and edge types; highlights are marked."""
    marked = _highlight_list(graph, highlight)
    lay = layout or compute_layout(graph)
    heading = title or "scene graph"
    payload = json.dumps(html_payload(graph, lay, marked, heading), separators=(",", ":"), ensure_ascii=True)
    page = _HTML_TEMPLATE.replace("__TITLE__", _escape(heading)).replace(
        "__DATA__", payload.replace("</", "<\\/")
    )
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


_HTML_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>__TITLE__</title>
<style>
  html, body { margin: 0; height: 100%; font: 13px system-ui, sans-serif; color: #222; background: #fff; }
  #scene { position: absolute; inset: 0; width: 100%; height: 100%; cursor: grab; }
  #panel { position: absolute; top: 10px; right: 10px; width: 300px; max-height: calc(100% - 40px); overflow: auto;
           background: rgba(255,255,255,0.94); border: 1px solid #ccc; border-radius: 6px; padding: 8px 10px; }
  #panel h1 { font-size: 15px; margin: 0 0 4px; }
  #panel .dim { color: #666; font-size: 12px; }
  #panel label { display: block; }
  #tip { position: absolute; pointer-events: none; background: #222; color: #fff; padding: 4px 6px;
         border-radius: 4px; font-size: 12px; display: none; max-width: 320px; }
  .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; }
</style>
</head>
<body>
<canvas id="scene"></canvas>
<div id="panel">
  <h1>__TITLE__</h1>
  <div class="dim" id="summary"></div>
  <div id="answer"></div>
  <h3>Layers</h3><div id="layers"></div>
  <h3>Edges</h3><div id="edgeTypes"></div>
  <h3>Object classes</h3><div id="classes" class="dim"></div>
  <label><input type="checkbox" id="boxes" checked> bounding boxes</label>
  <h3>Selection</h3><div id="selection" class="dim">click a node</div>
  <p class="dim">drag: orbit · shift+drag: pan · wheel: zoom</p>
</div>
<div id="tip"></div>
<script type="application/json" id="scene-data">__DATA__</script>
<script>
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("scene-data").textContent);
  const canvas = document.getElementById("scene"), ctx = canvas.getContext("2d");
  const tip = document.getElementById("tip");
  const nodes = data.nodes, edges = data.edges;
  const hl = new Set(data.highlight);
  const shownLayer = {}, shownEdge = {};
  let showBoxes = true, selected = -1;
  const neighbours = nodes.map(() => []);
  edges.forEach(([a, b]) => { neighbours[a].push(b); neighbours[b].push(a); });

  // camera: orbit around the scene centre
  const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  nodes.forEach(n => n.p.forEach((v, k) => { lo[k] = Math.min(lo[k], v); hi[k] = Math.max(hi[k], v); }));
  const centre = lo.map((v, k) => (v + hi[k]) / 2);
  const span = Math.max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1);
  const cam = { yaw: -0.8, pitch: 0.55, dist: 2.0 * span, target: centre.slice() };
  let projected = [];

  function basis() {
    const cy = Math.cos(cam.yaw), sy = Math.sin(cam.yaw), cp = Math.cos(cam.pitch), sp = Math.sin(cam.pitch);
    const fwd = [-cp * cy, -cp * sy, -sp];                 // from the eye towards the target
    const right = [-sy, cy, 0];
    const up = [right[1] * fwd[2] - right[2] * fwd[1], right[2] * fwd[0] - right[0] * fwd[2], right[0] * fwd[1] - right[1] * fwd[0]];
    const eye = cam.target.map((v, k) => v - fwd[k] * cam.dist);
    return { fwd, right, up, eye };
  }
  function projector() {
    const b = basis(), w = canvas.width, h = canvas.height, f = 0.9 * Math.min(w, h);
    return p => {
      const d = [p[0] - b.eye[0], p[1] - b.eye[1], p[2] - b.eye[2]];
      const z = d[0] * b.fwd[0] + d[1] * b.fwd[1] + d[2] * b.fwd[2];
      if (z <= 1e-3) return null;
      const x = d[0] * b.right[0] + d[1] * b.right[1] + d[2] * b.right[2];
      const y = d[0] * b.up[0] + d[1] * b.up[1] + d[2] * b.up[2];
      return [w / 2 + f * x / z, h / 2 - f * y / z, z, f / z];
    };
  }
  const BOX_EDGES = [[0,1],[2,3],[4,5],[6,7],[0,2],[1,3],[4,6],[5,7],[0,4],[1,5],[2,6],[3,7]];

  function draw() {
    const ratio = window.devicePixelRatio || 1;
    canvas.width = canvas.clientWidth * ratio; canvas.height = canvas.clientHeight * ratio;
    ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    const proj = projector();
    projected = nodes.map(n => shownLayer[n.l] ? proj(n.p) : null);
    ctx.lineWidth = ratio;
    edges.forEach(([a, b, t]) => {
      const et = data.edgeTypes[t];
      if (!shownEdge[et.name] || !projected[a] || !projected[b]) return;
      ctx.strokeStyle = et.color; ctx.globalAlpha = et.name === "CONTAINS" ? 0.25 : 0.6;
      ctx.beginPath(); ctx.moveTo(projected[a][0], projected[a][1]); ctx.lineTo(projected[b][0], projected[b][1]); ctx.stroke();
    });
    if (showBoxes) {
      ctx.globalAlpha = 0.8;
      data.boxes.forEach(([i, cx, cy, cz, dx, dy, dz]) => {
        if (!shownLayer[nodes[i].l]) return;
        const corners = [];
        for (let k = 0; k < 8; k++) corners.push(proj([cx + ((k & 1) ? 0.5 : -0.5) * dx, cy + ((k & 2) ? 0.5 : -0.5) * dy, cz + ((k & 4) ? 0.5 : -0.5) * dz]));
        ctx.strokeStyle = nodes[i].col; ctx.beginPath();
        BOX_EDGES.forEach(([a, b]) => { if (corners[a] && corners[b]) { ctx.moveTo(corners[a][0], corners[a][1]); ctx.lineTo(corners[b][0], corners[b][1]); } });
        ctx.stroke();
      });
    }
    ctx.globalAlpha = 1;
    const order = nodes.map((_, i) => i).filter(i => projected[i]).sort((a, b) => projected[b][2] - projected[a][2]);
    order.forEach(i => {
      const q = projected[i], n = nodes[i], marked = hl.has(i) || i === selected;
      const r = Math.max(2 * ratio, n.r * q[3]) * (marked ? 1.7 : 1);
      ctx.beginPath(); ctx.arc(q[0], q[1], r, 0, 2 * Math.PI);
      ctx.fillStyle = hl.has(i) ? data.highlightColor : n.col; ctx.fill();
      if (marked) { ctx.lineWidth = 1.5 * ratio; ctx.strokeStyle = i === selected ? "#d4a000" : "#000"; ctx.stroke(); ctx.lineWidth = ratio; }
    });
    ctx.fillStyle = "#111"; ctx.font = (11 * ratio) + "px system-ui, sans-serif";
    order.forEach(i => {
      const n = nodes[i];
      if (hl.has(i) || i === selected || (data.ranks[n.l] || 0) >= data.labelRank) {
        ctx.fillText(n.s + " " + n.c, projected[i][0] + 6 * ratio, projected[i][1] - 6 * ratio);
      }
    });
  }

  function nodeAt(x, y) {
    const ratio = window.devicePixelRatio || 1;
    let best = -1, bestD = 12 * ratio;
    projected.forEach((q, i) => { if (!q) return; const d = Math.hypot(q[0] - x * ratio, q[1] - y * ratio); if (d < bestD) { best = i; bestD = d; } });
    return best;
  }
  function describe(i) {
    const n = nodes[i];
    return "<b>" + esc(n.s) + "</b> · " + esc(n.l) + " · " + esc(n.c) + (n.d ? "<br>" + esc(n.d) : "");
  }
  function esc(t) { return String(t).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }

  let drag = null;
  canvas.addEventListener("mousedown", e => { drag = { x: e.clientX, y: e.clientY, moved: false, pan: e.shiftKey }; });
  window.addEventListener("mouseup", e => {
    if (drag && !drag.moved) {
      selected = nodeAt(e.clientX, e.clientY);
      document.getElementById("selection").innerHTML = selected < 0 ? "click a node" :
        describe(selected) + "<br>neighbours: " + neighbours[selected].slice(0, 30).map(j => esc(nodes[j].s)).join(", ");
      draw();
    }
    drag = null;
  });
  canvas.addEventListener("mousemove", e => {
    if (drag) {
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 2) drag.moved = true;
      if (drag.pan) {
        const b = basis(), s = cam.dist / 600;
        cam.target = cam.target.map((v, k) => v - b.right[k] * dx * s + b.up[k] * dy * s);
      } else {
        cam.yaw -= dx * 0.008; cam.pitch = Math.max(-1.5, Math.min(1.5, cam.pitch + dy * 0.008));
      }
      drag.x = e.clientX; drag.y = e.clientY; draw(); return;
    }
    const i = nodeAt(e.clientX, e.clientY);
    if (i < 0) { tip.style.display = "none"; return; }
    tip.innerHTML = describe(i); tip.style.display = "block";
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px";
  });
  canvas.addEventListener("wheel", e => { e.preventDefault(); cam.dist *= Math.exp(e.deltaY * 0.001); draw(); }, { passive: false });
  window.addEventListener("resize", draw);

  function toggles(id, items, state, text) {
    const box = document.getElementById(id);
    items.forEach(item => {
      state[item.key] = true;
      const label = document.createElement("label"), input = document.createElement("input");
      input.type = "checkbox"; input.checked = true;
      input.addEventListener("change", () => { state[item.key] = input.checked; draw(); });
      label.appendChild(input); label.insertAdjacentHTML("beforeend", text(item)); box.appendChild(label);
    });
  }
  toggles("layers", data.layers.map(l => ({ key: l.label, l })), shownLayer, it => " " + esc(it.l.label) + " (" + it.l.count + ")");
  toggles("edgeTypes", data.edgeTypes.map(t => ({ key: t.name, t })), shownEdge,
          it => ' <span class="swatch" style="background:' + it.t.color + '"></span>' + esc(it.t.name));
  document.getElementById("classes").innerHTML = data.classes.map(c => c.color === null ? "<div>" + esc(c.name) + "</div>" :
    '<div><span class="swatch" style="background:' + c.color + '"></span>' + esc(c.name) + " (" + c.count + ")</div>").join("");
  document.getElementById("boxes").addEventListener("change", e => { showBoxes = e.target.checked; draw(); });
  document.getElementById("summary").textContent = data.summary;
  if (data.highlight.length) {
    document.getElementById("answer").innerHTML = '<p><span class="swatch" style="background:' + data.highlightColor +
      '"></span>highlighted: ' + data.highlight.map(i => esc(nodes[i].s)).join(", ") + "</p>";
  }
  draw();
  // scripting hook (tests, automation): where a node is drawn, in CSS pixels, or null when hidden
  window.sceneLocate = symbol => {
    const i = nodes.findIndex(n => n.s === symbol), ratio = window.devicePixelRatio || 1;
    return i < 0 || !projected[i] ? null : [projected[i][0] / ratio, projected[i][1] / ratio];
  };
  window.sceneReady = true;
})();
</script>
</body>
</html>
"""
