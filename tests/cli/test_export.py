"""`dse front` / `dse export`: the CLI round trip on the real model: run -> front (table, CSV, JSON) -> export ->
evaluate gives identical metrics; trials table; seeded exports are byte-identical."""
from __future__ import annotations

import csv
import io
import json
import tomllib

import pandas as pd

from dse.spec import DesignPoint
from tests.fixtures import run_dse as dse


def test_front_json_and_csv(study):
    r = dse("front", str(study), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["front"] and doc["knee"]["trial"] in [t["trial"] for t in doc["front"]]
    knee = doc["knee"]
    assert set(knee["params"]) == {"array_depth", "tile_width", "core_mesh_link_bits"}
    assert knee["metrics"]["feasible"] is True
    assert knee["metrics"]["ffn_latency_us_per_token"] == knee["objectives"]["ffn_latency_us_per_token"]
    for t in doc["front"]:   # front members are feasible and mutually non-dominated
        assert t["feasible"] and t["metrics"]["die_area_mm2"] <= t["metrics"]["die_area_budget_mm2"]
    vals = [(t["objectives"]["ffn_latency_us_per_token"], t["objectives"]["pool_power_w"]) for t in doc["front"]]
    for a in vals:
        assert not any(b[0] <= a[0] and b[1] <= a[1] and b != a for b in vals)
    c = dse("front", str(study), "--csv")
    rows = list(csv.DictReader(io.StringIO(c.stdout)))
    assert [int(x["trial"]) for x in rows] == [t["trial"] for t in doc["front"]]
    assert [x["knee"] for x in rows].count("*") == 1
    t = dse("front", str(study))
    assert f"* knee: trial {knee['trial']}" in t.stdout


def test_export_knee_round_trip(study, tmp_path):
    out = tmp_path / "design.toml"
    r = dse("export", str(study), "--knee", "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = tomllib.loads(out.read_text())
    assert set(doc) == {"hardware", "workload", "mapping", "metrics", "provenance"}
    prov = doc["provenance"]
    assert prov["study"] == "st" and prov["seed"] == 1 and prov["workload"] == "qwen3.5-35b-a3b"
    assert prov["stored_metrics_match"] is True and "package_version" in prov
    ev = dse("evaluate", str(out), "--json")
    assert ev.returncode == 0, ev.stderr
    fresh = json.loads(ev.stdout)
    for k, v in doc["metrics"].items():
        assert fresh[k] == v, k
    assert all(fresh[k] is None for k in set(fresh) - set(doc["metrics"]) - set(DesignPoint().to_dict()))
    # the file re-creates the design point
    front = json.loads(dse("front", str(study), "--json").stdout)
    pt = DesignPoint.from_file(out)
    for k, v in front["knee"]["params"].items():
        assert getattr(pt, k) == v
    # same study, same export, byte for byte
    out2 = tmp_path / "again.toml"
    dse("export", str(study), "--knee", "-o", str(out2))
    assert out2.read_text().split("\n", 2)[2] == out.read_text().split("\n", 2)[2]


def test_export_trial_and_errors(study, tmp_path):
    r = dse("export", str(study), "--trial", "999", "-o", str(tmp_path / "x.toml"))
    assert r.returncode == 2
    assert r.stderr == "dse: error: --trial 999: no such trial in study 'st' (trials 0..23)\n"
    r = dse("export", str(study), "--trial", "3", "-o", str(tmp_path / "t3.toml"))
    assert r.returncode == 0 and tomllib.loads((tmp_path / "t3.toml").read_text())["provenance"]["trial"] == 3
    r = dse("export", str(study), "--all", "-o", str(tmp_path / "x.xlsx"))
    assert r.returncode == 2 and "unknown table format '.xlsx'" in r.stderr
    r = dse("front", str(study), "--seed", "9")
    assert r.returncode == 2 and "no study 'st[seed=9]'" in r.stderr and r.stderr.count("\n") == 1


def test_export_all_trials_table(study, tmp_path):
    for ext in ("parquet", "csv"):
        out = tmp_path / f"trials.{ext}"
        r = dse("export", str(study), "--all", "-o", str(out))
        assert r.returncode == 0, r.stderr
        df = pd.read_parquet(out) if ext == "parquet" else pd.read_csv(out)
        assert len(df) == 24 and list(df["trial"]) == list(range(24))
        assert {"p.array_depth", "o.pool_power_w", "m.t_layer_us", "feasible", "reason"} <= set(df.columns)
        infeasible = df[~df["feasible"].astype(bool)]
        assert (infeasible["reason"].str.len() > 0).all()


def test_export_of_an_infeasible_trial_says_so(study, tmp_path):
    # the file's [metrics] come from the model alone (feasible = it maps); the study's own verdict
    # is in [provenance], and the message said nothing of it
    out = tmp_path / "trials.csv"
    assert dse("export", str(study), "--all", "-o", str(out)).returncode == 0
    df = pd.read_csv(out)
    bad = df[~df["feasible"].astype(bool)].iloc[0]
    good = df[df["feasible"].astype(bool)].iloc[0]
    r = dse("export", str(study), "--trial", str(int(bad["trial"])), "-o", str(tmp_path / "bad.toml"))
    assert r.returncode == 0, r.stderr
    assert r.stderr == (f"dse: warning: trial {int(bad['trial'])} is infeasible in study 'st': {bad['reason']} "
                        f"(the file's [provenance] feasible = false)\n")
    assert tomllib.loads((tmp_path / "bad.toml").read_text())["provenance"]["feasible"] is False
    r = dse("export", str(study), "--trial", str(int(good["trial"])), "-o", str(tmp_path / "good.toml"))
    assert r.returncode == 0 and r.stderr == ""
