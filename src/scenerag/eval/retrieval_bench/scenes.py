"""The benchmark scenes: synthetic buildings rendered along a robot's tour and built into KeySG graphs
offline (oracle perception, template summaries), cached under :func:`bench_cache_dir`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from scenerag.errors import SceneRagError
from scenerag.graph.model import SceneGraph


class BenchmarkError(SceneRagError):
    """A benchmark that cannot run as asked (no scene, no queries, unknown method)."""


# -- scenes -----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SceneSpec:
    """A synthetic building to benchmark on: its size, seed and the frames rendered along the robot's tour."""

    name: str
    n_floors: int = 2
    rooms_per_floor: int = 3
    seed: int = 0
    frames: int = 400

    def key(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return f"{self.name}-{hashlib.blake2b(text.encode(), digest_size=5).hexdigest()}"


DEFAULT_SCENES: tuple[SceneSpec, ...] = (
    SceneSpec("b2x3-s0", n_floors=2, rooms_per_floor=3, seed=0, frames=420),
    SceneSpec("b3x3-s1", n_floors=3, rooms_per_floor=3, seed=1, frames=620),
    SceneSpec("b2x4-s2", n_floors=2, rooms_per_floor=4, seed=2, frames=500),
)
SMALL_SCENE = SceneSpec("b2x2-s3", n_floors=2, rooms_per_floor=2, seed=3, frames=240)


@dataclass
class PreparedScene:
    """A rendered and built scene: its built KeySG graph, the ground-truth graph and where both live."""

    spec: SceneSpec
    sequence_dir: Path
    build_dir: Path
    graph: SceneGraph
    ground_truth: SceneGraph


def bench_cache_dir() -> Path:
    """``$SCENERAG_BENCH_CACHE`` or ``~/.cache/scenerag/bench``."""
    return Path(os.environ.get("SCENERAG_BENCH_CACHE") or Path.home() / ".cache" / "scenerag" / "bench")


def prepare_scene(
    spec: SceneSpec, cache_dir: str | Path | None = None, progress: Callable[[str], None] | None = None
) -> PreparedScene:
    """Render and build ``spec`` once (cached under ``cache_dir/<spec key>``); later calls only read it."""
    from scenerag.build.config import BuildConfig
    from scenerag.build.pipeline import GRAPH_FILE, run_build
    from scenerag.graph.io import read_scene_graph
    from scenerag.sim.building import BuildingConfig, generate_building
    from scenerag.sim.render import write_sequence

    say = progress or (lambda text: None)
    root = Path(cache_dir or bench_cache_dir()) / spec.key()
    seq, out = root / "sequence", root / "build"
    if not (seq / ".complete").exists():
        say(f"{spec.name}: rendering {spec.frames} frames")
        building = generate_building(
            BuildingConfig(n_floors=spec.n_floors, rooms_per_floor=spec.rooms_per_floor, seed=spec.seed)
        )
        write_sequence(building, seq, layout="replica", n_frames=spec.frames)
        (seq / ".complete").touch()
    if not (out / GRAPH_FILE).exists():
        say(f"{spec.name}: building the KeySG graph (offline)")
        run_build(seq, out, BuildConfig.offline())
    gt_path = seq / "gt" / "scene_graph.json"
    if not gt_path.is_file():
        raise BenchmarkError(
            f"{seq}: no ground-truth scene graph (gt/scene_graph.json)", hint="delete it to re-render"
        )
    return PreparedScene(spec, seq, out, read_scene_graph(out / GRAPH_FILE), read_scene_graph(gt_path))


__all__ = [
    "DEFAULT_SCENES",
    "SMALL_SCENE",
    "BenchmarkError",
    "PreparedScene",
    "SceneSpec",
    "bench_cache_dir",
    "prepare_scene",
]
