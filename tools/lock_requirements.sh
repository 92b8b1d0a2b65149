#!/usr/bin/env bash
# Regenerates requirements.lock (hashes included) from requirements.in with
# pip-compile, for the CPython 3.11 this machine runs. pip's own configuration
# decides where wheels come from (the local CPU torch wheel included).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="$(mktemp -d)/pip-tools"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3.11 -m venv "$venv"
"$venv/bin/pip" install --quiet pip-tools
"$venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links \
  --output-file requirements.lock requirements.in
echo "wrote requirements.lock"
