#!/usr/bin/env bash
# sse.sh — SSE parse speed next to memchr scanning of the same bytes.
set -euo pipefail
"${FR_BUILD_DIR:?}/bench_sse"
