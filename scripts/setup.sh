#!/usr/bin/env bash
# setup.sh — install everything freshet needs to build, run and test.
#
# Idempotent: run it as often as you like. Every dependency comes from
# Debian's packages or from npm (tests/interop/package.json); nothing is
# downloaded from anywhere else. Run as root, or with sudo available.
#
#   scripts/setup.sh            build + run dependencies
#   scripts/setup.sh --test     also the test-only tools (npm readers, chromium, prometheus, tmux)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
want_test=0
[ "${1:-}" = "--test" ] && want_test=1

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

build_pkgs=(build-essential cmake ninja-build pkg-config clang
    libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libinih-dev libzstd-dev zlib1g-dev libsnappy-dev
    libsqlite3-dev librdkafka-dev zstd curl ca-certificates)
test_pkgs=(nodejs npm python3 chromium prometheus tmux)

need=()
for p in "${build_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need+=("$p")
done
if [ "$want_test" = 1 ]; then
    for p in "${test_pkgs[@]}"; do
        command -v "$p" >/dev/null 2>&1 && continue
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need+=("$p")
    done
fi
if [ "${#need[@]}" -gt 0 ]; then
    echo "setup: installing ${need[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
else
    echo "setup: Debian packages already present"
fi

# moto's S3 server for tests/integration/objstore.sh (and boto3, which the
# test uses to create an IAM user in moto's authenticating mode). The machines
# this project runs on ship moto through pip; Debian has python3-moto from
# Debian 13 on (bookworm has none), so install it from apt where apt has it.
if [ "$want_test" = 1 ] && ! python3 -c 'import moto.server, boto3' 2>/dev/null; then
    $SUDO apt-get update -qq
    if apt-cache policy python3-moto 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        echo "setup: installing python3-moto python3-boto3"
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
            python3-moto python3-boto3
    else
        echo "setup: note: no python3-moto package here; the S3 integration test will skip"
    fi
fi
if [ "$want_test" = 1 ] && [ -f "$here/tests/interop/package.json" ]; then
    cd "$here/tests/interop"
    if [ ! -d node_modules ] || [ package.json -nt node_modules ]; then
        echo "setup: npm install (tests/interop)"
        npm install --no-audit --no-fund --loglevel=error
        touch node_modules
    fi
fi
if [ "$want_test" = 1 ] && [ -f "$here/tests/browser/package.json" ]; then
    cd "$here/tests/browser"
    if [ ! -d node_modules ] || [ package.json -nt node_modules ]; then
        echo "setup: npm install (tests/browser)"
        npm install --no-audit --no-fund --loglevel=error
        touch node_modules
    fi
fi
bash "$here/scripts/web-setup.sh"
echo "setup: done"
