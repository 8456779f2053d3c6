"""The table "Where the targets stand" of docs/benchmarks/index.md is generated from the recorded
results, benchmarks/results.toml (each target's latest record), so it cannot keep a figure its
benchmarks no longer give (issue 45: the page said 1.26-1.34x for `--jobs 2` three days after
1.70x was measured). A record citing ``sources`` must state only numbers its cited entries hold.

Regenerate the table after adding a record: ``python tests/test_benchmark_targets.py``.
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.toml"
PAGE = ROOT / "docs" / "benchmarks" / "index.md"
BEGIN = "<!-- generated from benchmarks/results.toml by `python tests/test_benchmark_targets.py`; edit that file -->"
END = "<!-- end of the generated table -->"
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def targets() -> list[dict]:
    return tomllib.loads(RESULTS.read_text())["target"]


def latest(target: dict) -> dict:
    """The newest record (by date; of equal dates, the last written)."""
    return max(enumerate(target["record"]), key=lambda ir: (ir[1]["date"], ir[0]))[1]


def render(ts: list[dict]) -> str:
    """The table, one row per target with its latest record and when it was measured (a target
    without a record yet: "not measured yet")."""
    rows = ["| target | today | measured | benchmark | verdict |", "|---|---|---|---|---|"]
    for t in ts:
        if not t.get("record"):
            rows.append(f"| {t['name']} | not measured yet | - | `{t.get('benchmark', '')}` | - |")
            continue
        r = latest(t)
        bench = r.get("benchmark", t.get("benchmark", ""))
        rows.append(f"| {t['name']} | {r['figure']} | {r['date']}, {r['when']} | `{bench}` | {r['verdict']} |")
    return "\n".join(rows)


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
    assert got == want, (f"{PAGE.relative_to(ROOT)}: 'Where the targets stand' differs from "
                         f"benchmarks/results.toml: run `python tests/test_benchmark_targets.py`")


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


def test_a_target_awaiting_its_first_record_is_listed():
    row = render([{"name": "x at least y", "benchmark": "bench_x.py"}]).splitlines()[-1]
    assert row == "| x at least y | not measured yet | - | `bench_x.py` | - |"


def write() -> None:
    text = PAGE.read_text()
    old = page_table(text)
    PAGE.write_text(text.replace(old, render(targets()), 1))


if __name__ == "__main__":
    write()
    print(f"wrote the table of {PAGE.relative_to(ROOT)}", file=sys.stderr)
