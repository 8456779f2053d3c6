"""The Dask backend: a real cluster (a scheduler and worker processes, started here as separate
processes) evaluates a seeded study and gives exactly the trials of ``--jobs 1``; the default
local cluster does too; a bad scheduler address is a one-line error."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from dse.errors import ConfigError  # noqa: E402
from dse.search.execute.runner import run_study  # noqa: E402
from dse.search.study.results import load_results  # noqa: E402
from dse.search.study.study import load_study  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
STUDY = """
[study]
space = "{root}/spaces/depth-width.toml"
objectives = "{root}/objectives/latency-silicon.toml"
trials = 24
seed = 3
batch = 8
[sampler]
name = "nsga2"
population_size = 8
[workload]
models = ["qwen3.5-35b-a3b"]
"""


def _trials(cfg):
    return [(r.number, r.params, r.values, r.feasible) for r in load_results(cfg).records]


def _cfg(tmp_path: Path, name: str):
    p = tmp_path / f"{name}.toml"
    p.write_text(STUDY.format(root=ROOT))
    return load_study(p)


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and two single-threaded worker processes on loopback; yields its address."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    sfile = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(sfile)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(600):
            if sfile.exists() and sfile.stat().st_size:
                break
            time.sleep(0.1)
        import json
        address = json.loads(sfile.read_text())["address"]
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                           "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client
        with Client(address, timeout=60) as c:
            c.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_real_cluster_gives_the_trials_of_jobs_1(tmp_path, cluster):
    ref = _cfg(tmp_path, "serial")
    run_study(ref, jobs=1)
    cfg = _cfg(tmp_path, "dask")
    s = run_study(cfg, backend="dask", scheduler=cluster)
    assert s.complete == 24 and s.evaluations > 8
    assert _trials(cfg) == _trials(ref)


def test_local_cluster_gives_the_trials_of_jobs_1(tmp_path):
    ref = _cfg(tmp_path, "serial")
    run_study(ref, jobs=1, max_batches=2)
    cfg = _cfg(tmp_path, "local")
    run_study(cfg, backend="dask", jobs=2, max_batches=2)
    assert len(_trials(cfg)) == 16 and _trials(cfg) == _trials(ref)


@pytest.mark.parametrize("address", ["not an address", "tcp://host:notaport", "http://h:8786", "tcp://h:99999",
                                     "tcp://127.0.0.1:1"])
def test_bad_scheduler_address_is_one_line(tmp_path, address):
    cfg = _cfg(tmp_path, "bad")
    with pytest.raises(ConfigError) as e:
        run_study(cfg, backend="dask", scheduler=address)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"--scheduler {address!r}")


def test_cli_bad_scheduler_exits_2_without_traceback(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(STUDY.format(root=ROOT))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "dse", "run", str(p), "--backend", "dask", "--scheduler", "tcp://h:0x"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "--scheduler 'tcp://h:0x'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "dse", "run", str(p), "--scheduler", "tcp://h:1"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "only with --backend dask" in r.stderr


_CALLS = [0]


def _die_once(folder: str, design, models):
    """An evaluator that SIGKILLs its own worker process once, at its third design after the
    test arms it (``folder/arm``: results of the two before may still wait on it for the driver
    to gather them); otherwise ``evaluate_design``."""
    import signal
    import time

    from dse.search.execute.evaluation import evaluate_design
    time.sleep(0.02)
    if os.path.exists(os.path.join(folder, "arm")):
        _CALLS[0] += 1
    if _CALLS[0] >= 3:
        try:
            os.close(os.open(os.path.join(folder, "killed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    return evaluate_design(design, models)


@pytest.mark.slow
def test_a_killed_worker_costs_one_line_and_no_trial(tmp_path, monkeypatch, capfd):
    """A local cluster's worker process SIGKILLed mid-study (in the middle of an evaluation of
    the second batch): the run goes on, prints one line naming the worker and the evaluations
    resubmitted (none of distributed's log lines), and its trials are those of --jobs 1."""
    import functools
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    ref = _cfg(tmp_path, "serial")
    run_study(ref, jobs=1)
    capfd.readouterr()
    cfg = _cfg(tmp_path, "killed")
    arm = lambda _line: (tmp_path / "arm").touch()  # noqa: E731
    run_study(cfg, backend="dask", jobs=2, evaluator=functools.partial(_die_once, str(tmp_path)), on_batch=arm)
    err = [x for x in capfd.readouterr().err.splitlines() if x.strip()]
    assert (tmp_path / "killed").exists()
    assert len(err) == 1, err
    assert err[0].startswith("dse: Dask worker tcp://") and " lost; " in err[0] and "resubmitted" in err[0]
    assert int(err[0].split(" lost; ")[1].split()[0]) >= 1
    assert _trials(cfg) == _trials(ref)


def test_distributed_error_lines_of_a_lost_worker_are_silenced(capfd):
    """What distributed logs when a worker dies while its results are gathered ("Couldn't gather
    keys", at ERROR) is not printed once the pool quietened it: the pool's own line says it."""
    import logging

    from dse.search.execute.dask_pool import _quiet
    _quiet()
    for name in ("distributed.scheduler", "distributed.client", "distributed.worker", "distributed.nanny"):
        logging.getLogger(name).error("Couldn't gather keys: {'x': 'memory'}")
    assert "gather" not in capfd.readouterr().err


def test_remote_workers_share_the_drivers_warm_folder(tmp_path, cluster, monkeypatch):
    """Workers started elsewhere (the fixture's, without the driver's environment) get its
    DSE_WARM_CACHE_DIR and build log through the pool's plugin: each domain's layout is built
    once, in that folder, for the whole cluster."""
    from dse.search.execute.warm import layout_domain
    from tests.search.execute.test_shared_warm import SPACE
    from tests.search.execute.test_shared_warm import STUDY as TRACE_STUDY
    (tmp_path / "space.toml").write_text(SPACE)
    (tmp_path / "s.toml").write_text(TRACE_STUDY.format(root=ROOT))
    monkeypatch.setenv("DSE_WARM_CACHE_DIR", str(tmp_path / "shared"))
    monkeypatch.setenv("DSE_WARM_BUILD_LOG", str(tmp_path / "builds.log"))
    cfg = load_study(tmp_path / "s.toml")
    run_study(cfg, backend="dask", scheduler=cluster)
    keys = [x.split()[0] for x in (tmp_path / "builds.log").read_text().splitlines() if x.split()[2] == "layout"]
    domains = {layout_domain(r.design, cfg.models[0]) for r in load_results(cfg).records if r.duplicate_of is None}
    shared = {p.name.split(".")[0] for p in (tmp_path / "shared").glob("*.npy")}
    assert len(keys) == len(set(keys)) == len(domains) == len(shared & set(keys))


class _FakeClient:
    def __init__(self, workers):
        self.workers = list(workers)

    def scheduler_info(self):
        return {"workers": {w: {} for w in self.workers}}


def test_designs_of_a_domain_go_first_to_the_worker_that_owns_it(monkeypatch):
    """``DaskPool.owner``: a new group goes to the worker owning fewest groups (ties: the first
    address), a known group to its owner, a group whose worker left to a live one; no group (or
    the affinity switched off) leaves dask to place the design."""
    from dse.search.execute import dask_pool
    monkeypatch.setattr(dask_pool, "WORKERS_TTL_S", -1.0)     # asked afresh at every design
    pool = dask_pool.DaskPool.__new__(dask_pool.DaskPool)
    pool.owners, pool._workers, pool.client = {}, None, _FakeClient(["tcp://b:2", "tcp://a:1"])
    got = [pool.owner(g) for g in ("d0", "d1", "d0", "d2", "d1", "d3")]
    assert got == ["tcp://a:1", "tcp://b:2", "tcp://a:1", "tcp://a:1", "tcp://b:2", "tcp://b:2"]
    pool.client.workers = ["tcp://b:2", "tcp://c:3"]            # a:1 left: its groups move
    assert pool.owner("d0") == "tcp://c:3" and pool.owner("d2") == "tcp://c:3" and pool.owner("d1") == "tcp://b:2"
    assert pool.owner(None) is None
    pool.client.workers = []
    assert pool.owner("d9") is None
    monkeypatch.setattr(dask_pool, "AFFINITY", False)
    assert pool.owner("d1") is None


def test_the_worker_list_is_asked_once_per_interval_and_after_a_worker_left(monkeypatch):
    """``DaskPool.workers``: one round trip to the scheduler per ``WORKERS_TTL_S``, not per
    design; a ``remove-worker`` event makes the next design ask again."""
    from dse.search.execute import dask_pool
    calls = []
    client = _FakeClient(["tcp://a:1", "tcp://b:2"])
    info = client.scheduler_info
    client.scheduler_info = lambda: calls.append(1) or info()
    pool = dask_pool.DaskPool.__new__(dask_pool.DaskPool)
    pool.owners, pool._workers, pool.client, pool.keys, pool.lost = {}, None, client, set(), []
    monkeypatch.setattr(dask_pool, "WORKERS_TTL_S", 3600.0)
    for g in range(20):
        pool.owner(f"d{g}")
    assert len(calls) == 1
    client.workers = ["tcp://b:2"]
    pool._event((0.0, {"action": "remove-worker", "worker": "tcp://a:1", "expected": False}))
    assert pool.owner("d0") == "tcp://b:2" and len(calls) == 2
