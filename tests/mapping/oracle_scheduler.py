"""A plain-Python, token-by-token oracle of the MFU-cascade scheduler (spec section 5).

It shares no code with ``dse.mapping.scheduler``: loads are counted token by token, jobs are
queued one by one, direct pooling is simulated round by round, the broadcast round budget is
found by a feasibility search and the two-stage overflow is moved job by job. Slow on purpose;
the tests compare it with the vectorised scheduler on small random traces.
"""
from __future__ import annotations

import math


def loads(ids, n_experts):
    """n[s][l][e] counted token by token from ids[s][l][t][j]."""
    out = []
    for step in ids:
        per_layer = []
        for layer in step:
            n = [0] * n_experts
            for token in layer:
                for e in token:
                    n[e] += 1
            per_layer.append(n)
        out.append(per_layer)
    return out


def _direct_rounds(group_jobs, pes):
    """Simulate one group: every round each of its PE tiles takes one queued job."""
    queue = group_jobs
    rounds = 0
    while queue > 0:
        queue -= min(pes, queue)
        rounds += 1
    return rounds


def _core_two_stage(unit_jobs, groups):
    """Two-stage broadcast on one core. unit_jobs: {unit: jobs}; groups: list of unit lists.

    Returns (rounds, streams, per-unit read-outs, overflow jobs)."""
    total = sum(unit_jobs.values())
    if total == 0:
        return 0, 0, {u: 0 for u in unit_jobs}, 0
    # round budget: the smallest R whose stage-one overflow fits the stage-one idle slots
    R = 1
    while True:
        over = sum(max(0, sum(unit_jobs[u] for u in g) - R * len(g)) for g in groups)
        idle = sum(max(0, R * len(g) - sum(unit_jobs[u] for u in g)) for g in groups)
        if over <= idle:
            break
        R += 1
    # stage two: each group gives away its excess, taking jobs from its hottest experts first
    streams = 0
    moved = 0
    spare = [max(0, R * len(g) - sum(unit_jobs[u] for u in g)) for g in groups]
    for gi, g in enumerate(groups):
        excess = sum(unit_jobs[u] for u in g) - R * len(g)
        if excess <= 0:
            continue
        for u in sorted(g, key=lambda u: (-unit_jobs[u], u)):
            if excess <= 0:
                break
            take = min(unit_jobs[u], excess)
            if take > 0:
                streams += 1
            for _ in range(take):                     # job by job into any helper group's idle slot
                hi = next(h for h in range(len(groups)) if h != gi and spare[h] > 0)
                spare[hi] -= 1
                moved += 1
            excess -= take
    # read-outs: the owner runs its expert once per round until its share is done (<= R rounds);
    # helpers share those multicasts
    reads = {u: min(j, R) for u, j in unit_jobs.items()}
    return R, streams, reads, moved


def _prefetch(per_step, pes, depth):
    """Load-aware fetch, step by step for one layer. per_step[s][x] = jobs of resource x in step s
    (x = core for broadcast, group for direct); pes[x] its PE tiles. Returns rounds per step."""
    S, X = len(per_step), len(pes)
    credit = [0] * X
    out = []
    for s in range(S):
        pending = []
        for x in range(X):
            use = min(credit[x], per_step[s][x])
            credit[x] -= use
            pending.append(per_step[s][x] - use)
        rho = max((math.ceil(pending[x] / pes[x]) if pes[x] else 0) for x in range(X))
        for x in range(X):
            idle = rho * pes[x] - pending[x]
            queued = sum(per_step[t][x] for t in range(s + 1, min(S, s + 1 + depth))) - credit[x]
            credit[x] += min(idle, max(queued, 0))
        out.append(rho)
    return out


def run(ids, n_experts, slot, core_units, groups_of_core, w, pooling="broadcast", fetch="fifo", depth=16):
    """Schedule ids[s][l][t][j]. slot[l][e] = unit index (units numbered core by core);
    groups_of_core[c] = list of groups, each a list of unit indices of core c.

    Returns per-(step, layer) lists tokens, jobs, union, rounds, read-outs, the stream histogram
    and the cascade ratios."""
    n = loads(ids, n_experts)
    S, L = len(n), len(n[0])
    P = sum(core_units)
    tokens = [[sum(n[s][layer]) for layer in range(L)] for s in range(S)]
    jobs = [[sum(math.ceil(x / w) for x in n[s][layer]) for layer in range(L)] for s in range(S)]
    union = [[sum(1 for x in n[s][layer] if x > 0) for layer in range(L)] for s in range(S)]
    rounds = [[0.0] * L for _ in range(S)]
    reads = [[0.0] * L for _ in range(S)]
    hist: dict[int, int] = {}
    for layer in range(L):
        per_step_x = []           # jobs per resource (core or group) per step, for load-aware fetch
        pes_x = None
        for s in range(S):
            unit_jobs = {slot[layer][e]: math.ceil(n[s][layer][e] / w) for e in range(n_experts)}
            rho = 0
            read_total = 0
            xs, pes = [], []
            for _c, groups in enumerate(groups_of_core):
                units = [u for g in groups for u in g]
                uj = {u: unit_jobs.get(u, 0) for u in units}
                R, st, rd, _ = _core_two_stage(uj, groups)
                read_total += sum(rd.values())
                if pooling == "direct":
                    for g in groups:
                        o = sum(uj[u] for u in g)
                        rho = max(rho, _direct_rounds(o, len(g)))
                        xs.append(o)
                        pes.append(len(g))
                    st = 0
                else:
                    rho = max(rho, R)
                    xs.append(sum(uj.values()))
                    pes.append(len(units))
                if sum(uj.values()) > 0:
                    hist[st] = hist.get(st, 0) + 1
            rounds[s][layer] = float(rho)
            reads[s][layer] = float(read_total)
            per_step_x.append(xs)
            pes_x = pes
        if fetch == "load_aware":
            for s, r in enumerate(_prefetch(per_step_x, pes_x, depth)):
                rounds[s][layer] = float(r)
    T = sum(map(sum, tokens))
    J = sum(map(sum, jobs))
    RR = sum(map(sum, rounds))
    return {
        "tokens": tokens, "jobs": jobs, "union": union, "rounds": rounds, "readouts_pooled": reads,
        "hist": hist,
        "ideal_mfu": T / (w * J) if J else 0.0,
        "occupancy": J / (P * RR) if RR else 0.0,
        "actual_mfu": T / (w * P * RR) if RR else 0.0,
    }
