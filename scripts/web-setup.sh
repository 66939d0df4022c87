#!/usr/bin/env bash
# web-setup.sh — put the browser pages' third-party files in place.
#
# The dashboard (web/index.html) and the SQL explorer (web/explorer.html)
# load nothing from the internet: their libraries come from npm, pinned in
# web/package.json and web/package-lock.json, and this script copies the
# few distribution files the pages use into web/vendor/ (git-ignored, like
# web/node_modules). `freshet serve` serves web/ as it is.
#
#   web/vendor/uplot/           uPlot.esm.js, uPlot.min.css      (charts)
#   web/vendor/duckdb/          duckdb-browser.mjs, duckdb-{eh,mvp}.wasm and
#                               their workers                   (explorer)
#   web/vendor/apache-arrow/    the ES module tree of Arrow.dom.mjs
#   web/vendor/flatbuffers/     mjs/flatbuffers.js and its modules
#   web/vendor/tslib/           tslib.es6.mjs
#
# Idempotent and cheap when nothing changed: npm runs only when
# web/package.json or the lock file is newer than web/node_modules, and the
# copy is rebuilt in a temporary folder and swapped in whole. Called by
# scripts/setup.sh (plain and --test). Needs node and npm; installs Debian's
# when they are missing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
web="$here/web"

if ! command -v npm >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    echo "web-setup: installing nodejs npm (Debian) for the web pages' libraries"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi

cd "$web"
if [ ! -d node_modules ] || [ package.json -nt node_modules ] || [ package-lock.json -nt node_modules ]; then
    echo "setup: npm ci (web)"
    npm ci --no-audit --no-fund --loglevel=error
    touch node_modules
fi

nm="$web/node_modules"
if [ -d vendor ] && [ vendor -nt node_modules ] && [ vendor -nt "$here/scripts/web-setup.sh" ]; then
    echo "setup: web/vendor up to date"
    exit 0
fi

tmp=$(mktemp -d "$web/.vendor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/uplot" "$tmp/duckdb" "$tmp/apache-arrow" "$tmp/flatbuffers" "$tmp/tslib"
cp "$nm/uplot/dist/uPlot.esm.js" "$nm/uplot/dist/uPlot.min.css" "$nm/uplot/LICENSE" "$tmp/uplot/"

dd="$nm/@duckdb/duckdb-wasm/dist"
cp "$dd/duckdb-browser.mjs" "$dd/duckdb-eh.wasm" "$dd/duckdb-mvp.wasm" \
   "$dd/duckdb-browser-eh.worker.js" "$dd/duckdb-browser-mvp.worker.js" "$tmp/duckdb/"
cp "$nm/@duckdb/duckdb-wasm/package.json" "$tmp/duckdb/"   # its licence (MIT) is declared there

# Arrow.dom.mjs imports a tree of relative .mjs modules; copy that tree
# (not the command-line tools under bin/).
(cd "$nm/apache-arrow" && find . -name '*.mjs' ! -path './bin/*' -print0 |
    xargs -0 cp --parents -t "$tmp/apache-arrow/")
cp "$nm/apache-arrow/LICENSE.txt" "$nm/apache-arrow/NOTICE.txt" "$tmp/apache-arrow/"

(cd "$nm/flatbuffers" && find mjs -name '*.js' -print0 | xargs -0 cp --parents -t "$tmp/flatbuffers/")
cp "$nm/flatbuffers/LICENSE" "$tmp/flatbuffers/"

cp "$nm/tslib/tslib.es6.mjs" "$nm/tslib/LICENSE.txt" "$tmp/tslib/"

chmod -R a+rX "$tmp"
rm -rf vendor
mv "$tmp" vendor
trap - EXIT
echo "setup: web/vendor ready ($(du -sh vendor | cut -f1))"
