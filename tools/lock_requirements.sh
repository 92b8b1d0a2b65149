#!/usr/bin/env bash
# Regenerates a hash-locked requirements.lock from the requirements.in beside it
# with pip-compile, for the CPython 3.11 this machine runs. pip's own
# configuration decides where wheels come from (the local CPU torch wheel
# included).
#
#   tools/lock_requirements.sh                    # the main lock (./requirements.in)
#   tools/lock_requirements.sh tools/cache_server # the BuildGrid server's lock
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir="${1:-.}"
[[ -f "$dir/requirements.in" ]] || { echo "lock_requirements: no $dir/requirements.in" >&2; exit 2; }
venv="$(mktemp -d)/pip-tools"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3.11 -m venv "$venv"
"$venv/bin/pip" install --quiet pip-tools
cd "$dir"
"$venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links \
  --output-file requirements.lock requirements.in
echo "wrote $dir/requirements.lock"
