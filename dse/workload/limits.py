"""Resource bounds of workload inputs: refuse, with one line, what would exhaust the machine.

A synthetic routing trace is allocated whole (ids [steps, layers, B, top_k]) and analysed with
int64 working copies; the generator also holds per-step logits [layers, B, experts] (float32,
with Gumbel noise and a partition). ``check_trace_memory`` compares that estimate with the memory
the machine has available before anything is allocated.
"""
from __future__ import annotations

import os

from dse.errors import ConfigError
from dse.units import GIB

# Bytes per routing id beyond its stored dtype: two int64 working copies (statistics, scheduling).
WORK_BYTES_PER_ID = 16
# Bytes per (layer, token, expert) logit of the generator: float32 logits, noise, int64 partition.
WORK_BYTES_PER_LOGIT = 16


def available_memory_bytes() -> int | None:
    """Memory the kernel reports available (``MemAvailable``), else physical memory; None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def trace_bytes_estimate(steps: int, layers: int, batch: int, top_k: int, experts: int) -> int:
    """Peak bytes to generate and analyse a trace of this shape (ids, working copies, logits)."""
    id_bytes = 1 if experts <= 256 else 2
    n_ids = steps * layers * batch * top_k
    return n_ids * (id_bytes + WORK_BYTES_PER_ID) + layers * batch * experts * WORK_BYTES_PER_LOGIT


def check_trace_memory(model, batch: int, steps: int, budget_bytes: int | None = None) -> None:
    """ConfigError when a trace of ``model`` (a catalog MoEModel) at ``batch`` tokens per step and
    ``steps`` decode steps needs more than ``budget_bytes`` (default: half the available memory)."""
    if budget_bytes is None:
        avail = available_memory_bytes()
        if avail is None:
            return
        budget_bytes = avail // 2
    need = trace_bytes_estimate(steps, model.moe_layers, batch, model.top_k, model.experts)
    if need > budget_bytes:
        raise ConfigError(
            f"model {model.name}: a routing trace of {steps} steps x {model.moe_layers} layers x batch {batch} x "
            f"top-{model.top_k} of {model.experts} experts needs about {need / GIB:.1f} GiB, more than the "
            f"{budget_bytes / GIB:.1f} GiB allowed (half the available memory); lower the batch or trace_steps, "
            f"or use the catalog unions (trace = \"catalog\")")
