#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main demo offline on the embedded defaults:
# the Hydra example scene graph goes into embedded ArcadeDB and is queried with Cypher and by the local LLM.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/scenerag demo "$@"
