"""The table "Where the targets stand" of docs/benchmarks/index.md is generated from the recorded
results, benchmarks/results.toml (each target's latest record), so it cannot keep a figure its
benchmarks no longer give (issue 45: the page said 1.26-1.34x for `--jobs 2` three days after
1.70x was measured). A record citing ``sources`` must state only numbers its cited entries hold.

Each record names the commit it was measured at (``commit``: the code it is evidence of, or
``"unknown"``) and each target the code its benchmark covers (``covers``: paths of the
repository). The table marks a figure **stale** when a commit after the record's touched a covered
path (``git log <commit>..HEAD -- <covers>``), or the work tree changes one; "unknown" when git
cannot tell (no git, a shallow clone without the commit, a commit not recorded). A stale figure
is re-measured on main, after the merge, before an issue touching that code is resolved.

Regenerate the table after adding a record, or after a commit that changed covered code (this
test says so): ``python tests/test_benchmark_targets.py``.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.toml"
PAGE = ROOT / "docs" / "benchmarks" / "index.md"
BEGIN = "<!-- generated from benchmarks/results.toml by `python tests/test_benchmark_targets.py`; edit that file -->"
END = "<!-- end of the generated table -->"
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
SHA = re.compile(r"[0-9a-f]{7,40}")


def targets() -> list[dict]:
    return tomllib.loads(RESULTS.read_text())["target"]


def latest(target: dict) -> dict:
    """The newest record (by date; of equal dates, the last written)."""
    return max(enumerate(target["record"]), key=lambda ir: (ir[1]["date"], ir[0]))[1]


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None


def changed_since(commit: str, covers: list[str], root: Path = ROOT) -> list[str] | None:
    """The paths of ``covers`` that a commit after ``commit`` (``git log commit..HEAD``) or the
    work tree changed, in ``covers``' order; None when git cannot tell (no git or no repository,
    the commit unknown or absent, as in a shallow clone)."""
    if not SHA.fullmatch(commit or ""):
        return None
    found = _git(root, "cat-file", "-e", f"{commit}^{{commit}}")
    if found is None or found.returncode != 0:
        return None
    log = _git(root, "log", "--format=", "--name-only", f"{commit}..HEAD", "--", *covers)
    status = _git(root, "status", "--porcelain", "--untracked-files=all", "--", *covers)
    if log is None or status is None or log.returncode or status.returncode:
        return None
    files = [ln.strip() for ln in log.stdout.splitlines() if ln.strip()]
    files += [ln[3:].strip() for ln in status.stdout.splitlines() if ln.strip()]
    return [c for c in covers if any(f == c or f.startswith(c.rstrip("/") + "/") for f in files)]


def still_true(target: dict, root: Path = ROOT) -> str:
    """The table's last column for ``target``'s latest record: current, stale or unknown (one word:
    a figure turns stale once, and the page is regenerated once for it)."""
    r = latest(target)
    changed = changed_since(r.get("commit", ""), target.get("covers", []), root)
    if changed is None:
        return "unknown"
    if not changed:
        return "current"
    return "**stale**"      # which paths: `git log <commit>..HEAD -- <covers>` (the table says it once)


def render(ts: list[dict], root: Path = ROOT) -> str:
    """The table, one row per target with its latest record, when and at which commit it was
    measured, and whether the code its benchmark covers changed since."""
    rows = ["| target | today | measured | benchmark | verdict | code since |", "|---|---|---|---|---|---|"]
    for t in ts:
        if not t.get("record"):
            rows.append(f"| {t['name']} | not measured yet | - | `{t.get('benchmark', '')}` | - | - |")
            continue
        r = latest(t)
        bench = r.get("benchmark", t.get("benchmark", ""))
        rows.append(f"| {t['name']} | {r['figure']} | {r['date']}, {r['when']}, `{r.get('commit', 'unknown')}` "
                    f"| `{bench}` | {r['verdict']} | {still_true(t, root)} |")
    return "\n".join(rows)


def without_last_column(table: str) -> str:
    return "\n".join(ln.rsplit(" | ", 1)[0] for ln in table.splitlines())


def page_table(text: str) -> str:
    assert BEGIN in text and END in text, f"{PAGE}: the markers of the generated table are missing"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def entry_text(file: str, phrase: str) -> str:
    """The paragraph or list item of ``file`` that holds ``phrase`` (a dated entry)."""
    text = (ROOT / file).read_text()
    assert phrase in text, f"{file}: no entry holding {phrase!r}"
    blocks = re.split(r"\n(?=\s*[-*|] |\s*\n)", text)
    return " ".join(next(b for b in blocks if phrase in " ".join(b.split()) or phrase in b).split())


def test_the_page_shows_each_targets_latest_record():
    got, want = page_table(PAGE.read_text()), render(targets())
    head = _git(ROOT, "rev-parse", "HEAD")
    if head is None or head.returncode:
        got, want = without_last_column(got), without_last_column(want)     # no repository: no history
    assert got == want, (f"{PAGE.relative_to(ROOT)}: 'Where the targets stand' differs from "
                         f"benchmarks/results.toml and the code's history (a record added, or covered "
                         f"code changed since a record): run `python tests/test_benchmark_targets.py`")


def test_every_record_names_its_commit_and_every_target_its_code():
    for t in targets():
        assert t.get("covers"), f"{t['name']}: no `covers` (the paths its benchmark measures)"
        missing = [c for c in t["covers"] if not (ROOT / c).exists()]
        assert not missing, f"{t['name']}: covers {missing}, not in the repository"
        for r in t.get("record", []):
            c = r.get("commit")
            assert c == "unknown" or SHA.fullmatch(c or ""), \
                f"{t['name']} ({r['date']}): commit = {c!r}, want a commit id or \"unknown\""


def test_a_record_states_only_numbers_its_sources_hold():
    cited = 0
    for t in targets():
        for r in t.get("record", []):
            if not r.get("sources"):
                continue
            text = " ".join(entry_text(s["file"], s["entry"]) for s in r["sources"])
            held = set(NUMBER.findall(text))
            missing = [n for n in NUMBER.findall(r["figure"]) if n not in held]
            assert missing == [], f"{t['name']} ({r['date']}): {missing} not in {[s['file'] for s in r['sources']]}"
            cited += 1
    assert cited, "no record cites its source"


def test_the_checks_fail_on_a_stale_figure():
    ts = targets()
    jobs = next(t for t in ts if t["name"].startswith("`--jobs 2`"))
    stale = PAGE.read_text().replace(latest(jobs)["figure"], "1.26-1.34x")
    assert page_table(stale) != render(ts)
    held = set(NUMBER.findall(entry_text("benchmarks/HISTORY.md", jobs["record"][-1]["sources"][0]["entry"])))
    assert "1.70" in held and "1.34" not in held


def _repo(path: Path) -> Path:
    """A git repository in ``path`` with two commits: a/x.py, b/y.py, then a/x.py changed."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    def git(*args):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)
    path.mkdir()
    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    for f in ("a/x.py", "b/y.py"):
        (path / f).parent.mkdir()
        (path / f).write_text("1\n")
    git("add", ".")
    git("commit", "-qm", "first")
    (path / "a" / "x.py").write_text("2\n")
    git("commit", "-qam", "second")
    return path


def _head(path: Path, rev: str = "HEAD") -> str:
    return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", rev], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_staleness_on_a_temporary_repository(tmp_path):
    repo = _repo(tmp_path / "r")
    first, second = _head(repo, "HEAD~1"), _head(repo)
    target = {"covers": ["a", "b"], "record": [{"date": "2026-12-01", "commit": first}]}
    assert changed_since(first, ["a", "b"], repo) == ["a"]            # a/x.py changed after the first
    assert changed_since(first, ["b"], repo) == []
    assert changed_since(second, ["a", "b"], repo) == []
    assert still_true(target, repo) == "**stale**"
    assert still_true({**target, "covers": ["b"]}, repo) == "current"
    (repo / "b" / "y.py").write_text("3\n")                            # the work tree counts too
    assert changed_since(second, ["a", "b"], repo) == ["b"]
    (repo / "b" / "z.py").write_text("new\n")
    (repo / "b" / "y.py").write_text("1\n")
    assert changed_since(second, ["a", "b"], repo) == ["b"]            # an untracked file under b
    # git cannot tell: a commit not recorded, not in the repository, no repository at all
    assert changed_since("unknown", ["a"], repo) is None
    assert changed_since("0123abc", ["a"], repo) is None
    assert changed_since(first, ["a"], tmp_path) is None
    assert still_true({**target, "record": [{"date": "2026-12-01", "commit": "unknown"}]}, repo) == "unknown"


def test_staleness_in_a_shallow_clone(tmp_path):
    repo = _repo(tmp_path / "r")
    first = _head(repo, "HEAD~1")
    shallow = tmp_path / "s"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True,
                   capture_output=True)
    assert changed_since(first, ["a"], shallow) is None                # the commit is not in the clone
    assert changed_since(_head(shallow), ["a"], shallow) == []


def test_the_table_says_stale_and_unknown(tmp_path):
    repo = _repo(tmp_path / "r")
    ts = [{"name": "t1", "benchmark": "b.py", "covers": ["a"],
           "record": [{"date": "2026-12-01", "when": "w", "figure": "1 s", "verdict": "met",
                       "commit": _head(repo, "HEAD~1")}]},
          {"name": "t2", "benchmark": "b.py", "covers": ["a"],
           "record": [{"date": "2026-12-01", "when": "w", "figure": "2 s", "verdict": "met", "commit": "unknown"}]}]
    rows = render(ts, repo).splitlines()
    assert rows[2].endswith("| met | **stale** |")
    assert rows[3].endswith("`unknown` | `b.py` | met | unknown |")


def write() -> None:
    text = PAGE.read_text()
    old = page_table(text)
    PAGE.write_text(text.replace(old, render(targets()), 1))


if __name__ == "__main__":
    write()
    print(f"wrote the table of {PAGE.relative_to(ROOT)}", file=sys.stderr)


def test_a_target_awaiting_its_first_record_is_listed():
    row = render([{"name": "x at least y", "benchmark": "bench_x.py", "covers": ["dse"]}]).split("\n")[-1]
    assert row == "| x at least y | not measured yet | - | `bench_x.py` | - | - |"
