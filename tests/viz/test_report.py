"""`dse report`: one self-contained HTML file (every section, no external URL, knee numbers equal
to `dse front --json`) and the Markdown variant with its PNGs beside it."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from dse.cli import main

SECTIONS = ["summary", "front", "knee-candidates", "knee", "reference", "explain", "pairwise-fronts",
            "parallel-coordinates", "breakdown", "hypervolume", "importance", "infeasibility", "robust", "version"]


class _Collect(HTMLParser):
    """Section ids, every URL-bearing attribute, and the cells of each table by id."""

    def __init__(self):
        super().__init__()
        self.sections, self.urls, self.tables = [], [], {}
        self._table = None
        self._row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        for k in ("src", "href", "action", "data", "poster", "srcset"):
            if k in a:
                self.urls.append(a[k])
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id", ""), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag == "td" and self._row is not None:
            self._row.append(a.get("data-value"))

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None


def test_report_html_is_self_contained_and_agrees_with_front(tmp_path, quickstart_study, capsys):
    out = tmp_path / "r.html"
    assert main(["report", *quickstart_study, "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    p = _Collect()
    p.feed(text)
    assert p.sections == SECTIONS
    # no external URL anywhere: only in-page anchors and embedded images
    assert all(u.startswith("#") or u.startswith("data:image/png;base64,") for u in p.urls), p.urls
    assert not re.search(r"\b(https?|ftp|wss?|file)://|url\(|src=\"(?!data:)", text)
    assert "<script" not in text and "@import" not in text
    capsys.readouterr()
    assert main(["front", *quickstart_study, "--json"]) == 0
    front = json.loads(capsys.readouterr().out)
    knee = front["knee"]
    row = p.tables["knee-table"][1]       # first body row: the knee
    objs = [float(v) for v in row[3:3 + len(front["objectives"])]]
    assert int(row[1]) == knee["trial"]
    assert objs == [knee["objectives"][o["name"]] for o in front["objectives"]]
    knee_rows = [r for r in p.tables["front-table"] if r and r[0] is not None and int(r[0]) == knee["trial"]]
    assert len(knee_rows) == 1
    assert len([r for r in p.tables["front-table"] if r]) == len(front["front"])
    cands = [r for r in p.tables["candidates-table"][1:] if r]
    assert [int(r[1]) for r in cands] == [c["trial"] for c in front["knee_candidates"]["candidates"]]
    archs = [r for r in p.tables["architectures-table"][1:] if r]
    assert [(int(r[-2]), int(r[-1])) for r in archs] == \
        [(a["best_trial"], a["designs"]) for a in front["knee_candidates"]["architectures"]]


def test_report_markdown_writes_pngs_beside_it(tmp_path, quickstart_study):
    out = tmp_path / "r.md"
    assert main(["report", *quickstart_study, "-o", str(out), "--no-reproduce"]) == 0
    md = out.read_text()
    for title in ("## Study summary", "## Pareto front", "## Knee candidates",
                  "## Knee and its five nearest alternatives", "## Pairwise fronts", "## Parallel coordinates",
                  "## Knee breakdown", "## Hypervolume", "## Knob importance", "## Why designs were infeasible",
                  "## Knee confidence", "## Model version"):
        assert title in md
    pngs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(pngs) >= 5
    for name in pngs:
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_report_shows_the_knee_frequency(tmp_path):
    from dse.search.front import robust
    from dse.viz.report import Figure, Table, robust_section
    from tests.search.review.test_quality import fake_eval, fake_study
    res = fake_study(tmp_path)
    rk = robust.robust_knees(res, robust.seed_variants(res.cfg, 3), fake_eval)
    sec = robust_section(res, rk)
    table = next(b for b in sec.blocks if isinstance(b, Table))
    assert sum(row[2] for row in table.rows) == 3                       # every re-evaluation has one knee
    assert {row[0] for row in table.rows} == {k for k in rk.knees}
    assert any(isinstance(b, Figure) for b in sec.blocks)


def test_report_shows_the_model_uncertainty_knees(tmp_path):
    from dse.search.front import model_uncertainty as mu
    from dse.viz.report import Table, robust_section
    from tests.search.review.test_quality import fake_eval, fake_study
    res = fake_study(tmp_path)
    mk = mu.model_uncertainty_knees(res, 3, fake_eval)
    sec = robust_section(res, None, mk)
    table = next(b for b in sec.blocks if isinstance(b, Table) and b.id == "model-uncertainty-table")
    assert sum(row[1] for row in table.rows) == pytest.approx(1.0)      # one knee per draw
    ff = mk.front_frequency()
    assert all(row[2] == ff[row[0]] for row in table.rows)
    assert {row[0] for row in table.rows} >= {k for k in mk.knees if k is not None}
    assert any("3 draws of the model's unknowns" in b for b in sec.blocks if isinstance(b, str))


def test_the_breakdown_energy_is_on_the_schedule_where_there_is_one():
    # the report split pool_energy_uj_per_token (pool power x the closed form's time per token) while
    # the study's latency objective is the scheduled time: 267.6 against 1,954 uJ on the quickstart's knee
    from dse.viz.report_figures import POWER_PARTS, breakdown_rows
    m = {k: 10.0 for k, _ in POWER_PARTS}
    m.update(pool_power_w=400.0, pool_energy_uj_per_token=120.0, ffn_us_per_token_scheduled=2.5)
    rows = breakdown_rows(m)
    energy = rows["pool energy per token, on the schedule (uJ)"]
    assert sum(v for _, v in energy) == pytest.approx(1000.0)
    assert all(v == pytest.approx(1000.0 / len(POWER_PARTS)) for _, v in energy)
    del m["ffn_us_per_token_scheduled"]                 # a closed-form study (trace = "catalog")
    assert sum(v for _, v in breakdown_rows(m)["pool energy per token, closed form (uJ)"]) == pytest.approx(120.0)
