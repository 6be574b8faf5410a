"""Rebuild ``src/scenerag/store/java/scenerag-arcade.jar`` from ``java/scenerag/**/*.java`` (``BulkLoader``,
``Calls``; needs ``javac`` >= 17).

Usage::

    python scripts/build_java.py

The classes are compiled for Java 17 against compile-time stubs of the ArcadeDB classes they use
(``java/stubs``; the engine jar is Java 21 bytecode, which the JDK 17 on Debian 12 cannot read), and only
``scenerag/**`` goes into the jar. The jar's manifest records a SHA-256 of the sources (``source_hash``),
which the tests compare, so an edited source with a stale jar fails CI. The jar is deterministic (fixed
timestamps).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

JAVA_DIR = Path(__file__).resolve().parent.parent / "src" / "scenerag" / "store" / "java"
JAR = JAVA_DIR / "scenerag-arcade.jar"
SOURCE_HASH_KEY = "Scenerag-Source-SHA256"


def sources() -> list[Path]:
    return sorted((JAVA_DIR / "scenerag").rglob("*.java"))


def source_hash() -> str:
    """SHA-256 over each source's path (relative to ``java/``, then a NUL) and bytes, in path order."""
    digest = hashlib.sha256()
    for path in sources():
        digest.update(path.relative_to(JAVA_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build() -> Path:
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit(
            "javac not found: install a JDK >= 17 (Debian: apt-get install openjdk-17-jdk-headless)"
        )
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [
                javac,
                "--release",
                "17",
                "-Xlint:all",
                "-Werror",
                "-sourcepath",
                str(JAVA_DIR / "stubs"),
                "-d",
                out,
                *map(str, sources()),
            ],
            check=True,
        )
        classes = sorted(p for p in Path(out, "scenerag").rglob("*.class"))
        manifest = f"Manifest-Version: 1.0\r\n{SOURCE_HASH_KEY}: {source_hash()}\r\n\r\n"
        with zipfile.ZipFile(JAR, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", (1980, 1, 1, 0, 0, 0)), manifest)
            for path in classes:
                info = zipfile.ZipInfo(path.relative_to(out).as_posix(), (1980, 1, 1, 0, 0, 0))
                jar.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    return JAR


if __name__ == "__main__":
    print(f"wrote {build()}", file=sys.stderr)
