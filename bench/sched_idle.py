#!/usr/bin/env python3
"""sched_idle.py — where a run's idle vCPU time goes (docs/BENCHMARKS.md,
issue 5's session-17 section).

Input: `perf script -F cpu,time,event,trace` of a `perf record -e
sched:sched_switch -e sched:sched_wakeup` over one run (bench/backfill_ab.sh
with SCHED=1 makes it). COMM names the process whose threads count.

Prints, over the trace:
  - idle CPU time (a CPU running its idle task), and how much of it passed
    while at least one thread of COMM was runnable but not running: woken
    and not yet switched in, or preempted and not yet back;
  - for every such wait of a COMM thread, how long it lasted, by kind:
    woken (onto an idle or a busy CPU) or preempted (while the other CPU
    was idle or busy), and whether it then ran on the CPU it waited for or
    on another.
On an ideal machine a woken thread whose target CPU is idle runs within
microseconds, and a preempted thread moves to an idle CPU at once.

usage: sched_idle.py TRACE [COMM]   (COMM: freshet)
"""
import collections
import re
import sys

LINE = re.compile(r"\s*\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)")


def field(trace, name):
    m = re.search(r"\b" + name + r"=(\S+)", trace)
    return m.group(1) if m else None


def main():
    path = sys.argv[1]
    comm = sys.argv[2] if len(sys.argv) > 2 else "freshet"
    events = []
    for line in open(path):
        m = LINE.match(line)
        if m:
            events.append((float(m.group(2)), int(m.group(1)), m.group(3), m.group(4)))
    if not events:
        sys.exit("sched_idle: no sched events in " + path)
    events.sort(key=lambda e: e[0])
    ours = set()
    for _, _, name, tr in events:
        if name == "sched_switch":
            if field(tr, "prev_comm") == comm:
                ours.add(int(field(tr, "prev_pid")))
            if field(tr, "next_comm") == comm:
                ours.add(int(field(tr, "next_pid")))
        elif field(tr, "comm") == comm:
            ours.add(int(field(tr, "pid")))
    cpus = sorted({e[1] for e in events})
    cur = {c: None for c in cpus}  # pid running on each CPU (0: idle), None: unknown
    since = {c: events[0][0] for c in cpus}
    waiting = {}  # pid -> (start, kind, cpu waited on, other CPUs idle then)
    idle = idle_runnable = 0.0
    waits = collections.defaultdict(list)

    def advance(t):
        nonlocal idle, idle_runnable
        for c in cpus:
            if cur[c] == 0:
                d = t - since[c]
                idle += d
                if waiting:
                    idle_runnable += d
            since[c] = t

    def others_idle(c):
        return any(cur[o] == 0 for o in cpus if o != c)

    for t, cpu, name, tr in events:
        advance(t)
        if name == "sched_switch":
            prev, nxt = int(field(tr, "prev_pid")), int(field(tr, "next_pid"))
            if nxt in waiting:
                start, kind, on, other = waiting.pop(nxt)
                waits[(kind, other, "same CPU" if on == cpu else "moved")].append(t - start)
            cur[cpu] = nxt
            if prev in ours and field(tr, "prev_state").startswith("R"):
                waiting[prev] = (t, "preempted", cpu,
                                 "another CPU idle" if others_idle(cpu) else "no CPU idle")
        elif name.startswith("sched_wakeup"):
            pid = int(field(tr, "pid"))
            target = int(field(tr, "target_cpu"))
            if pid in ours and pid not in cur.values():
                waiting[pid] = (t, "woken", target,
                                "onto an idle CPU" if cur.get(target) == 0 else "onto a busy CPU")
    span = events[-1][0] - events[0][0]
    print(f"trace {span:.3f} s on {len(cpus)} CPUs; idle {idle:.3f} CPU-s, "
          f"of it {idle_runnable:.3f} CPU-s ({100 * idle_runnable / idle if idle else 0:.0f} %) "
          f"while a {comm} thread was runnable")
    print(f"{'wait of a ' + comm + ' thread':<52} {'count':>6} {'total ms':>9} {'p50 us':>8} "
          f"{'p90 us':>8} {'max us':>8}")
    for key in sorted(waits):
        v = sorted(waits[key])
        label = f"{key[0]}, {key[1]}, ran on the {key[2]}" if key[2] == "same CPU" else \
            f"{key[0]}, {key[1]}, moved to another CPU"
        print(f"{label:<52} {len(v):>6} {1e3 * sum(v):>9.1f} {1e6 * v[len(v) // 2]:>8.0f} "
              f"{1e6 * v[int(len(v) * 0.9)]:>8.0f} {1e6 * v[-1]:>8.0f}")


if __name__ == "__main__":
    main()
