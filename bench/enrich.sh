#!/usr/bin/env bash
# enrich.sh — enrichment lookups against the feed's MediaWiki-API fixture:
# lookups/s and API calls per 1,000 events, cache cold and warm, then cold
# with 50 ms of fixture latency (docs/BENCHMARKS.md, "Enrichment (issue 9)").
set -euo pipefail
"${FR_BUILD_DIR:?}/bench_enrich" "${ENRICH_EVENTS:-20000}" "${ENRICH_LATENCY_MS:-50}"
