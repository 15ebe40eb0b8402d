#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Seed example: total bytes requested per kmalloc call site, top callers
# first, symbolized. Usage: kmalloc_by_call_site.sh [SECONDS]
# (histctl finds histd through HISTD_SOCKET, default /run/histd/histd.sock)
set -euo pipefail
HISTCTL=${HISTCTL:-histctl}
CMD='hist:key=call_site.sym:val=bytes_req:sort=bytes_req.descending'
"$HISTCTL" add kmem:kmalloc "$CMD"
trap '"$HISTCTL" remove kmem:kmalloc "$CMD"' EXIT
sleep "${1:-5}"
"$HISTCTL" show kmem:kmalloc
