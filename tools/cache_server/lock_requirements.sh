#!/usr/bin/env bash
# Regenerates tools/cache_server/requirements.lock (hashes included) from
# tools/cache_server/requirements.in, like tools/lock_requirements.sh does for
# the main environment. About 5 minutes: pip's resolver walks boto3/botocore
# releases before it settles.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
venv="$(mktemp -d)/pip-tools"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3.11 -m venv "$venv"
"$venv/bin/pip" install --quiet pip-tools
"$venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links \
  --output-file requirements.lock requirements.in
echo "wrote tools/cache_server/requirements.lock"
