"""A file of the wrong kind (a design, space, objectives file or catalog where a study is expected,
and back) is named for what it is in one line, with the command that takes it
(``dse.cli.filekind``); anything unclear is left to the command's own validator."""
from __future__ import annotations

import glob
from pathlib import Path

import pytest

from dse.cli.filekind import kind, kind_of, refusal, refuse
from dse.errors import ConfigError
from tests.fixtures import LATENCY_POWER_OBJECTIVES, SILICON36_SPACE, one_error_line, write_study
from tests.fixtures import cli as run_cli

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "hostile"

# As `dse export --knee` writes it (header comment, every section; [metrics]/[provenance] cut short).
DESIGN = """# Exported by `dse export` from study 'quickstart', trial 6.
[hardware]
core_side = 2
tile_width = 4
[workload]
model = "qwen3.5-35b-a3b"
batch = 128
[mapping]
pooling = "broadcast"
[metrics]
dies = 25
[provenance]
study = "quickstart"
trial = 6
"""


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    study = write_study(tmp_path, space=SILICON36_SPACE, objectives=LATENCY_POWER_OBJECTIVES, trials=2, batch=2)
    (tmp_path / "design.toml").write_text(DESIGN)
    (tmp_path / "flat.toml").write_text('core_side = 4\nmodel = "glm-5.2"\n')
    (tmp_path / "catalog.toml").write_text('[tiny]\nname = "tiny"\nexperts = 8\ntop_k = 2\n')
    return {"study": study, "design": tmp_path / "design.toml", "space": tmp_path / "space.toml",
            "objectives": tmp_path / "objectives.toml", "catalog": tmp_path / "catalog.toml",
            "flat": tmp_path / "flat.toml"}


def test_each_kind_is_recognised(files):
    assert {k: kind(p) for k, p in files.items()} == {
        "study": "study", "design": "design", "space": "space", "objectives": "objectives", "catalog": "catalog",
        "flat": "design"}


def test_the_shipped_files_are_recognised():
    for folder, expected in (("studies", "study"), ("spaces", "space"), ("objectives", "objectives")):
        paths = sorted((ROOT / folder).glob("*.toml"))
        assert paths and {p.name: kind(p) for p in paths} == {p.name: expected for p in paths}
    assert kind(ROOT / "dse" / "data" / "models.toml") == "catalog"


def test_unclear_files_have_no_kind(tmp_path):
    cases = {
        "empty.toml": "",
        "workload_only.toml": '[workload]\nmodels = ["glm-5.2"]\n',              # a study without [study]?
        "sampler_only.toml": '[sampler]\nname = "random"\n',
        "typo.toml": "[hardwares]\ncore_side = 4\n",
        "mixed.toml": '[params]\ncore_side = { type = "int", low = 1, high = 4 }\n[sampler]\nname = "tpe"\n',
        "syntax.toml": "[hardware\n",
        "info_not_a_table.toml": "metrics = 3\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert kind(tmp_path / name) is None, name
        refuse(tmp_path / name, "study", "run")                 # the command's own checks speak
    assert kind(tmp_path / "missing.toml") is None and kind(tmp_path) is None
    assert kind_of({"study": "not a table", "hardware": {}}) is None


def test_the_hostile_corpus_keeps_its_own_errors():
    """Broken studies and designs are never taken for another kind (their validators' lines stay)."""
    for folder, expected in (("study", "study"), ("design", "design")):
        paths = glob.glob(str(HOSTILE / folder / "*.toml"))
        assert paths
        assert {p: kind(p) for p in paths if kind(p) not in (expected, None)} == {}


@pytest.mark.parametrize("command", ["run", "front", "plot", "export", "explain", "worker", "report"])
def test_study_commands_refuse_a_design_file_in_one_line(capsys, files, command, tmp_path):
    extra = {"export": ["--knee", "-o", str(tmp_path / "k.toml")], "explain": ["--from", "knee", "--to", "0"],
             "report": ["-o", str(tmp_path / "r.html")], "run": ["--no-progress"]}.get(command, [])
    d = str(files["design"])
    err = one_error_line(*run_cli(capsys, command, d, *extra)[::2])
    assert err == (f"dse: error: {d} is a design file (as `dse export` writes it), not a study (what `dse {command}` "
                   f"takes): evaluate it with `dse evaluate {d}`\n")
    assert not (tmp_path / "results").exists()                      # refused before any storage is opened


@pytest.mark.parametrize("which,needle", [
    ("space", "is a space file (the knobs a study searches), not a study (what `dse run` takes): name it in a "
              "study file's [study] space"),
    ("objectives", "is an objectives file (what a study optimises), not a study (what `dse run` takes): name it "
                   "in a study file's [study] objectives"),
    ("catalog", "is a model catalog, not a study (what `dse run` takes): add its models with `dse --catalog"),
    ("flat", "is a design file (as `dse export` writes it), not a study (what `dse run` takes)"),
])
def test_dse_run_names_the_kind_of_file_it_was_given(capsys, files, which, needle):
    err = one_error_line(*run_cli(capsys, "run", str(files[which]), "--no-progress")[::2])
    assert f"dse: error: {files[which]} {needle}" in err
    assert "unknown section" not in err


def test_compare_and_grid_refuse_the_wrong_kind(capsys, files):
    err = one_error_line(*run_cli(capsys, "compare", str(files["study"]), str(files["design"]))[::2])
    assert f"{files['design']} is a design file" in err and "`dse compare`" in err
    err = one_error_line(*run_cli(capsys, "grid", str(files["study"]))[::2])
    assert err == (f"dse: error: {files['study']} is a study file, not a space file (what `dse grid` takes): "
                   f"run it with `dse run {files['study']}`\n")
    err = one_error_line(*run_cli(capsys, "grid", str(files["space"]), "--objectives", str(files["space"]))[::2])
    assert "is a space file (the knobs a study searches), not an objectives file" in err


def test_refuse_for_dse_evaluate(files):
    """The entry point `dse evaluate` calls: a study file, space or objectives file is refused, a
    design file (sectioned or flat) passes."""
    s = str(files["study"])
    with pytest.raises(ConfigError) as exc:
        refuse(s, expected="design", command="evaluate")
    assert str(exc.value) == (f"{s} is a study file, not a design file (what `dse evaluate` takes): run it with "
                              f"`dse run {s}` (then `dse export {s} --knee -o design.toml` writes its knee as a "
                              f"design)")
    for which in ("space", "objectives"):
        with pytest.raises(ConfigError, match=f"is an? {which} file"):
            refuse(files[which], expected="design", command="evaluate")
    refuse(files["design"], expected="design", command="evaluate")
    refuse(files["flat"], expected="design", command="evaluate")
    assert refusal(files["design"], "design", "evaluate") is None
    with pytest.raises(ValueError):
        refuse(files["design"], expected="trace", command="evaluate")
