#!/usr/bin/env python3
"""disk_full_live.py — a disk that fills while the pipeline runs (issue 34
item 3; docs/DAMAGE.md, "A full disk"). disk_full.py starts each command
on an almost full mount; here the mount fills under a long-running
`freshet process` (not --once) that consumes a live log.

The lake (catalog.db and the warehouse), the checkpoint directory
(checkpoint, offsets WAL) and the log each live on a tmpfs mounted for
this test (root only; skipped with exit 77 otherwise; unmounted at exit).
`freshet feed` serves an endless synthetic stream (duplicates, late and
malformed events among it) and `freshet ingest` writes it to the log for
the whole test, so the processor always has records to commit. Then:

  1. commits: once the running processor has committed a few epochs, a
     filler takes all but LEAVE bytes of one mount: the lake's with 0, 64
     KiB and 256 KiB left (the wall lands at a different step of the
     epoch: its data files, its metadata, the catalog), then the
     checkpoint's with 0 (the commit goes through, the checkpoint does
     not). The processor must exit 1 (it is crash-only: docs/DAMAGE.md)
     with an error line that says the disk is full and names the path it
     could not write; started again on the still full disk (as `freshet
     up`'s supervisor or systemd would) it must exit 1 the same way, not
     crash, hang or spin. Then the filler is removed: every Parquet file
     the catalog references ends in its footer, every metadata file it
     references parses, no temporary file is left on either mount,
     `freshet verify` passes, and a new processor carries on.
  2. compaction: the processor is stopped (SIGTERM) after epoch E and
     started again with process.maintain_every_epochs = E+2 (a round right
     after its first epoch) and the largest process.compact_target_bytes
     (the round merges all of bronze), with a filler leaving a third of
     bronze's bytes free: room for that epoch, not for the merged bronze
     file. The epoch must commit, the round must warn that compacting
     bronze stopped on the full disk and go on (the table keeps its
     files), a later epoch must stop the processor (exit 1, path named),
     and the lake must be whole as in 1.
  3. the log: with a processor running, the log's mount fills under
     ingest. Ingest must exit 1 naming the log's partition directory
     (ingest is crash-only too), the processor must catch up with the
     durable records and wait, not exit; ingest restarted on the full disk
     exits 1 the same way; once space is freed ingest resumes from the
     last durable record and the log grows on.
  4. recovery: space freed, the processor (a round every 4 epochs) runs
     until a round compacts files with no warning; ingest and the feed
     stop, the processor drains the log and stops on SIGTERM (exit 0).
     `freshet verify` passes with the lake's consumed offsets at the log's
     end: every log record is in bronze or the dlq exactly once, nothing
     acknowledged was lost.

Every wait has a timeout; no figure is a timing. KEEP=1 keeps the work
directory. FR_BINARY: the freshet binary.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fr_testlib import exit_on_failures, remove_work, start_listening, stop  # noqa: E402

BIN = os.environ.get("FR_BINARY") or sys.exit("FR_BINARY must point at the freshet binary")
MOUNT_BYTES = 40 << 20     # the lake's tmpfs (catalog.db and the warehouse)
CK_MOUNT_BYTES = 8 << 20   # the checkpoint directory's (checkpoint, offsets WAL)
LOG_MOUNT_BYTES = 128 << 20  # the log's
WAIT_S = 120
RATE = 300
# (mount, bytes left free): the lake's fills the wall at a different step of
# the epoch each time (its files, its commit); the checkpoint's lets the
# commit through and stops the checkpoint, so the restart finds the epoch
# in the lake ahead of its checkpoint.
CYCLES = [("lake", 0), ("lake", 65536), ("lake", 262144), ("checkpoint", 0)]
ROUND_BRONZE_MIN = 3 << 20  # bronze bytes before the compaction phase
FULL = r"[Nn]o space left|FR_ENOSPC|disk is full|SQLITE_FULL|database or disk is full"
SANITIZER = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|SUMMARY: UndefinedBehavior")
EPOCH = re.compile(r"process: info: epoch (\d+): \d+ records")

failures = []
CK_DIR = None  # the checkpoint directory (main)
PROCS = []  # every processor started, killed at exit if still running


class Fatal(Exception):
    """A check failed in a way the rest of the run cannot go on from."""


def fail(msg, fatal=False):
    failures.append(msg)
    print(f"FAIL {msg}")
    if fatal:
        raise Fatal(msg)


def wait_for(pred, what, timeout=WAIT_S, every=0.1):
    """Poll pred until it returns a true value; Fatal after timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            fail(f"timed out after {timeout} s waiting for {what}", fatal=True)
        time.sleep(every)


def freshet(data, conf, args, timeout=WAIT_S):
    """Run freshet to completion (bounded). Returns (exit code, output)."""
    try:
        p = subprocess.run([BIN, "--data", data] + conf + args, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"freshet {' '.join(args)} hung (killed after {timeout} s)", fatal=True)
    return p.returncode, p.stdout + p.stderr


class Filler:
    """Files that take all but `leave` bytes of the mount; freed by free()."""

    def __init__(self, mount, leave):
        self.paths = []
        for i in range(64):  # the processor writes meanwhile: top up until it holds
            st = os.statvfs(mount)
            free = st.f_bavail * st.f_frsize
            if free <= leave + 4096:
                return
            path = os.path.join(mount, f"filler.{i}")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.posix_fallocate(fd, 0, free - leave)
            except OSError:  # someone took space since statvfs: smaller next time
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)
            self.paths.append(path)
        fail(f"could not fill {mount} to {leave} bytes free", fatal=True)

    def free(self):
        for p in self.paths:
            os.unlink(p)
        self.paths = []


class Ingest:
    """One `freshet ingest` run against the feed, its stderr in its own file."""
    count = 0

    def __init__(self, work, data, url):
        Ingest.count += 1
        self.logf = os.path.join(work, f"ingest-{Ingest.count}.log")
        with open(self.logf, "w") as lf:
            self.p = subprocess.Popen([BIN, "--data", data, "--set", "ingest.backoff_min_ms=50",
                                       "--set", "ingest.backoff_max_ms=300", "ingest", "--source", url],
                                      stderr=lf)
        PROCS.append(self.p)

    def text(self):
        with open(self.logf, errors="replace") as f:
            return f.read()

    def wait_exit(self, what):
        try:
            return self.p.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            fail(f"{what}: ingest did not stop within {WAIT_S} s\n" + tail(self.text()), fatal=True)


class Processor:
    """One `freshet process` run, its stderr in its own file."""
    count = 0

    def __init__(self, work, data, conf, extra):
        Processor.count += 1
        self.n = Processor.count
        self.logf = os.path.join(work, f"process-{self.n}.log")
        with open(self.logf, "w") as lf:
            self.p = subprocess.Popen([BIN, "--data", data] + conf + extra + ["process"], stderr=lf)
        PROCS.append(self.p)

    def text(self):
        with open(self.logf, errors="replace") as f:
            return f.read()

    def epochs(self):
        """The epochs this run committed or replayed, in order."""
        return [int(m.group(1)) for m in EPOCH.finditer(self.text())]

    def wait_exit(self, what):
        try:
            return self.p.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            fail(f"{what}: the processor did not stop within {WAIT_S} s (a hang or a busy wait "
                 f"on the full disk)\n" + tail(self.text()), fatal=True)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        return self.wait_exit("SIGTERM")


def tail(text, n=8):
    return "\n".join("     | " + line for line in text.splitlines()[-n:])


def full_error(text, paths, levels=(" error: ",)):
    """The line that says the disk is full and names a path on the mount
    (paths: the mount, or the data directory's symlink to it)."""
    paths = (paths,) if isinstance(paths, str) else paths
    for line in text.splitlines():
        if re.search(FULL, line) and any(lv in line for lv in levels) and any(p in line for p in paths):
            return re.sub(r"^\S+Z freshet\[\d+\] ", "", line)
    return None


def check_stopped_on_full(proc, rc, mount, label, levels=(" error: ",)):
    text = proc.text()
    problems = []
    if rc != 1:
        problems.append(f"exit {rc}, want 1" + (" (a signal)" if rc < 0 else ""))
    said = full_error(text, mount, levels)
    if said is None:
        problems.append("no error line that says the disk is full and names the path on the mount")
    if SANITIZER.search(text):
        problems.append("sanitizer report")
    if problems:
        fail(f"{label}: {'; '.join(problems)}\n{tail(text)}")
    else:
        print(f"ok   {label}: exit 1  {said[:220]}")
    return said


def referenced(data, conf):
    rc, out = freshet(data, conf, ["tables", "--json", "--files"])
    if rc != 0:
        return None, out.strip()[-300:]
    files, metas = [], []
    for tab in json.loads(out[out.index("{"):])["tables"]:
        for f in tab.get("data_files") or []:
            files.append(f.get("local_path") or f["path"].replace("file://", ""))
        if tab.get("metadata_file"):
            metas.append(tab["metadata_file"].replace("file://", ""))
    return files, metas


def lake_whole(data, conf, label):
    """No referenced file is half-written, and verify passes."""
    files, metas = referenced(data, conf)
    if files is None:
        fail(f"{label}: `freshet tables` fails: {metas}")
        return
    bad = []
    for f in files:
        with open(f, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 4))
            if size < 12 or fh.read(4) != b"PAR1":
                bad.append(f)
    for m in metas:
        try:
            with open(m) as fh:
                json.load(fh)
        except ValueError:
            bad.append(m)
    if not files or not metas:
        bad.append("(no data file or no metadata file referenced at all)")
    # A write that failed cleans up after itself: no temporary file is left
    # to hold space on the full disk (only a crash may leave one).
    for top in (os.path.join(data, "lake"), CK_DIR):
        for root, _, names in os.walk(top):
            bad += [os.path.join(root, n) for n in names if ".tmp" in n]
    rc, out = freshet(data, conf, ["verify"])
    if bad:
        fail(f"{label}: half-written or temporary files: {bad[:3]}")
    if rc != 0:
        fail(f"{label}: freshet verify exit {rc}\n{tail(out, 12)}")
    if not bad and rc == 0:
        print(f"ok   {label}: {len(files)} referenced data files and {len(metas)} metadata files "
              f"whole; verify passes")


def log_end(data):
    rc, out = freshet(data, [], ["log", "list", "--json"])
    if rc != 0:
        return -1
    return sum(p["end_offset"] for p in json.loads(out[out.index("["):]))


def status(data):
    rc, out = freshet(data, [], ["status", "--json"])
    return json.loads(out[out.index("{"):]) if rc == 0 else None


def table_bytes(data, name):
    st = status(data)
    for t in (st or {}).get("tables", []):
        if t["name"] == name:
            return t["bytes"]
    return 0


def new_epochs(proc, n):
    return len(proc.epochs()) >= n or proc.p.poll() is not None


def commit_phase(work, d, mounts, conf):
    """Fill a mount under a running processor, CYCLES times; each stops it
    cleanly."""
    stops = 0
    proc = Processor(work, d, conf, [])
    for which, leave in CYCLES:
        mount = mounts[which]
        label = f"{which} mount filled to {leave} B free"
        wait_for(lambda: new_epochs(proc, 3), f"{label}: the processor's first epochs")
        if proc.p.poll() is not None:
            fail(f"{label}: the processor exited {proc.p.returncode} before the fill\n"
                 + tail(proc.text()), fatal=True)
        first = proc.epochs()[-1]
        filler = Filler(mount, leave)
        rc = proc.wait_exit(label)
        check_stopped_on_full(proc, rc, mount, f"{label}: after epoch {first}, stopped at epoch "
                              f"{(proc.epochs() or [first])[-1] + 1}")
        stops += rc == 1
        # A supervisor restarts it; the disk is still full.
        again = Processor(work, d, conf, [])
        rc = again.wait_exit(label + ", restarted while full")
        check_stopped_on_full(again, rc, mount, label + ", restarted while full")
        filler.free()
        lake_whole(d, conf, label + ", space freed")
        proc = Processor(work, d, conf, [])
    return proc, stops


def compaction_phase(work, d, mount, conf, proc):
    """A maintenance round right after one epoch, on a lake mount with room
    for the epoch but not for the round's merged bronze file."""
    label = "compaction round"
    wait_for(lambda: table_bytes(d, "bronze_recentchange") >= ROUND_BRONZE_MIN or proc.p.poll() is not None,
             f"{label}: bronze to reach {ROUND_BRONZE_MIN} bytes", timeout=300, every=1)
    rc = proc.stop()
    if rc != 0:
        fail(f"{label}: the processor stopped on SIGTERM with exit {rc}\n" + tail(proc.text()), fatal=True)
    last = proc.epochs()[-1]
    bronze = table_bytes(d, "bronze_recentchange")
    leave = bronze // 3  # room for the epoch's files, not for a merged bronze file
    every = last + 2  # (epoch + 1) % every == 0 right after epoch last + 1
    filler = Filler(mount, leave)
    # Every bronze file under 1/64 of the target is packed at each round
    # (ADR 0020): with the largest target the round merges all of bronze.
    proc = Processor(work, d, conf, ["--set", f"process.maintain_every_epochs={every}",
                                     "--set", "process.compact_target_bytes=4294967296"])
    rc = proc.wait_exit(label)
    text = proc.text()
    epochs = proc.epochs()
    warned = [line for line in text.splitlines()
              if re.search(r"warn: compacting \S+: ", line) and re.search(FULL, line)]
    if not epochs or epochs[0] != last + 1:
        fail(f"{label}: epoch {last + 1} (with {leave} B free) did not commit before the round "
             f"({epochs[:3]})\n" + tail(text))
    elif not warned:
        fail(f"{label}: the round after epoch {last + 1} did not stop on the full disk "
             f"(bronze {bronze} B, {leave} B free)\n" + tail(text))
    else:
        said = re.sub(r"^\S+Z freshet\[\d+\] ", "", warned[0])
        print(f"ok   {label}: bronze {bronze} B, {leave} B left free: epoch "
              f"{last + 1} committed, then the round warned and went on: {said[:200]}")
    check_stopped_on_full(proc, rc, mount, f"{label}: the next epoch")
    filler.free()
    lake_whole(d, conf, label + ", space freed")
    return rc == 1 and bool(warned)


def ingest_phase(work, d, mount, conf, ing, url):
    """The log's disk fills under ingest while a processor runs: ingest
    stops (exit 1, the log's path named), the processor waits for records;
    once space is freed ingest resumes from its last durable record."""
    label = "log mount filled to 0 B free"
    proc = Processor(work, d, conf, ["--set", "process.maintain_every_epochs=4"])
    wait_for(lambda: new_epochs(proc, 2), f"{label}: the processor's first epochs")
    filler = Filler(mount, 0)
    rc = ing.wait_exit(label)
    # The log layer names the partition whose flush failed (a warning),
    # then ingest stops with an error.
    named = (mount, os.path.join(d, "log"))  # d/log is the symlink to the mount
    check_stopped_on_full(ing, rc, named, f"{label}: ingest", levels=(" error: ", " warn: "))
    stops = rc == 1
    durable = log_end(d)
    if durable <= 0:
        fail(f"{label}: the log does not read after the wall (end {durable})")

    def waiting():
        st = status(d)
        return proc.p.poll() is not None or (st and st["offsets_behind"] == 0)
    wait_for(waiting, f"{label}: the processor to catch up with the log", every=1)
    if proc.p.poll() is not None:
        fail(f"{label}: the processor exited {proc.p.returncode} while the log was full\n"
             + tail(proc.text()))
    else:
        print(f"ok   {label}: the processor caught up with the {durable} durable records and waits")
    again = Ingest(work, d, url)
    rc = again.wait_exit(label + ", ingest restarted while full")
    check_stopped_on_full(again, rc, named, label + ", ingest restarted while full",
                          levels=(" error: ", " warn: "))
    filler.free()
    ing = Ingest(work, d, url)
    wait_for(lambda: log_end(d) > durable + 3 * RATE or ing.p.poll() is not None,
             f"{label}: ingest to resume", every=1)
    if ing.p.poll() is not None or "resuming after" not in ing.text():
        fail(f"{label}: ingest did not resume from the log's last record\n" + tail(ing.text()))
    else:
        print(f"ok   {label}: space freed: ingest resumed from the last durable record "
              f"(log end {durable} -> {log_end(d)})")
    return proc, ing, stops


def recovery_phase(work, d, conf, proc, ing, feed):
    """Space freed: a round compacts again; the log drains; verify."""
    rounds = re.compile(r"maintenance: (\d+) files")
    wait_for(lambda: any(int(m.group(1)) > 0 for m in rounds.finditer(proc.text()))
             or proc.p.poll() is not None, "a maintenance round that compacts files")
    text = proc.text()
    if proc.p.poll() is not None or re.search(r"warn: (compacting|expiring)", text):
        fail("recovery: the processor failed or a round warned after space was freed\n" + tail(text))
    else:
        print("ok   recovery: a maintenance round compacted files again")
    stop(ing)
    if ing.returncode != 0:
        fail(f"ingest stopped with exit {ing.returncode}")
    stop(feed)
    end = log_end(d)

    def drained():
        if proc.p.poll() is not None:
            return True
        st = status(d)
        if not st or st["offsets_behind"] != 0:
            return False
        rc, out = freshet(d, conf, ["verify", "--json"])
        return rc == 0 and json.loads(out[out.index("{"):])["cut"]["consumed"] >= end
    wait_for(drained, "the processor to drain the log", timeout=300, every=2)
    rc = proc.stop()
    if rc != 0:
        fail(f"recovery: the processor exited {rc}\n" + tail(proc.text()))
    rc, out = freshet(d, conf, ["verify", "--json"])
    try:
        v = json.loads(out[out.index("{"):])
    except ValueError:
        v = {}
    consumed = (v.get("cut") or {}).get("consumed")
    if rc != 0 or not v.get("ok") or consumed != end:
        bad = [c["name"] for c in v.get("checks", []) if c.get("status") == "FAIL"]
        fail(f"recovery: verify exit {rc}, failed checks {bad}, consumed {consumed} of the log's {end}")
    else:
        rows = {t["name"]: t["rows"] for t in v["cut"]["tables"]}
        print(f"ok   recovery: drained; verify passes; consumed {consumed} = the log's end; "
              f"bronze {rows.get('bronze_recentchange')} + dlq {rows.get('dlq')} rows")
    lake_whole(d, conf, "at the end")


def main():
    if os.geteuid() != 0:
        print("skip: mounting a tmpfs needs root")
        sys.exit(77)
    work = tempfile.mkdtemp(prefix="fr-diskfull-live.")
    mounts = {"lake": os.path.join(work, "lake-mnt"), "checkpoint": os.path.join(work, "ck-mnt"),
              "log": os.path.join(work, "log-mnt")}
    for which, size in (("lake", MOUNT_BYTES), ("checkpoint", CK_MOUNT_BYTES), ("log", LOG_MOUNT_BYTES)):
        os.mkdir(mounts[which])
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mounts[which]],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"skip: cannot mount a tmpfs here: {r.stderr.strip()}")
            for m in mounts.values():
                subprocess.run(["umount", "-l", m], capture_output=True)
            remove_work(work)
            sys.exit(77)
    mount = mounts["lake"]
    global CK_DIR
    CK_DIR = os.path.join(mounts["checkpoint"], "process")
    d = os.path.join(work, "d")
    os.makedirs(d)
    os.makedirs(os.path.join(mount, "lake"))
    os.symlink(os.path.join(mount, "lake"), os.path.join(d, "lake"))
    os.makedirs(os.path.join(mounts["log"], "log"))
    os.symlink(os.path.join(mounts["log"], "log"), os.path.join(d, "log"))
    # Rounds every 8 epochs that expire all but the last 3 snapshots keep
    # the lake's own growth (metadata files, small files) well inside the
    # mount; only the fillers fill it. A short lateness keeps the
    # checkpoint (the dedup keys) small next to bronze.
    conf = ["--set", f"process.checkpoint_dir={CK_DIR}", "--set", "process.trigger_ms=200",
            "--set", "process.epoch_max_records=300", "--set", "process.maintain_every_epochs=8",
            "--set", "maintenance.expire_after_s=0", "--set", "maintenance.retain_last=3",
            "--set", "process.lateness_s=10"]
    feed = ing = None
    stops = 0
    try:
        start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 300))
        feed, url = start_listening([BIN, "feed", "--listen", "127.0.0.1:0", "--synthetic", "--seed", "17",
                                     "--rate", str(RATE), "--event-rate", str(RATE), "--start", start,
                                     "--dup-rate", "0.02", "--late-rate", "0.005", "--late-ms", "200000",
                                     "--malformed-rate", "0.01", "--malformed-kinds",
                                     "truncated,missing_wiki,type_invalid"],
                                    "feed", stderr=subprocess.DEVNULL)
        ing = Ingest(work, d, url)
        proc, n = commit_phase(work, d, mounts, conf)
        stops += n
        stops += compaction_phase(work, d, mount, conf, proc)
        proc, ing, n = ingest_phase(work, d, mounts["log"], conf, ing, url)
        stops += n
        recovery_phase(work, d, conf, proc, ing.p, feed)
        ing = feed = None
    except Fatal:
        pass
    finally:
        for p in [feed]:
            if p is not None and p.poll() is None:
                stop(p)
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
        for m in mounts.values():
            subprocess.run(["umount", "-l", m])
        remove_work(work)
    exit_on_failures(failures, "live disk-full checks")
    print(f"disk filled under a running pipeline: {stops} stops on it, each resumed; verify passes")


if __name__ == "__main__":
    main()
