#!/usr/bin/env bash
# Records the commit the next device run measures (see device_run.sh).
cd "$(dirname "$0")/.."
echo "$(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD || echo -dirty)" > .fp4moe_commit
cat .fp4moe_commit
