#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Memory per rank: what a job of N ranks on this machine costs per rank, for a Portals, a GASNet,
a UPC and a PSM2 program (bench/memory/memory_*.c), next to a C program that does nothing
(memory_baseline.c) started by the same launcher in the same run.

  memory_per_rank.py BIN_DIR [--run PORTICO_RUN] [--procs 64,256,1024]
                     [--programs baseline,portals,gasnet,upc,psm2] [--env NAME=VALUE]...
                     [--timeout S] [--rounds R] [--reserve-mib M] [--full-speed]

BIN_DIR holds the built programs (the build's bench/ directory); --run defaults to
BIN_DIR/../../tools/portico-run/portico-run. Each program runs its traffic (every rank talks to every
other rank once, and exchanges a stream of 16 KiB messages with its two neighbours), then reaches
its checkpoint, where it holds its steady-state resources: it writes its pid and stops itself.
Once every rank has stopped, the script reads each rank's /proc/<pid>/smaps_rollup and status,
then lets them finish. One JSON object per line on stdout:

  {"bench":"memory_per_rank","program":"gasnet","procs":256,"round":1,
   "pss_per_rank_mib":..,    sum of the ranks' PSS / N: what the machine pays in pages, shared
                             pages (a shared-memory link's rings, a library's text) split between
                             the processes that map them
   "pss_anon_per_rank_mib":.., "pss_shmem_per_rank_mib":.., "pss_file_per_rank_mib":..,
                             the same split by kind (heap and stacks; memfd rings and segments;
                             files, i.e. the libraries)
   "rss_mean_mib":.., "rss_max_mib":..,   resident set (shared pages counted in full)
   "hwm_max_mib":..,         the largest peak resident set of a rank (VmHWM)
   "pte_per_rank_kib":..,    page tables (VmPTE), kernel memory the ranks' mappings cost
   "kernel_per_rank_mib":.., growth of the kernel's unreclaimable slab (sockets, files), kernel
                             stacks and page tables from before the job to the checkpoint, / N
   "machine_per_rank_mib":.., MemAvailable before the job minus at the checkpoint, / N: everything
                             the job holds, kernel objects (sockets) included; noisy when other
                             work runs on the machine
   "baseline_pss_per_rank_mib":.., the baseline program's pss_per_rank_mib at the same N
   "seconds":..}             wall time of the job

Jobs run at nice 19 in a scheduling group of their own (a 1024-rank job would otherwise take a
shared machine's cores from everything else; memory figures do not depend on speed), with
PORTICO_PMI_TIMEOUT_S=0 unless set (a starved rank may wait long for a barrier); --full-speed
runs them as usual. A job that would leave the machine less than --reserve-mib of MemAvailable is
ended and reported as not fitting ({"error": "does not fit: ..."}).

Exit status 0 if every job ran to its end, 1 otherwise.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

PROGRAMS = {
    "baseline": "memory_baseline",
    "portals": "memory_portals",
    "gasnet": "memory_gasnet",
    "upc": "memory_upc",
    "psm2": "memory_psm2",
}


def kib_fields(path, names):
    out = {}
    with open(path) as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in names:
                out[key] = int(rest.split()[0])
    return out


def mem_available_kib():
    return kib_fields("/proc/meminfo", {"MemAvailable"})["MemAvailable"]


def kernel_kib():
    # Kernel memory a job's processes make the kernel hold: unreclaimable slab (sockets, files),
    # kernel stacks, page tables.
    f = kib_fields("/proc/meminfo", {"SUnreclaim", "KernelStack", "PageTables"})
    return f["SUnreclaim"] + f["KernelStack"] + f["PageTables"]


def stopped(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def yield_cpus():
    # A job of 1024 ranks on a machine of 2 cores must not take them from everything else: in a
    # session of its own, the job is one scheduling group (autogroup), and at nice 19 that group
    # runs when nothing else wants the CPUs. Memory figures do not depend on speed.
    os.setsid()
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
    except OSError:
        os.nice(19)


def run_one(args, program, n, round_no, baseline):
    exe = os.path.join(args.bin_dir, PROGRAMS[program])
    with tempfile.TemporaryDirectory(prefix="membench.") as tmp:
        ready = os.path.join(tmp, "ready")
        open(ready, "w").close()
        env = dict(os.environ)
        env["MEMBENCH_READY"] = ready
        # A starved rank may wait long for the launcher's barrier; the job's --timeout bounds it.
        env.setdefault("PORTICO_PMI_TIMEOUT_S", "0")
        for kv in args.env:
            k, _, v = kv.partition("=")
            env[k] = v
        before = mem_available_kib()
        kernel_before = kernel_kib()
        t0 = time.monotonic()
        log = open(os.path.join(tmp, "log"), "w+")
        job = subprocess.Popen([args.run, "-n", str(n), "--timeout", str(args.timeout), exe], env=env,
                               stdout=log, stderr=subprocess.STDOUT, preexec_fn=None if args.full_speed else yield_cpus)
        pids = []
        while True:
            with open(ready) as f:
                pids = [int(x) for x in f.read().split()]
            if len(pids) >= n and all(stopped(p) for p in pids):
                break
            if job.poll() is not None:
                break
            available = mem_available_kib()
            if available < args.reserve_mib * 1024:
                # The job does not fit: end it before the machine runs out (the launcher ends the
                # ranks when it is killed).
                job.send_signal(signal.SIGTERM)
                job.wait()
                print(json.dumps({"bench": "memory_per_rank", "program": program, "procs": n, "round": round_no,
                                  "error": f"does not fit: ended when {available // 1024} MiB were left available, "
                                           f"{len(pids)} of {n} ranks at the checkpoint",
                                  "used_mib_when_ended": round((before - available) / 1024.0)}), flush=True)
                return None
            time.sleep(0.05)
        record = None
        if len(pids) >= n and job.poll() is None:
            totals = {"Rss": 0, "Pss": 0, "Pss_Anon": 0, "Pss_File": 0, "Pss_Shmem": 0}
            rss, hwm, pte = [], [], 0
            for p in pids:
                f = kib_fields(f"/proc/{p}/smaps_rollup", set(totals))
                for k in totals:
                    totals[k] += f.get(k, 0)
                rss.append(f["Rss"])
                s = kib_fields(f"/proc/{p}/status", {"VmHWM", "VmPTE"})
                hwm.append(s["VmHWM"])
                pte += s["VmPTE"]
            after = mem_available_kib()
            kernel_after = kernel_kib()
            mib = 1024.0 * n
            record = {
                "bench": "memory_per_rank", "program": program, "procs": n, "round": round_no,
                "pss_per_rank_mib": round(totals["Pss"] / mib, 2),
                "pss_anon_per_rank_mib": round(totals["Pss_Anon"] / mib, 2),
                "pss_shmem_per_rank_mib": round(totals["Pss_Shmem"] / mib, 2),
                "pss_file_per_rank_mib": round(totals["Pss_File"] / mib, 2),
                "rss_mean_mib": round(sum(rss) / mib, 2),
                "rss_max_mib": round(max(rss) / 1024.0, 2),
                "hwm_max_mib": round(max(hwm) / 1024.0, 2),
                "pte_per_rank_kib": round(pte / n, 1),
                "kernel_per_rank_mib": round((kernel_after - kernel_before) / mib, 2),
                "machine_per_rank_mib": round((before - after) / mib, 2),
            }
            if baseline is not None:
                record["baseline_pss_per_rank_mib"] = baseline
            for p in pids:
                try:
                    os.kill(p, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        rc = job.wait()
        if record is not None:
            record["seconds"] = round(time.monotonic() - t0, 1)
        if rc != 0 or record is None:
            log.seek(0)
            tail = log.read()[-4000:]
            print(json.dumps({"bench": "memory_per_rank", "program": program, "procs": n, "round": round_no,
                              "error": f"exit status {rc}, {len(pids)} of {n} ranks reached the checkpoint"}),
                  flush=True)
            sys.stderr.write(tail)
            return None
        print(json.dumps(record), flush=True)
        return record


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bin_dir")
    ap.add_argument("--run")
    ap.add_argument("--procs", default="64,256,1024")
    ap.add_argument("--programs", default="baseline,portals,gasnet,upc,psm2")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--timeout", type=int, default=1200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--full-speed", action="store_true",
                    help="run the jobs at normal priority (default: nice 19 in a scheduling group of their own)")
    ap.add_argument("--reserve-mib", type=int, default=3072,
                    help="end a job whose machine has less than this much MemAvailable left (default 3072)")
    args = ap.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    if not args.run:
        args.run = os.path.join(args.bin_dir, "..", "..", "tools", "portico-run", "portico-run")
    programs = [p for p in args.programs.split(",") if p]
    for p in programs:
        if p not in PROGRAMS:
            ap.error(f"unknown program {p} (known: {', '.join(PROGRAMS)})")
    ok = True
    for r in range(1, args.rounds + 1):
        for n in (int(x) for x in args.procs.split(",")):
            baseline = None
            for p in programs:
                rec = run_one(args, p, n, r, baseline if p != "baseline" else None)
                if rec is None:
                    ok = False
                elif p == "baseline":
                    baseline = rec["pss_per_rank_mib"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
