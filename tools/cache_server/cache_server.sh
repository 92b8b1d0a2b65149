#!/usr/bin/env bash
# `bazel run //tools/cache_server -- [--port N] [--data-dir DIR]`: runs server.py
# with the locked BuildGrid environment's interpreter (@buildgrid_env).
set -euo pipefail
if [[ -n "${RUNFILES_DIR:-}" && -d "$RUNFILES_DIR" ]]; then
  runfiles="$RUNFILES_DIR"
elif [[ -d "$0.runfiles" ]]; then
  runfiles="$0.runfiles"
else
  echo "cache_server: cannot find the runfiles of $0; use bazel run //tools/cache_server" >&2
  exit 1
fi
exec "$runfiles/buildgrid_env/python3" "$runfiles/riscv_ml_toolchain/tools/cache_server/server.py" "$@"
