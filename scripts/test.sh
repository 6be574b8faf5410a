#!/usr/bin/env bash
# Run the test suite: sets the environment up first (scripts/setup.sh), then pytest with any extra arguments.
# Exit code 5 (no tests collected) is an error for the full suite, and success with a notice when a
# selection (-k/-m/paths) matched nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || exit $?
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  if [ "$#" -gt 0 ]; then
    echo "[test] no test matched the selection ($*); nothing to run" >&2
    exit 0
  fi
  echo "[test] pytest collected no tests at all: the test tree or its imports are broken" >&2
fi
exit "$rc"
