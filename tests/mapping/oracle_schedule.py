"""A plain-Python, per-token, per-round oracle of the scheduled time (docs/model/scheduled-time.md).

Shares no code with ``dse.mapping.rounds`` or ``dse.performance.scheduled``: every expert's tokens
are dealt into jobs one token at a time, each resource's jobs are sorted and cut into rounds, every
round's busiest job is found by looking at every resource, and each round's time is added up.
Rounds and multicast streams come from the scheduler's own oracle (``oracle_scheduler``). Slow on
purpose.
"""
from __future__ import annotations

from tests.mapping import oracle_scheduler as osch


def _jobs_of_expert(tokens, w):
    """Token counts of the jobs of an expert with ``tokens`` tokens, dealt one token at a time."""
    jobs = []
    for _ in range(tokens):
        if not jobs or jobs[-1] == w:
            jobs.append(0)
        jobs[-1] += 1
    return jobs


def _resources(core_units, groups_of_core, pooling):
    """[(units of the resource)]: cores when broadcast, groups when direct."""
    if pooling == "broadcast":
        return [[u for g in groups for u in g] for groups in groups_of_core]
    return [g for groups in groups_of_core for g in groups]


def step_layer_times(n, slot, core_units, groups_of_core, w, pooling, fetch, depth, par):
    """t[s][l] in us. n[s][l][e] loads; par: read_us, hop, stream_us (one multicast stream's bytes
    over the core's bisection), tok_us, io_us, level_us."""
    S, L, E = len(n), len(n[0]), len(n[0][0])
    res = _resources(core_units, groups_of_core, pooling)
    out = [[0.0] * L for _ in range(S)]
    for layer in range(L):
        per_step_x, leads_of_step, streams_of_step, fifo = [], [], [], []
        unit_of = {slot[layer][e]: e for e in range(E)}
        for s in range(S):
            leads, xs = [], []
            for units in res:
                jobs = []
                for u in units:
                    if u in unit_of:
                        jobs += _jobs_of_expert(n[s][layer][unit_of[u]], w)
                jobs.sort(reverse=True)
                leads.append([jobs[i] for i in range(0, len(jobs), len(units))])   # lead of each round
                xs.append(len(jobs))
            smax = 0
            if pooling == "broadcast":
                for groups in groups_of_core:
                    uj = {u: -(-n[s][layer][unit_of[u]] // w) if u in unit_of else 0 for g in groups for u in g}
                    smax = max(smax, osch._core_two_stage(uj, groups)[1])
            per_step_x.append(xs)
            leads_of_step.append(leads)
            streams_of_step.append(smax)
            fifo.append(max(len(x) for x in leads))
        rho = osch._prefetch(per_step_x, [len(u) for u in res], depth) if fetch == "load_aware" else fifo
        for s in range(S):
            smax = streams_of_step[s]
            read = par["read_us"] if smax == 0 else par["hop"] * max(par["read_us"], smax * par["stream_us"])
            t = 0.0
            for r in range(rho[s]):
                big = max((x[r] for x in leads_of_step[s] if r < len(x)), default=0)
                t += max(read, big * par["tok_us"]) + big * par["io_us"]
            if rho[s] > 0:
                t += par["level_us"]
            out[s][layer] = t
    return out


def us_per_token(n, slot, core_units, groups_of_core, w, pooling, fetch, depth, par, layer_tiles, pool_tiles, batch):
    t = step_layer_times(n, slot, core_units, groups_of_core, w, pooling, fetch, depth, par)
    total = 0.0
    for row in t:
        for x in row:
            total += x
    return total * layer_tiles / (pool_tiles * batch * len(t))
