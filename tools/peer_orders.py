#!/usr/bin/env python3
"""peer_orders.py - the peers' compute orders as PyTorch pipelining CSV
(one row per rank, actions "<stage><F|I|W|B><mb>"), derived by reading
their source, for tests/data/peers/ and the comparison in
docs/controllable-memory.md:

  v-half, v-min   the Zero Bubble repository's V-Half/V-Min scheduler
                  (zbv_greedy): the building block, two rounds of moving
                  passes into earlier free slots within the block's peak
                  and re-timing at unit times, W split per chunk;
  dualpipev       PyTorch's ScheduleDualPipeV (its overlap of an F and a
                  whole backward written as the two, one after the other,
                  as zbsched's CSV reader reads it);
  interleaved-zb  PyTorch's ScheduleInterleavedZeroBubble (loop placement,
                  VPP chunks per rank; m a multiple of its rounds);
  zbv             PyTorch's ScheduleZBVZeroBubble, read in
                  torch/distributed/pipelining/schedules.py
                  (_calculate_single_rank_operations; pytorch/pytorch at
                  1fd7abc2, the same in the later versions read): V
                  placement, any m (built for at least 2p-1 microbatches,
                  the passes of those beyond m dropped); its idle steps
                  are left out, as the order alone is what we time.

The orders depend on p and m (and vpp) only.
Usage: peer_orders.py NAME P M [VPP]
"""
import sys

F0, F1, B1, B0, W, W0 = range(6)


def block(p, half):
    """Offsets of F0, F1, B1, B0 on every rank (the paper's blocks)."""
    out = []
    for i in range(p):
        if half:
            d = 3 if p % 2 == 0 else 0
            out.append([2 * i, 3 * p - 2 - i, 3 * p + d - 1 + 2 * i,
                        6 * p + d - 2 - i])
        else:
            d = 2 if p % 3 == 0 else 0
            out.append([i, 2 * p - 1 - i, 2 * p + d + i, 4 * p + d - 1 - i])
    return out


def events(rank):
    """(slot, kind, index) of a rank's passes, in slot order."""
    return sorted((t, k, j) for k, ts in enumerate(rank)
                  for j, t in enumerate(ts))


def put_w(rank, split):
    """W passes into free slots in the order of their B (split: one kind
    per chunk, chunk 1's first)."""
    rank = [list(ts) for ts in rank[:4]] + [[], []]
    busy = {t for ts in rank[:4] for t in ts}
    end = max(t for ts in rank[:4] for t in ts) + 1
    waiting = [0, 0]
    for t in range(end):
        if t in busy:
            k = next(k for k in range(4) if t in rank[k])
            if k in (B1, B0):
                waiting[1 if split and k == B0 else 0] += 1
        else:
            for w in range(2):
                if waiting[w]:
                    rank[W + w].append(t)
                    waiting[w] -= 1
                    break
    for w in range(2):
        for _ in range(waiting[w]):
            rank[W + w].append(end)
            end += 1
    return rank if split else rank[:5]


def peak(rank, explicit_w):
    """Most live activations slot by slot (F +1, W -1; without explicit W
    passes a free slot retires one waiting B's W)."""
    at = {t: k for k, ts in enumerate(rank) for t in ts}
    cur = wait = most = 0
    for t in range(max(at) + 1):
        k = at.get(t)
        if k in (F0, F1):
            cur += 1
        elif k in (B1, B0):
            wait += 1
        elif k == W:
            cur -= 1
        elif not explicit_w and wait:
            cur -= 1
            wait -= 1
        most = max(most, cur)
    return most


def inputs(g, r, k, j):
    """Latest slot among the inputs of rank r's j-th pass of kind k."""
    p = len(g)
    deps = [-1]
    if k in (F0, B1) and r > 0:
        deps.append(g[r - 1][k][j])
    if k in (F1, B0) and r + 1 < p:
        deps.append(g[r + 1][k][j])
    if F0 < k < W:
        deps.append(g[r][k - 1][j])
    if k == W:
        deps.append(sorted(g[r][B1] + g[r][B0])[j])
    if j > 0:
        deps.append(g[r][k][j - 1])
    return max(deps)


def squeeze(g):
    """Every pass as soon as possible at unit times in its rank's order."""
    order = sorted((t, r, k, j) for r, rank in enumerate(g)
                   for k, ts in enumerate(rank) for j, t in enumerate(ts))
    free = [0] * len(g)
    for _, r, k, j in order:
        deps = [free[r]]
        if k in (F0, B1) and r > 0:
            deps.append(g[r - 1][k][j] + 1)
        if k in (F1, B0) and r + 1 < len(g):
            deps.append(g[r + 1][k][j] + 1)
        if F0 < k < W:
            deps.append(g[r][k - 1][j] + 1)
        if j > 0:
            deps.append(g[r][k][j - 1] + 1)
        g[r][k][j] = max(deps)
        free[r] = g[r][k][j] + 1
    return g


def reorder(g):
    explicit_w = len(g[0]) > 4
    cap = max(peak(rank, explicit_w) for rank in g)
    order = sorted((t, r, k, j) for r, rank in enumerate(g)
                   for k, ts in enumerate(rank) for j, t in enumerate(ts))
    m = len(g[0][F0])
    phase = 0
    for t0, r, k, j in order:
        if k == B0 and r == 0 and phase == 0:
            phase = 1
        if phase == 1:
            if k == F0 and j == m - 1:
                phase = 2
            continue
        if phase == 0 and not explicit_w:
            continue
        busy = {t for ts in g[r] for t in ts}
        for t in range(inputs(g, r, k, j) + 1, t0):
            if t in busy:
                continue
            g[r][k][j] = t
            if peak(g[r], explicit_w) <= cap:
                break
            g[r][k][j] = t0
    if not explicit_w:
        g = [put_w(rank, False) for rank in g]
    return squeeze(g)


def v_order(p, m, half):
    g = [[[o + 6 * j for j in range(m)] for o in offs]
         for offs in block(p, half)]
    g = reorder([put_w(rank, False) for rank in g])
    g = reorder([rank[:4] for rank in g])
    g = [put_w(rank[:4], True) for rank in g]
    stage = lambda r, k: r if k in (F0, B0, W0) else 2 * p - 1 - r
    letter = "FFIIWW"
    return [[f"{stage(r, k)}{letter[k]}{j}" for _, k, j in events(rank)]
            for r, rank in enumerate(g)]


def dualpipev(p, m):
    rows = []
    for r in range(p):
        s0, s1 = r, 2 * p - 1 - r
        n = {}
        wq = []
        row = []

        def act(st, kind):
            key = (st, "I" if kind in "IB" else kind)
            j = n.get(key, 0)
            n[key] = j + 1
            row.append(f"{st}{kind}{j}")
            if kind == "I":
                wq.append((st, j))

        def weight():
            if wq:
                st, j = wq.pop(0)
                row.append(f"{st}W{j}")

        for _ in range(2 * (p - r - 1)):
            act(s0, "F")
        for _ in range(r + 1):
            act(s0, "F")
            act(s1, "F")
        for _ in range(p - r - 1):
            act(s1, "I")
            weight()
            act(s1, "F")
        for i in range(m - 2 * p + r + 1):
            act(s0, "F")
            act(s1, "B")
            act(s1, "F")
            act(s0, "B")
        for _ in range(p - r - 1):
            act(s1, "B")
            act(s1, "F")
            act(s0, "B")
        zb = False
        for i in range(r + 1):
            if i == (r + 1) // 2 and r % 2 == 1:
                zb = True
            act(s1, "I" if zb else "B")
            if i == (r + 1) // 2 and r % 2 == 0:
                zb = True
            act(s0, "I" if zb else "B")
        for _ in range(p - r - 1):
            weight()
            act(s0, "I" if zb else "B")
        for _ in range(r + 1):
            weight()
        rows.append(row)
    return rows


def interleaved_zb(p, m, v):
    rounds = max(1, m // p)
    per = m // rounds
    if m % rounds:
        sys.exit(f"interleaved-zb: m {m} is not a multiple of {rounds} rounds")
    rows = []
    for r in range(p):
        warm = min((v - 1) * per + p - 1 - r, m * v)
        n = {}
        row = []
        backs = []
        done = 0

        def act(kind, chunk):
            st = chunk * p + r
            j = n.get((kind, st), 0)
            n[(kind, st)] = j + 1
            row.append(f"{st}{kind}{j}")

        for op in range(m * v + warm):
            if op < m * v:
                act("F", (op // per) % v)
            if op < warm:
                continue
            backs.append(v - 1 - ((op - warm) // per) % v)
            act("I", backs[-1])
            if op - warm >= r:
                act("W", backs[done])
                done += 1
        for c in backs[done:]:
            act("W", c)
        rows.append(row)
    return rows


def zbv(p, m):
    """Rank r: a warm-up of 2(p-r)-1 forwards of its first chunk, r pairs
    of forwards (second chunk, first), p-r rounds of F, I, W on the
    second chunk; then rounds of (F, I, W) on the first chunk and on the
    second until both have done every forward; a cool-down of r pairs of
    input gradients (first chunk, second) and p-r of I then W on the first
    chunk; the weight passes still owed last, the second chunk's first."""
    n = max(2 * p - 1, m)
    rows = []
    for r in range(p):
        lo, hi = r, 2 * p - 1 - r
        done = {}
        row = []

        def go(st, kind):
            j = done.get((st, kind), 0)
            done[(st, kind)] = j + 1
            if j < m:
                row.append(f"{st}{kind}{j}")

        def count(st, kind):
            return done.get((st, kind), 0)

        def go_round(st, with_f=True):
            for kind in "FIW" if with_f else "IW":
                go(st, kind)

        for _ in range(2 * (p - r) - 1):
            go(lo, "F")
        for _ in range(r):
            go(hi, "F")
            go(lo, "F")
        for _ in range(p - r):
            go_round(hi)
        while count(lo, "F") < n or count(hi, "F") < count(lo, "F"):
            go_round(lo, count(lo, "F") < n)
            go_round(hi)
        for _ in range(r):
            go(lo, "I")
            go(hi, "I")
        for _ in range(p - r):
            go(lo, "I")
            go(lo, "W")
        for st in (hi, lo):
            while count(st, "W") < count(st, "I"):
                go(st, "W")
        rows.append(row)
    return rows


def main():
    name, p, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    v = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    rows = {"v-half": lambda: v_order(p, m, True),
            "v-min": lambda: v_order(p, m, False),
            "dualpipev": lambda: dualpipev(p, m),
            "interleaved-zb": lambda: interleaved_zb(p, m, v),
            "zbv": lambda: zbv(p, m)}[name]()
    for row in rows:
        print(",".join(row))


if __name__ == "__main__":
    main()
