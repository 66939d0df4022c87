#!/usr/bin/env bash
# two_threads.sh — how much two busy threads get out of this machine's
# vCPUs (docs/BENCHMARKS.md, issue 5's session-14 section): wall and CPU
# time of bench/two_threads.c with one thread, then with two, alternating,
# ROUNDS times. The ratio is the work two threads do in the time one takes.
# usage: bash bench/two_threads.sh   (ROUNDS=3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/frbench-threads.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O1 -pthread -o "$tmp/two_threads" "$here/two_threads.c"
for r in $(seq "$ROUNDS"); do
    for n in 1 2; do
        /usr/bin/time -f "%e %U %S" -o "$tmp/t$n" "$tmp/two_threads" "$n"
    done
    read -r w1 u1 s1 <"$tmp/t1"
    read -r w2 u2 s2 <"$tmp/t2"
    awk -v w1="$w1" -v c1="$u1+$s1" -v w2="$w2" -v u2="$u2" -v s2="$s2" -v r="$r" 'BEGIN {
        c2 = u2 + s2
        printf "round %d: 1 thread %.2f s; 2 threads %.2f s wall, %.2f s CPU (%.2f vCPUs busy); 2 threads do %.2fx the work of 1\n",
            r, w1, w2, c2, c2 / w2, 2 * w1 / w2 }'
done
