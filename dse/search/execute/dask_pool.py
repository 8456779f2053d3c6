"""Evaluations on a dask.distributed cluster (``dse run STUDY --backend dask [--scheduler ADDR]``).

The same interface as the process pool of the runner (``submit`` a design, ``result`` of a
handle, ``close``): the driver still asks, tells and owns the storage; only the evaluations go
to the cluster, one task per design, submitted as soon as the design is known (the distributed
client directly: joblib's Dask backend is made for whole ``Parallel`` calls, while the runner
streams designs into a batch and collects them in trial order). Results never depend on where
an evaluation ran, so a seeded study gives the trials of ``--jobs 1``.

Warm state: each scheduling domain's unit layout is built once per study into the shared folder
of ``dse.mapping.warm_cache`` and memory-mapped by every worker; a domain's designs go first to
the worker that took its first one (``DaskPool.owner``, a loose restriction that dask's work
stealing may override), so each worker warms its own domains' per-process caches only. A local
cluster's workers inherit the driver's environment; with ``--scheduler``, the driver's
``DSE_WARM_CACHE_DIR`` (a path every host mounts), ``DSE_WARM_CACHE_MB`` and
``DSE_WARM_BUILD_LOG`` are set in every worker by a plugin.

Without an address a local cluster (a scheduler and ``workers`` worker processes, one thread
each) starts with the run and stops with it. With an address the client joins that scheduler;
a wrong or unreachable one is a one-line error.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dse.errors import ConfigError, DSEError

WARM_ENV = ("DSE_WARM_CACHE_DIR", "DSE_WARM_CACHE_MB", "DSE_WARM_BUILD_LOG")   # shipped to remote workers
SILENT = logging.CRITICAL + 10    # above every level distributed logs at
# Domain affinity (``DaskPool.owner``); ``DSE_DASK_AFFINITY=0`` switches it off, for measuring it
# (``benchmarks/bench_scale.py --alternatives``). Results never depend on it.
AFFINITY = os.environ.get("DSE_DASK_AFFINITY", "1") != "0"
WORKERS_TTL_S = 1.0               # how long the list of workers (``DaskPool.workers``) is reused
CONNECT_TIMEOUT_S = 10            # how long to wait for a scheduler before giving up
_ADDRESS = re.compile(r"^(?:(tcp|tls|ws|wss)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.\-]*)(?::(\d{1,5}))?/?$")


def _quiet() -> None:
    """dask logs scheduler / worker life-cycle events on stderr, and a lost worker as a dozen
    ERROR lines ("Couldn't gather keys", "Removing worker ... caused the cluster to lose"): not
    the user's concern. The pool reports a lost worker itself, in one line (``DaskPool``). Even
    CRITICAL is silenced: the scheduler logs one, with a traceback, when it sends the pool's event
    subscription to a driver interrupted by Ctrl-C (a closed comm), which is no fault of the study."""
    for name in ("distributed", "distributed.scheduler", "distributed.worker", "distributed.nanny",
                 "distributed.core", "distributed.http.proxy", "distributed.comm", "distributed.client",
                 "distributed.batched", "distributed.utils_perf", "tornado.application"):
        logging.getLogger(name).setLevel(SILENT)


class DaskPool:
    """Evaluations as dask tasks. ``call(fn, design, models)`` runs on a worker and returns the
    outcome the runner expects (it catches the model's exceptions itself)."""

    def __init__(self, call: Callable[..., Any], *, scheduler: str | None = None, workers: int = 1):
        try:
            import distributed
        except ImportError:
            raise ConfigError("--backend dask: needs dask.distributed "
                              "(pip install 'rexpert-dse[dask]'); or use the default backend") from None
        _quiet()
        self.call = call
        self.cluster = None
        self.keys: set = set()        # keys of this pool's evaluations not yet collected
        self.lost: list[tuple[str, int]] = []    # (worker, evaluations resubmitted), as reported
        self.owners: dict[Any, str] = {}          # group -> the worker its designs go to first (``owner``)
        self._workers: tuple[float, list[str]] | None = None   # (when asked, addresses): ``workers``
        if scheduler is None:
            n = workers if workers > 0 else (os.cpu_count() or 1)
            self.cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                    dashboard_address=None, silence_logs=SILENT)
            self.client = distributed.Client(self.cluster, set_as_default=False)
        else:
            self.client = _connect(distributed, scheduler)
        self.client.subscribe_topic("all", self._event)
        shared = {k: os.environ[k] for k in WARM_ENV if os.environ.get(k)}
        if shared and scheduler is not None:        # a local cluster's workers inherit them
            self.client.register_plugin(_warm_env_plugin(distributed, shared), name="dse-warm-env")

    def _event(self, event) -> None:
        """A scheduler event (the client's thread): an unexpected ``remove-worker`` is a lost
        worker, reported in one line with the evaluations of this pool it held (the scheduler
        runs them again elsewhere; the trials stay those of ``--jobs 1``)."""
        msg = event[1] if isinstance(event, tuple) and len(event) == 2 else None
        if not isinstance(msg, dict) or msg.get("action") != "remove-worker" or msg.get("expected"):
            return
        self._workers = None                     # ask the scheduler again (``workers``)
        held = set(msg.get("processing-tasks") or ()) | set(msg.get("lost-computed-tasks") or ())
        n = len(held & self.keys)
        worker = str(msg.get("worker", "?"))
        self.lost.append((worker, n))
        print(f"dse: Dask worker {worker} lost; {n} evaluation{'' if n == 1 else 's'} resubmitted",
              file=sys.stderr, flush=True)

    def submit(self, fn: Callable[..., Any], design: Mapping[str, Any], models: Sequence[str], group: Any = None):
        """Start an evaluation, preferably on the worker that owns ``group`` (``owner``)."""
        where = self.owner(group)
        kw = {"workers": [where], "allow_other_workers": True} if where is not None else {}
        fut = self.client.submit(self.call, fn, dict(design), tuple(models), pure=False, **kw)
        self.keys.add(fut.key)
        return fut

    def owner(self, group: Any) -> str | None:
        """The worker a design of ``group`` (``warm.domain_key``: its scheduling domain) goes to
        first: the one that took the group's first design, or for a new group (or one whose
        worker left) the worker owning fewest groups. The restriction is loose
        (``allow_other_workers``): dask's work stealing still moves designs to an idle worker.
        Each worker thus holds the per-process caches of its own domains (placement, mapped
        layout, job tables) instead of every worker warming every domain: on
        ``bench_scale.py``'s 512-step study with 2 local workers, evaluating took the workers
        14.5-14.9 s of CPU together with it and 16.3-16.9 s without it (13.8 s in one worker;
        ``docs/benchmarks/scale-out.md``)."""
        if group is None or not AFFINITY:
            return None
        workers = self.workers()
        if not workers:
            return None
        where = self.owners.get(group)
        if where not in workers:
            held = {w: 0 for w in workers}
            for w in self.owners.values():
                if w in held:
                    held[w] += 1
            where = self.owners[group] = min(workers, key=lambda w: (held[w], w))
        return where

    def workers(self) -> list[str]:
        """The cluster's worker addresses, sorted: asked of the scheduler (a round trip) at most
        every ``WORKERS_TTL_S``, and again after a worker left (``_event``)."""
        now = time.monotonic()
        if self._workers is None or now - self._workers[0] > WORKERS_TTL_S:
            self._workers = (now, sorted(self.client.scheduler_info().get("workers", {})))
        return self._workers[1]

    def pending(self, handle) -> bool:
        """True while the cluster still computes the evaluation."""
        return not handle.done()

    def result(self, handle) -> Any:
        try:
            out = handle.result()
            self.keys.discard(handle.key)
            return out
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # a worker lost (killed, out of memory) or the scheduler gone
            raise DSEError(f"a Dask evaluation failed ({type(exc).__name__}: {exc}); "
                           f"re-run the same command to resume") from None

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def _warm_env_plugin(distributed, env: dict[str, str]):
    """A worker plugin setting the driver's shared warm-state settings (``WARM_ENV``) in every
    worker of the cluster, those that join later included: each domain's layout is then built
    once for the whole cluster in a folder every host sees (``dse.mapping.warm_cache``)."""

    class WarmEnv(distributed.WorkerPlugin):
        def setup(self, worker) -> None:
            os.environ.update(env)
    return WarmEnv()


def _connect(distributed, address: str):
    """A client of the scheduler at ``address``; a one-line ConfigError if it cannot be reached."""
    m = _ADDRESS.match(address) if isinstance(address, str) else None
    if m is None or m.group(3) is None or not 0 < int(m.group(3)) < 65536:
        raise ConfigError(f"--scheduler {address!r}: not a scheduler address ([tcp|tls|ws|wss]://host:port, "
                          f"e.g. tcp://10.0.0.5:8786)")
    if (m.group(1) or "tcp") == "tcp":   # refused: say so at once, not after the timeout
        import socket
        try:
            socket.create_connection((m.group(2).strip("[]"), int(m.group(3))), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise ConfigError(f"--scheduler {address!r}: cannot reach a Dask scheduler there "
                              f"({exc.strerror or type(exc).__name__})") from None
    try:
        return distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, ValueError, TypeError, TimeoutError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"--scheduler {address!r}: cannot reach a Dask scheduler there ({reason[:160]})") from None
