#!/usr/bin/env python3
"""make_traces.py - sample traces of a known profile for the tests of
`zbsched profile` (tests/data/traces/, docs/profiles.md).

Reads a schedule JSON (zbsched generate -o), re-times its compute order
with the profile's times (each stage's passes of one kind scaled in turn
by a fixed pattern of +-2 % whose median is 1, so the medians are the
profile's) and the simulator's rule, for several
iterations, and writes what a run would have recorded:

  torch  one Chrome trace per rank (rank<R>.json) as torch.profiler
         exports a torch.distributed.pipelining run: PP:<stage><F|I|W|B><mb>
         annotations on the host; with --device kernels, the host
         annotation is short and early (launches) and the kernels it
         launched (cuda_runtime + kernel events sharing "correlation")
         hold the pass's device time; with --device gpu-annotation, a
         gpu_user_annotation slice of the same name does
  zbexec one zbexec --trace file (pid = rank, tid 0, args op/stage/mb/iter)

--drop-mb K leaves microbatch K out of the files (as a trace started
mid-step would); times are microseconds, the profile's in ms.

tests/data/traces was made so, from that folder (Z=zbsched, T=this file):
  $Z generate --profile known4.profile.json --schedule zb-h1 -q -o h1.json
  $Z generate --profile known8.profile.json --schedule interleaved-zb -q \
      -o il.json
  $Z generate --profile known8.profile.json --placement v --schedule zb-v \
      -q -o v.json
  $Z generate --profile known4.profile.json --schedule 1f1b -q -o 1f1b.json
  python3 $T h1.json loop-kernels --device kernels --iters 2 --drop-mb 3
  python3 $T il.json interleaved-gpu --device gpu-annotation --iters 2
  python3 $T v.json v-host --device none --iters 2 --drop-mb 0
  python3 $T 1f1b.json fused --device kernels --iters 1
  python3 $T h1.json zbexec-zb-h1.trace.json --format zbexec --iters 3
"""
import argparse
import json
import os

PATTERN = [1.0, 0.98, 1.02, 0.99, 1.01, 1.0, 1.015, 0.985]


def stage_rank(p, s):
    pp = p["pp"]
    if p.get("placement") == "v" and s >= pp:
        return 2 * pp - 1 - s
    return s % pp


def times(p):
    S = p["pp"] * p.get("vpp", 1)
    base = p["time"]
    st = p.get("stages") or [{}] * S
    return [{k: st[s].get(k, base[k]) for k in ("F", "B", "W")}
            for s in range(S)]


def retime(sched, iters, gap_ms):
    """Per rank: list of (kind, stage, mb, iter, start, end) in ms."""
    p = sched["profile"]
    S = p["pp"] * p.get("vpp", 1)
    t = times(p)
    comm = p["time"].get("comm", 0)
    orders = [[o for o in r["ops"] if o["op"] in ("F", "B", "W", "BW")]
              for r in sched["ranks"]]
    out = [[] for _ in orders]
    k = {}      # per (stage, kind): each cycles through the whole pattern
    t0 = 0.0
    for it in range(iters):
        end = {}
        free = [t0] * len(orders)
        pos = [0] * len(orders)
        left = sum(len(o) for o in orders)
        while left:
            moved = False
            for r, order in enumerate(orders):
                while pos[r] < len(order):
                    o = order[pos[r]]
                    s, mb, kind = o["stage"], o["mb"], o["op"]
                    deps = []
                    if kind == "F" and s > 0:
                        deps.append(("F", s - 1))
                    if kind in ("B", "BW"):
                        deps.append(("F", s))
                        if s + 1 < S:
                            deps.append(("B", s + 1))
                    if kind == "W":
                        deps.append(("B", s))
                    ready = free[r]
                    ok = True
                    for dk, ds in deps:
                        e = end.get((dk, ds, mb))
                        if e is None:
                            ok = False
                            break
                        if stage_rank(p, ds) != r:
                            e += comm
                        ready = max(ready, e)
                    if not ok:
                        break
                    n = k.get((s, kind), 0)
                    k[(s, kind)] = n + 1
                    f = PATTERN[n % len(PATTERN)]
                    dur = (t[s]["B"] + t[s]["W"] if kind == "BW"
                           else t[s][kind]) * f
                    end[("F" if kind == "F" else "B" if kind != "W" else "W",
                         s, mb)] = ready + dur
                    out[r].append((kind, s, mb, it, ready, ready + dur))
                    free[r] = ready + dur
                    pos[r] += 1
                    left -= 1
                    moved = True
            if not moved:
                raise SystemExit("make_traces: the order deadlocks")
        t0 = max(free) + gap_ms
    return out


PT_NAME = {"F": "F", "B": "I", "W": "W", "BW": "B"}


def torch_files(passes, device, drop, outdir):
    corr = 1000
    for r, lst in enumerate(passes):
        ev = []
        for kind, s, mb, it, a, b in lst:
            if mb in drop:
                continue
            name = "PP:%d%s%d" % (s, PT_NAME[kind], mb)
            us0, us1 = a * 1e3, b * 1e3
            if device == "none":
                ev.append({"ph": "X", "cat": "user_annotation", "name": name,
                           "pid": 100 + r, "tid": 7, "ts": round(us0, 3),
                           "dur": round(us1 - us0, 3)})
                continue
            # The host runs ahead of the device: it launches early and
            # briefly; the annotation's host time is not the pass's.
            h0 = us0 - 40
            hdur = 0.3 * (us1 - us0)
            ev.append({"ph": "X", "cat": "user_annotation", "name": name,
                       "pid": 100 + r, "tid": 7, "ts": round(h0, 3),
                       "dur": round(hdur, 3)})
            if device == "gpu-annotation":
                ev.append({"ph": "X", "cat": "gpu_user_annotation",
                           "name": name, "pid": 0, "tid": 7,
                           "ts": round(us0, 3), "dur": round(us1 - us0, 3)})
                continue
            n = 3
            step = (us1 - us0) / n
            for j in range(n):
                corr += 1
                ev.append({"ph": "X", "cat": "cuda_runtime",
                           "name": "cudaLaunchKernel", "pid": 100 + r,
                           "tid": 7, "ts": round(h0 + (j + 1) * hdur / 5, 3),
                           "dur": 2, "args": {"correlation": corr}})
                ev.append({"ph": "X", "cat": "kernel",
                           "name": "sm90_xmma_gemm_%d" % j, "pid": 0,
                           "tid": 7, "ts": round(us0 + j * step, 3),
                           "dur": round(step - (0.5 if j < n - 1 else 0), 3),
                           "args": {"correlation": corr, "stream": 7}})
                ev.append({"ph": "s", "id": corr, "pid": 100 + r, "tid": 7,
                           "ts": round(h0 + (j + 1) * hdur / 5, 3),
                           "cat": "ac2g", "name": "ac2g"})
                ev.append({"ph": "f", "id": corr, "pid": 0, "tid": 7,
                           "ts": round(us0 + j * step, 3), "cat": "ac2g",
                           "name": "ac2g", "bp": "e"})
            if kind == "F":
                # A NCCL kernel launched under a compute annotation waits
                # for a peer: not the pass's time.
                corr += 1
                ev.append({"ph": "X", "cat": "cuda_runtime",
                           "name": "cudaLaunchKernel", "pid": 100 + r,
                           "tid": 7, "ts": round(h0 + hdur * 0.9, 3),
                           "dur": 2, "args": {"correlation": corr}})
                ev.append({"ph": "X", "cat": "kernel",
                           "name": "ncclDevKernel_SendRecv", "pid": 0,
                           "tid": 20, "ts": round(us0, 3),
                           "dur": round(3 * (us1 - us0), 3),
                           "args": {"correlation": corr, "stream": 20}})
        doc = {"schemaVersion": 1,
               "distributedInfo": {"backend": "nccl", "rank": r,
                                   "world_size": len(passes)},
               "traceEvents": ev}
        with open(os.path.join(outdir, "rank%d.json" % r), "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")


def zbexec_file(passes, drop, path):
    ev = []
    for r, lst in enumerate(passes):
        for i, (kind, s, mb, it, a, b) in enumerate(lst):
            if mb in drop:
                continue
            ev.append({"ph": "X", "name": "%s s%d mb%d" % (kind, s, mb),
                       "cat": "compute", "pid": r, "tid": 0,
                       "ts": round(a * 1e3), "dur": round((b - a) * 1e3),
                       "args": {"op": kind, "stage": s, "mb": mb,
                                "chunk": 0, "iter": it, "index": i}})
    with open(path, "w") as f:
        json.dump({"displayTimeUnit": "ms", "traceEvents": ev}, f,
                  separators=(",", ":"))
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("schedule")
    ap.add_argument("out", help="a directory (torch) or a file (zbexec)")
    ap.add_argument("--format", choices=["torch", "zbexec"], default="torch")
    ap.add_argument("--device", choices=["kernels", "gpu-annotation", "none"],
                    default="kernels")
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--drop-mb", type=int, action="append", default=[])
    a = ap.parse_args()
    with open(a.schedule) as f:
        sched = json.load(f)
    passes = retime(sched, a.iters, 5.0)
    if a.format == "torch":
        os.makedirs(a.out, exist_ok=True)
        torch_files(passes, a.device, set(a.drop_mb), a.out)
    else:
        zbexec_file(passes, set(a.drop_mb), a.out)


if __name__ == "__main__":
    main()
