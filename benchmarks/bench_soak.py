"""Soak (issue 50): W `dse worker`s run a study to N COMPLETE trials on their own PostgreSQL while
workers are killed, a worker hangs past the heartbeat grace and the server restarts; then a fresh
process reads the study back and counts what is left.

    python benchmarks/bench_soak.py [--workers 8] [--trials 20000] [--kills 8] [--restarts 2] [--stops 2]
        [--study FILE] [--dump FILE] [--heartbeat 2] [--seed 0] [--time-limit S]

* The server: a throw-away PostgreSQL (Debian's package; as the `postgres` user when run as root)
  whose only role has a random password beginning `soak-secret-`. It reaches the workers only
  through `DSE_STORAGE`; the password is then looked for in every worker's command line (sampled
  while it runs), output, the study's attributes, `dse study list`, `dse front --json` and the dump.
* The study: `--study FILE` (its sampler and space), or by default a cheap closed-form one (random
  sampler, catalog unions, ~20,600 designs of five knobs so that about a third of 20,000 trials
  repeat a design, latency and power under the area budget, batches of 8).
* Faults, at random fractions of the target (seeded): `--kills` SIGKILLs of a random worker, each
  followed by a replacement; `--restarts` `pg_ctl restart -m fast`; `--stops` SIGSTOPs of a worker
  for the heartbeat grace (3 x `--heartbeat`) plus 2 heartbeats, then SIGCONT: a hung worker.
* The read-back (`dse.distributed.audit`, a fresh process): exactly N COMPLETE, nothing RUNNING
  or WAITING, every trial a dead or hung worker held re-queued with its parameters or failed with
  its reason, no design completed twice but the documented repeats, the front equal to a front
  recomputed from the stored trials, trials/s per minute; each worker's peak RSS (wait4).
* `--dump FILE`: every trial as one JSON line. Exit status 0 when nothing is lost, duplicated or
  leaked, every fault fired and the fronts agree. The last line:
  `soak: N complete, K kills, R restarts, S stops, L lost, D duplicates, T trials/s`
  (T: complete trials over the wall time from the first worker's start to the last one's exit).
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import random
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))   # the checkout: tests.fixtures
from tests.fixtures import LATENCY_POWER_OBJECTIVES, write_study  # noqa: E402

SOAK_SPACE = """
[params]
array_depth = { type = "categorical", choices = ["16K", "20K", "24K", "28K", "32K"] }
tile_width = { type = "categorical", choices = [1, 2, 4, 8] }
core_mesh_link_bits = { type = "int", low = 256, high = 1024, step = 128 }
macro_mhz = { type = "float", low = 100, high = 300, step = 10 }
noc_ghz = { type = "float", low = 0.5, high = 2.0, step = 0.25 }
"""
STUDY_NAME = "soak"
POLL_S = 0.5
SCORED_SQL = ("SELECT count(*) FROM trials t WHERE t.state = 'COMPLETE' OR EXISTS (SELECT 1 FROM "
              "trial_user_attributes u WHERE u.trial_id = t.trial_id AND u.key = 'dse_values')")


# ---- the server -------------------------------------------------------------------------------
@dataclass
class Server:
    pgbin: str
    data: Path
    work: Path
    run_as: list[str]
    url: str
    restarts: list[float] = field(default_factory=list)    # seconds each restart took

    def ctl(self, *args: str) -> None:
        subprocess.run([*self.run_as, f"{self.pgbin}/pg_ctl", "-D", str(self.data), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def restart(self) -> None:
        t0 = time.perf_counter()
        self.ctl("-l", str(self.work / "log"), "-m", "fast", "-w", "-t", "120", "restart")
        self.restarts.append(time.perf_counter() - t0)

    def cpu_s(self) -> float:
        """CPU seconds of the postmaster and the backends it has reaped (since its last start)."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return float("nan")


@contextlib.contextmanager
def soak_server(password: str):
    """A throw-away PostgreSQL on 127.0.0.1 whose role `soak` has ``password``; yields a Server."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) for x in p.split("/")[-2].split(".")])
    if not bins:
        sys.exit("bench_soak: no PostgreSQL server binaries (apt-get install postgresql)")
    work = Path(tempfile.mkdtemp(prefix="dse-soak-pg."))
    run_as: list[str] = []
    if os.geteuid() == 0:            # initdb refuses root: Debian's postgres user runs the server
        run_as = ["runuser", "-u", "postgres", "--"]
        os.chmod(work, 0o755)
        shutil.chown(work, "postgres")
    pw = work / "pw"
    pw.write_text(password + "\n")
    if run_as:
        shutil.chown(pw, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = Server(bins[-1], work / "data", work, run_as, f"postgresql://soak:{password}@127.0.0.1:{port}/soak")
    try:
        subprocess.run([*run_as, f"{server.pgbin}/initdb", "-D", str(server.data), "-U", "soak",
                        "--auth=scram-sha-256", f"--pwfile={pw}", "--no-sync", "-E", "UTF8", "--locale=C"],
                       check=True, stdout=subprocess.DEVNULL)
        pw.unlink()
        opts = (f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                f"-c full_page_writes=off -c max_connections=300")
        server.ctl("-l", str(work / "log"), "-w", "-t", "60", "start", "-o", opts)
        import sqlalchemy as sa
        eng = sa.create_engine(server.url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
        with eng.connect() as c:
            c.execute(sa.text("CREATE DATABASE soak"))
        eng.dispose()
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.ctl("-m", "immediate", "-w", "stop")
        shutil.rmtree(work, ignore_errors=True)


# ---- the workers ------------------------------------------------------------------------------
@dataclass
class Worker:
    name: str
    proc: subprocess.Popen
    log: Path
    started: float
    rc: int | None = None
    peak_rss_mb: float = 0.0
    fate: str = ""               # "killed", "exit N"
    stopped_until: float | None = None
    replaced: bool = False       # exited with an error and was replaced


class Fleet:
    def __init__(self, args, study: Path, env: dict, work: Path, password: str):
        self.args, self.study, self.env, self.work, self.password = args, study, env, work, password
        self.workers: list[Worker] = []
        self.events: list[dict] = []
        self.leaks: list[str] = []
        self.unfired: list[str] = []             # faults that found no worker or came after the target
        self.t_done_wall: float | None = None    # when the target was reached (time.time())
        self.loads: list[float] = []             # the 1-minute load average at the end of each minute
        self.t0 = time.perf_counter()

    def start(self) -> Worker:
        name = f"soak-w{len(self.workers)}"
        log = self.work / f"{name}.log"
        cmd = [sys.executable, "-m", "dse", "worker", str(self.study), "--trials", str(self.args.trials),
               "--worker-id", name, "--heartbeat", str(self.args.heartbeat)]
        with open(log, "wb") as fh:
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=self.env, cwd=self.work)
        w = Worker(name, proc, log, time.perf_counter())
        self.workers.append(w)
        return w

    def running(self) -> list[Worker]:
        return [w for w in self.workers if w.rc is None]

    def reap(self) -> None:
        for w in self.running():
            self.check_title(w)
            pid, status, ru = os.wait4(w.proc.pid, os.WNOHANG)
            if pid:
                w.rc = os.waitstatus_to_exitcode(status)
                w.proc.returncode = w.rc
                w.peak_rss_mb = ru.ru_maxrss / 1024
                w.fate = w.fate or f"exit {w.rc}"

    def check_title(self, w: Worker) -> None:
        with contextlib.suppress(OSError):
            if self.password.encode() in Path(f"/proc/{w.proc.pid}/cmdline").read_bytes():
                self.leaks.append(f"{w.name}: process title")

    def event(self, kind: str, **kw) -> None:
        self.events.append({"kind": kind, "t": round(time.perf_counter() - self.t0, 1), "wall": time.time(), **kw})
        print(f"  {self.events[-1]['t']:7.1f} s  {kind} {' '.join(f'{k}={v}' for k, v in kw.items())}", flush=True)

    def victim(self, rng: random.Random) -> Worker | None:
        alive = [w for w in self.running() if w.stopped_until is None]
        return rng.choice(alive) if alive else None


def schedule(args, rng: random.Random) -> list[tuple[float, str]]:
    """The faults, each at a random fraction of the target (kills, restarts and stops interleaved)."""
    out = [(rng.uniform(0.05, 0.8), k) for k, n in (("kill", args.kills), ("restart", args.restarts),
                                                      ("stop", args.stops)) for _ in range(n)]
    return sorted(out)


def scored_count(engine) -> int | None:
    import sqlalchemy as sa
    try:
        with engine.connect() as c:
            return int(c.execute(sa.text(SCORED_SQL)).scalar_one())
    except Exception:   # noqa: BLE001 - the server is restarting
        return None


def drive(fleet: Fleet, server: Server, args) -> tuple[float, bool]:
    """Run the workers and the faults to the end; (wall seconds, timed out)."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool
    rng = random.Random(args.seed)
    todo = schedule(args, rng)
    engine = sa.create_engine(server.url, poolclass=NullPool)
    for _ in range(args.workers):
        fleet.start()
    done, timed_out = 0, False
    grace = 3 * args.heartbeat
    while fleet.running():
        time.sleep(POLL_S)
        fleet.reap()
        now = time.perf_counter()
        for w in fleet.workers:
            if w.stopped_until is not None and now >= w.stopped_until:
                os.kill(w.proc.pid, signal.SIGCONT)
                w.stopped_until = None
                fleet.event("cont", worker=w.name)
        for w in [w for w in fleet.workers if w.rc not in (None, 0) and w.fate != "killed" and not w.replaced]:
            w.replaced = True                       # exited on its own with an error: replace it
            if done < args.trials:
                fleet.event("replace", worker=w.name, rc=w.rc, by=fleet.start().name)
        n = scored_count(engine)
        done = n if n is not None else done
        if done >= args.trials and fleet.t_done_wall is None:
            fleet.t_done_wall = time.time()
        while todo and done >= todo[0][0] * args.trials and done < args.trials:
            _, kind = todo.pop(0)
            fire(fleet, server, kind, rng, grace, args.heartbeat)
        if now - fleet.t0 >= 60 * (len(fleet.loads) + 1):
            fleet.loads.append(os.getloadavg()[0])
        if now - fleet.t0 > args.time_limit:
            timed_out = True
            for w in fleet.running():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(w.proc.pid, signal.SIGCONT)
                    os.kill(w.proc.pid, signal.SIGKILL)
            fleet.event("time-limit", seconds=args.time_limit)
            time.sleep(1)
            fleet.reap()
            break
    engine.dispose()
    fleet.unfired += [k for _, k in todo]
    return time.perf_counter() - fleet.t0, timed_out


def fire(fleet: Fleet, server: Server, kind: str, rng: random.Random, grace: float, heartbeat: float) -> None:
    if kind == "restart":
        server.restart()
        fleet.event("restart", seconds=round(server.restarts[-1], 1))
        return
    w = fleet.victim(rng)
    if w is None:
        fleet.unfired.append(kind)
        return
    if kind == "kill":
        os.kill(w.proc.pid, signal.SIGKILL)
        w.fate = "killed"
        fleet.event("kill", worker=w.name, by=fleet.start().name)
    else:
        os.kill(w.proc.pid, signal.SIGSTOP)
        w.stopped_until = time.perf_counter() + grace + 2 * heartbeat
        fleet.event("stop", worker=w.name, seconds=grace + 2 * heartbeat)


# ---- the read-back (a fresh process, the password only in DSE_STORAGE) ---------------------------
def read_back(args) -> int:
    """Print the audit of the study as JSON (``--read-back``)."""
    from dse.cli.credentials import storage_url
    from dse.distributed.audit import audit, dump_line
    from dse.search.storage import optuna_compat as oc
    from dse.search.storage.optuna_read import read_trials
    from dse.search.storage.storage import open_storage, quiet_optuna
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    cfg = load_study(args.study, trials=args.trials, storage=storage_url(None))
    with quiet_optuna():
        storage = open_storage(cfg.storage, cfg.name, cfg.results_dir, read_only=True)
        sid = storage.get_study_id_from_name(cfg.name)
        directions = [d.name.lower() for d in storage.get_study_directions(sid)]
        trials = read_trials(oc.rdb(storage), sid)
    front = [r.number for r in load_results(cfg).front()]
    a = audit(trials, directions, args.trials, front)
    if args.dump:
        with open(args.dump, "w") as fh:
            for t in trials:
                fh.write(dump_line(t) + "\n")
    out = {k: v for k, v in a.__dict__.items()}
    out.update(lost_total=a.n_lost, duplicates_total=a.n_duplicates, front_equal=a.front_equal,
               first_minute=a.per_minute[0] if a.per_minute else 0.0, end_window=end_rate(trials),
               attrs_with_password=attrs_with(storage, secret_of(cfg.storage)))
    print(json.dumps(out, default=str))
    return 0


def secret_of(url: str) -> str:
    from dse.search.storage.storage import secrets_of
    return (secrets_of(url) or [""])[0]


def end_rate(trials) -> float:
    """Scored trials per second over the last 60 s before the last one completed."""
    from dse.search.storage.stored import is_scored
    ends = sorted(t.datetime_complete for t in trials if is_scored(t) and t.datetime_complete is not None)
    if not ends:
        return 0.0
    return sum((ends[-1] - e).total_seconds() <= 60 for e in ends) / 60


def attrs_with(storage, secret: str) -> int:
    """Rows of every attribute table and study name of the database holding ``secret``."""
    import sqlalchemy as sa

    from dse.search.storage import optuna_compat as oc
    if not secret:
        return 0
    n = 0
    with oc.rdb(storage).engine.connect() as c:
        for table, col in (("study_user_attributes", "value_json"), ("study_system_attributes", "value_json"),
                           ("trial_user_attributes", "value_json"), ("trial_system_attributes", "value_json"),
                           ("studies", "study_name"), ("trial_params", "distribution_json")):
            n += int(c.execute(sa.text(f"SELECT count(*) FROM {table} WHERE strpos({col}, :s) > 0"),
                               {"s": secret}).scalar_one())
    return n


# ---- the report ------------------------------------------------------------------------------------
def leaks_in(fleet: Fleet, texts: dict[str, str], password: str) -> list[str]:
    out = list(dict.fromkeys(fleet.leaks))
    for w in fleet.workers:
        if password.encode() in w.log.read_bytes():
            out.append(f"{w.name}: output")
    return out + [name for name, text in texts.items() if password in text]


def evaluated(w: Worker) -> str:
    for line in w.log.read_text(errors="replace").splitlines():
        if line.startswith(f"worker {w.name}: "):
            return line.split(": ", 1)[1].split(" trials evaluated", 1)[0]
    return "-"


def cause(fleet: Fleet, rb: dict, grace: float) -> str:
    """Why the last minute ran at less than half the first one's rate: the faults in it, or none."""
    end = fleet.t_done_wall or time.time()
    near = [e for e in fleet.events if end - 60 - grace - 10 <= e["wall"] <= end and e["kind"] != "cont"]
    if near:
        return "faults in the last minute: " + ", ".join(f"{e['kind']} at {e['t']} s" for e in near)
    if len(fleet.loads) > 1 and fleet.loads[-1] > 1.5 * fleet.loads[0]:
        return f"the machine's load rose from {fleet.loads[0]:.1f} to {fleet.loads[-1]:.1f} (other processes)"
    return "no fault in the last minute and no rise of the load: the study slows down as it grows"


def report(fleet: Fleet, server: Server, args, rb: dict, wall: float, timed_out: bool, leaks: list[str],
           cpu_s: float, server_cpu_s: float, load: tuple[float, float]) -> int:
    grace = 3 * args.heartbeat
    print(f"\nworkers ({len(fleet.workers)} started):")
    print(f"  {'worker':<10}{'fate':<10}{'evaluated':>10}{'peak RSS MB':>13}")
    for w in fleet.workers:
        print(f"  {w.name:<10}{w.fate:<10}{evaluated(w):>10}{w.peak_rss_mb:>13.0f}")
    for w in fleet.workers:
        if w.rc not in (None, 0) and w.fate != "killed":
            tail = w.log.read_text(errors="replace").strip().splitlines()[-12:]
            print(f"  {w.name} ({w.fate}), its last lines:\n" + "\n".join(f"    | {line}" for line in tail))
    rates = rb["per_minute"]
    print("trials/s per minute: " + ", ".join(f"{r:.1f}" for r in rates))
    print("load average per minute: " + ", ".join(f"{x:.1f}" for x in fleet.loads))
    first, end = rb["first_minute"], rb["end_window"]
    slow = end < first / 2
    print(f"throughput: first minute {first:.1f}/s, last 60 s {end:.1f}/s ({end / first if first else 0:.2f}x)"
          + (f"; below half: {cause(fleet, rb, grace)}" if slow else ""))
    print(f"held trials of dead or hung workers: {rb['held']} ({rb['requeued']} re-queued: "
          f"{rb['requeued'] - rb['undrawn']} with their parameters, {rb['undrawn']} held before their design "
          f"was drawn; "
          f"{rb['exhausted']} failed: retries exhausted, {len(rb['lost'])} lost {rb['lost'][:10]}, "
          f"{len(rb['changed_params'])} re-queued with other parameters)")
    print(f"trials: {rb['trials']} stored, {rb['complete']} complete (target {args.trials}), running {rb['running']}, "
          f"waiting {rb['waiting']}, {rb['surplus']} beyond the target (PRUNED unevaluated), "
          f"{rb['repeats']} documented repeats ({len(rb['bad_repeats'])} pointing elsewhere)")
    print(f"designs completed twice: {len(rb['duplicates'])} {list(rb['duplicates'].items())[:5]}")
    print(f"front: {len(rb['front'])} designs, recomputed from the stored trials: {len(rb['front_oracle'])}, "
          f"{'equal' if rb['front_equal'] else 'DIFFERENT'}")
    print(f"password: {'not found' if not leaks else 'FOUND in ' + ', '.join(leaks)} (process titles, worker "
          f"output, {rb['attrs_with_password']} attribute rows, dse study list, dse front --json, dump)")
    print(f"server restarts took {', '.join(f'{s:.1f} s' for s in server.restarts) or '-'}; faults not fired: "
          f"{fleet.unfired or 'none'}{'; TIME LIMIT' if timed_out else ''}")
    print(f"wall {wall:.0f} s; CPU: workers {cpu_s:.0f} s, server {server_cpu_s:.0f} s (since its last restart); "
          f"load average {load[0]:.2f} at start, {load[1]:.2f} at end, {os.cpu_count()} cores")
    lost, dups = rb["lost_total"], rb["duplicates_total"]
    kills = sum(e["kind"] == "kill" for e in fleet.events)
    restarts = sum(e["kind"] == "restart" for e in fleet.events)
    stops = sum(e["kind"] == "stop" for e in fleet.events)
    print(f"soak: {rb['complete']} complete, {kills} kills, {restarts} restarts, {stops} stops, {lost} lost, "
          f"{dups} duplicates, {rb['complete'] / wall:.1f} trials/s")
    bad = lost or dups or leaks or timed_out or fleet.unfired or not rb["front_equal"]
    return 1 if bad else 0


def check_args(ap: argparse.ArgumentParser, args) -> None:
    for name, low in (("workers", 1), ("trials", 1), ("kills", 0), ("restarts", 0), ("stops", 0), ("heartbeat", 1)):
        if getattr(args, name) < low:
            ap.error(f"--{name} {getattr(args, name)}: must be an integer >= {low}")
    if args.study is not None and not args.study.is_file():
        ap.error(f"--study {args.study}: no such file")
    if not args.time_limit > 0:
        ap.error(f"--time-limit {args.time_limit}: must be a positive number of seconds")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8, help="dse worker processes at a time (default 8)")
    ap.add_argument("--trials", type=int, default=20000, help="target COMPLETE trials (default 20000)")
    ap.add_argument("--kills", type=int, default=8, help="SIGKILLs of a random worker, each replaced (default 8)")
    ap.add_argument("--restarts", type=int, default=2, help="pg_ctl restart -m fast (default 2)")
    ap.add_argument("--stops", type=int, default=2, help="SIGSTOP of a worker past the heartbeat grace (default 2)")
    ap.add_argument("--study", type=Path, help="study file (default: a cheap closed-form random-sampler study)")
    ap.add_argument("--dump", type=Path, help="write every trial as one JSON line to this file")
    ap.add_argument("--logs", type=Path, help="copy the workers' output and the server log into this folder")
    ap.add_argument("--heartbeat", type=int, default=2, help="workers' heartbeat interval, s (default 2: grace 6 s)")
    ap.add_argument("--seed", type=int, default=0, help="study seed and fault schedule (default 0)")
    ap.add_argument("--time-limit", type=float, default=6 * 3600, help="give up after this many seconds")
    ap.add_argument("--read-back", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    check_args(ap, args)
    if args.read_back:
        return read_back(args)
    password = "soak-secret-" + secrets.token_hex(12)
    load0 = os.getloadavg()[0]
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    with tempfile.TemporaryDirectory(prefix="dse-soak-") as tmp, soak_server(password) as server:
        work = Path(tmp)
        study = args.study.resolve() if args.study else write_study(
            work, space=SOAK_SPACE, objectives=LATENCY_POWER_OBJECTIVES, file="soak.toml", name=STUDY_NAME,
            trials=args.trials, seed=args.seed, batch=8, sampler="random",
            workload='models = ["qwen3.5-35b-a3b"]\ntrace = "catalog"')
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG") and k != "DSE_STORAGE"}
        env.update(DSE_STORAGE=server.url, PYTHONUNBUFFERED="1")
        print(f"soak: {args.workers} workers, {args.trials} trials, {args.kills} kills, {args.restarts} restarts, "
              f"{args.stops} stops, heartbeat {args.heartbeat} s; study {study.name}; PostgreSQL on "
              f"{server.url.split('@')[1]} (password in DSE_STORAGE only); {os.cpu_count()} cores, load "
              f"{load0:.2f}; at {rev.stdout.strip()}", flush=True)
        fleet = Fleet(args, study, env, work, password)
        wall, timed_out = drive(fleet, server, args)
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_cpu = server.cpu_s()
        load1 = os.getloadavg()[0]
        dump = args.dump.resolve() if args.dump else work / "dump.jsonl"
        back = subprocess.run([sys.executable, __file__, "--read-back", "--study", str(study), "--trials",
                               str(args.trials), "--dump", str(dump)], capture_output=True, text=True, env=env,
                              cwd=work)
        if back.returncode != 0:
            print(back.stderr[-3000:], file=sys.stderr)
            return 1
        rb = json.loads(back.stdout)
        texts = {"read-back": back.stdout + back.stderr, "dump": dump.read_text()}
        for name, argv in (("dse study list", ["study", "list"]),
                           ("dse front --json", ["front", str(study), "--json"])):
            p = subprocess.run([sys.executable, "-m", "dse", *argv], capture_output=True, text=True, env=env, cwd=work)
            texts[name] = p.stdout + p.stderr
        print(texts["dse study list"].strip())
        if args.logs:
            args.logs.mkdir(parents=True, exist_ok=True)
            for f in [*work.glob("soak-w*.log"), server.work / "log"]:
                shutil.copy(f, args.logs / ("server.log" if f.parent == server.work else f.name))
        leaks = leaks_in(fleet, texts, password) + (["attributes"] if rb["attrs_with_password"] else [])
        return report(fleet, server, args, rb, wall, timed_out, leaks, cpu.ru_utime + cpu.ru_stime, server_cpu,
                      (load0, load1))


if __name__ == "__main__":
    sys.exit(main())
