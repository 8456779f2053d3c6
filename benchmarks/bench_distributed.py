"""Study throughput on PostgreSQL with 1, 2 and 4 `dse worker` processes (and one `dse run`).

    python benchmarks/bench_distributed.py [--url postgresql://user:pw@host:port/db] [--trials 160]

Without --url (or DSE_TEST_POSTGRES_URL) a throw-away PostgreSQL server is started from the
Debian package (initdb / pg_ctl, as the `postgres` user when run as root) and stopped at the end.
Each configuration runs the same random-sampler study on a fresh database until it has --trials
COMPLETE trials; the figure is trials per second of wall time (process start to last exit),
printed with the ratio to one worker. Figures depend on the machine's load: compare them within
one run only.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout: tests.fixtures
from tests.fixtures import LATENCY_POWER_UNCONSTRAINED_OBJECTIVES, SILICON_CONTINUOUS_SPACE, write_study  # noqa: E402


@contextlib.contextmanager
def temp_postgres():
    """A throw-away PostgreSQL server on 127.0.0.1 (yields an admin URL)."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) for x in p.split("/")[-2].split(".")])
    if not bins:
        sys.exit("no PostgreSQL server binaries (apt-get install postgresql), or pass --url")
    pgbin = bins[-1]
    work = Path(tempfile.mkdtemp(prefix="dse-bench-pg."))
    run_as: list[str] = []
    if os.geteuid() == 0:
        run_as = ["runuser", "-u", "postgres", "--"]
        os.chmod(work, 0o755)
        shutil.chown(work, "postgres")
    password = secrets.token_hex(12)
    (work / "pw").write_text(password + "\n")
    if run_as:
        shutil.chown(work / "pw", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = work / "data"
    subprocess.run([*run_as, f"{pgbin}/initdb", "-D", str(data), "-U", "dse", "--auth=scram-sha-256",
                    f"--pwfile={work / 'pw'}", "--no-sync", "-E", "UTF8", "--locale=C"], check=True,
                   stdout=subprocess.DEVNULL)
    opts = (f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
            f"-c max_connections=200")
    subprocess.run([*run_as, f"{pgbin}/pg_ctl", "-D", str(data), "-l", str(work / "log"), "-w", "start", "-o", opts],
                   check=True, stdout=subprocess.DEVNULL)
    try:
        yield f"postgresql://dse:{password}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*run_as, f"{pgbin}/pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def fresh_db(admin_url: str):
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url
    admin = make_url(admin_url)
    name = f"dse_bench_{uuid.uuid4().hex[:10]}"
    eng = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with eng.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        eng.dispose()


def run_config(study: Path, url: str, workers: int, mode: str) -> float:
    """Wall seconds for the study to reach its target with ``workers`` processes."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if mode == "run":
        argvs = [["run", str(study), "--storage", url, "--no-progress"]]
    else:
        argvs = [["worker", str(study), "--storage", url, "--worker-id", f"b{i}"] for i in range(workers)]
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "dse", *a], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for a in argvs]
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"dse {' '.join(argvs[0][:1])} failed:\n{err[-2000:]}")
    return time.perf_counter() - t0


def complete_and_span(study: Path, url: str) -> tuple[int, float]:
    """COMPLETE trials, and seconds from the first trial's start to the last one's completion
    (the steady-state span: process start-up and imports excluded)."""
    import optuna
    from optuna.trial import TrialState
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.load_study(study_name="bench", storage=url)
    done = [t for t in s.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    starts = [t.datetime_start for t in s.get_trials(deepcopy=False) if t.datetime_start is not None]
    span = (max(t.datetime_complete for t in done) - min(starts)).total_seconds() if done else float("nan")
    return len(done), span


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=os.environ.get("DSE_TEST_POSTGRES_URL"),
                    help="admin URL of a PostgreSQL server (a database is created per configuration)")
    ap.add_argument("--trials", type=int, default=240)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--trace", default="catalog",
                    help="workload routing of the study (default 'catalog': closed-form U(B), ~ms per design, "
                         "so the figure is the study machinery's; 'synthetic' adds each process's trace "
                         "generation and the scheduler)")
    args = ap.parse_args()
    from dse.search.storage.storage import mask_url
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        study = write_study(tmp, space=SILICON_CONTINUOUS_SPACE, objectives=LATENCY_POWER_UNCONSTRAINED_OBJECTIVES,
                            file="bench.toml", name="bench", trials=args.trials, seed=0, batch=8, sampler="random",
                            workload=f'models = ["qwen3.5-35b-a3b"]\ntrace = "{args.trace}"')
        server = contextlib.nullcontext(args.url) if args.url else temp_postgres()
        with server as admin:
            print(f"PostgreSQL: {mask_url(admin)}{'' if args.url else ' (temporary server)'}; "
                  f"{args.trials} trials per configuration; trace = {args.trace}; {os.cpu_count()} cores; "
                  f"load average {os.getloadavg()[0]:.2f}")
            rows = []
            for mode, n in [("worker", int(w)) for w in args.workers.split(",")] + [("run", 1)]:
                with fresh_db(admin) as url:
                    load0 = os.getloadavg()[0]
                    wall = run_config(study, url, n, mode)
                    done, span = complete_and_span(study, url)
                if done != args.trials:
                    sys.exit(f"{mode} x{n}: {done} complete trials, expected {args.trials}")
                rows.append((mode, n, wall, done / wall, span, done / span, load0))
            ref = [r for r in rows if r[0] == "worker" and r[1] == 1] or rows[:1]
            base_wall, base_steady = ref[0][3], ref[0][5]
            print(f"{'configuration':<22}{'wall s':>8}{'trials/s':>10}{'ratio':>8}{'steady s':>10}"
                  f"{'trials/s':>10}{'ratio':>8}{'load':>7}")
            for mode, n, wall, rate, span, steady, load0 in rows:
                label = f"dse worker x {n}" if mode == "worker" else "dse run (1 process)"
                print(f"{label:<22}{wall:>8.1f}{rate:>10.2f}{rate / base_wall:>7.2f}x{span:>10.1f}"
                      f"{steady:>10.2f}{steady / base_steady:>7.2f}x{load0:>7.2f}")
            print("wall: process start to last exit; steady: first trial start to last trial end "
                  "(start-up excluded); ratio: against one worker; load: 1-min load average before")
    return 0


if __name__ == "__main__":
    sys.exit(main())
