#!/usr/bin/env bash
# Seed example: total bytes requested per kmalloc call site, top callers
# first, symbolized. Usage: kmalloc_by_call_site.sh [TREE] [SECONDS]
set -euo pipefail
T=${1:-/run/histd/tracing}
EV=$T/events/kmem/kmalloc
echo 'hist:key=call_site.sym:val=bytes_req:sort=bytes_req.descending' > "$EV/trigger"
sleep "${2:-5}"
cat "$EV/hist"
echo '!hist:key=call_site.sym:val=bytes_req:sort=bytes_req.descending' >> "$EV/trigger"
