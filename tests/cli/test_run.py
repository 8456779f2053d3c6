"""`dse run` on a bad space: one error line."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _write(tmp_path: Path, text: str, name: str = "space.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_cli_reports_bad_space_in_one_line(tmp_path):
    sp = _write(tmp_path, '[params]\ncore_side = { type = "int", low = 1, high = 30 }\n')
    st = _write(tmp_path, f"""
        [study]
        space = "{sp.name}"
        objectives = {{ objectives = [{{ metric = "t_layer_us" }}] }}
    """, "study.toml")
    r = subprocess.run([sys.executable, "-m", "dse", "run", str(st)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == (f"dse: error: {st}: study.space = 'space.toml': params.core_side.high = 30: must be an "
                        f"integer in [1, 20]\n")


def test_run_without_a_terminal_prints_progress_lines_and_next_steps(tmp_path, capsys):
    from dse.cli import main
    study = str(Path(__file__).resolve().parents[2] / "studies" / "quickstart.toml")
    url = f"sqlite:///{tmp_path / 'q.db'}"
    assert main(["run", study, "--storage", url, "--trials", "4"]) == 0      # batch 2: two batches
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.startswith("quickstart: ")]
    assert 1 <= len(lines) <= 2 and lines[-1].split(",")[0] == "quickstart: 4/4 trials"   # 2/4 only after 5 s
    assert all("trials/s" in ln and "ETA" in ln and "feasible" in ln and "front" in ln for ln in lines)
    nxt = cap.out.split("next steps (one command per line):\n", 1)[1].splitlines()
    assert [ln.split()[:2] for ln in nxt] == [["dse", "front"], ["dse", "report"], ["dse", "export"]]
    assert all("|" not in ln and f"quickstart.toml --storage {url}" in ln for ln in nxt)   # no pipeline


def _batches(lines, n_batches: int, batch: int, seconds_per_batch: float) -> list[str]:
    """Feed a BatchLines (fake clock) n_batches batches; the 'k/target' of each line it prints."""
    import contextlib
    import io
    clock = [0.0]
    bl = lines(clock=lambda: clock[0])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        for i in range(1, n_batches + 1):
            clock[0] = i * seconds_per_batch
            bl({"complete": i * batch, "target": n_batches * batch, "feasible": i, "front": 1,
                "elapsed_s": clock[0], "new_trials": i * batch})
    return [ln.split(",")[0].split(": ")[1] for ln in err.getvalue().splitlines()]


def test_batch_lines_print_every_tenth_at_most_every_5_s_and_a_heartbeat():
    from functools import partial

    from dse.cli.run import BatchLines
    lines = partial(BatchLines, "s")
    # the quickstart's 32 batches of 2: 32 lines before issue 45
    assert _batches(lines, 32, 2, 0.05) == ["64/64 trials"]                      # a fast run: the last line
    got = _batches(lines, 32, 2, 1.0)                                               # 1 s a batch
    assert got[-1] == "64/64 trials" and len(got) <= 11
    assert got[:2] == ["10/64 trials", "20/64 trials"]      # 5 s (a tenth and 5 s), 10 s (two more tenths)
    slow = _batches(lines, 5, 10, 90.0)                       # a batch every 90 s: each one shows
    assert slow == ["10/50 trials", "20/50 trials", "30/50 trials", "40/50 trials", "50/50 trials"]
    long = _batches(lines, 1000, 1, 2.0)                      # 2,000 s: every tenth, a heartbeat each minute
    assert {f"{100 * k}/1000 trials" for k in range(1, 11)} <= set(long) and 30 <= len(long) <= 2000 // 60 + 10


def test_quickstart_without_a_terminal_prints_at_most_20_lines(tmp_path):
    """The README's first command with stdout and stderr going to pipes (a log, CI): 40 lines before
    issue 45, 32 of them progress lines."""
    study = Path(__file__).resolve().parents[2] / "studies" / "quickstart.toml"
    r = subprocess.run([sys.executable, "-m", "dse", "run", str(study), "--storage", f"sqlite:///{tmp_path / 'q.db'}"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    out = (r.stdout + r.stderr).splitlines()
    progress = [ln for ln in out if ln.startswith("quickstart: ")]   # one per tenth after 5 s: none in ~2 s
    assert len(out) <= 20 and len(progress) <= 11
    assert any(ln.startswith("study quickstart: ") and " trials finished " in ln for ln in out)
    # issue 51: a study its own checks accept: no knob at a wall on most of the front, a settled knee
    assert not [ln for ln in out if ln.startswith("at a bound:")], out
    assert [ln for ln in out if ln.startswith("knee clear:")], out
