#!/usr/bin/env bash
# Regenerates tools/cache_server/requirements.lock (about 5 minutes: pip's
# resolver walks boto3/botocore releases before it settles).
exec "$(dirname "${BASH_SOURCE[0]}")/../lock_requirements.sh" tools/cache_server
