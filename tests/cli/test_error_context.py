"""Errors name their context: a file referenced from another names both files and the key;
`dse reproduce --only` matching nothing is an error, not an empty table."""
from __future__ import annotations

import shutil
from pathlib import Path

from dse.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_wrong_space_path_names_the_study_file_and_key(tmp_path, capsys):
    (tmp_path / "studies").mkdir()
    shutil.copytree(ROOT / "objectives", tmp_path / "objectives")
    study = tmp_path / "studies" / "x.toml"
    study.write_text((ROOT / "studies/quickstart.toml").read_text().replace("../spaces/quickstart.toml",
                                                                            "../spaces/y.toml"))
    assert main(["run", str(study), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == f"dse: error: {study}: study.space = '../spaces/y.toml': no such file\n"
    assert not (tmp_path / "studies" / "results").exists()


def test_error_inside_the_referenced_file_names_both(tmp_path, capsys):
    (tmp_path / "spaces").mkdir()
    (tmp_path / "spaces" / "y.toml").write_text("[params]\ncore_side = { type = 'int', low = 9, high = 2 }\n")
    shutil.copytree(ROOT / "objectives", tmp_path / "objectives")
    study = tmp_path / "x.toml"
    study.write_text((ROOT / "studies/quickstart.toml").read_text().replace("../spaces/quickstart.toml",
                                                                            "spaces/y.toml")
                     .replace("../objectives", "objectives"))
    assert main(["run", str(study), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dse: error: {study}: study.space = 'spaces/y.toml': ") and "core_side" in err
    assert err.count("\n") == 1


def test_reproduce_only_without_a_match_is_an_error(capsys):
    assert main(["reproduce", "--only", "nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--only 'nonexistent': no reference entry" in err and "latency_35b" in err
