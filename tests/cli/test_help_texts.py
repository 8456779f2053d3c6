"""Help texts a new user reads first: the docs pointer of `dse --help`, a description and a --json
help on every listing command, what `--model` / `--seed` derive, where `dse run` documents its file."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from dse.cli import build_parser, main
from tests.fixtures import SMALL_SPACE, TWO_MODEL_STUDY, write_small_study

ROOT = Path(__file__).resolve().parents[2]


def help_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_dse_help_ends_with_the_docs_and_command_help():
    text = build_parser().format_help()
    epilog = text.split("--catalog FILE", 1)[1]
    assert "`dse COMMAND --help`" in epilog
    named = re.findall(r"docs/[\w/.*-]+\.md", epilog)
    assert "docs/getting-started.md" in named and "docs/guide/*.md" in named
    for doc in named:                                      # every file it names is there
        assert list(ROOT.glob(doc)), doc
    assert all(len(line) <= 80 for line in epilog.splitlines())


@pytest.mark.parametrize("argv", [["params"], ["models"], ["constants"], ["study", "list"], ["study", "copy"]])
def test_listing_commands_have_a_description_and_json_help(capsys, argv):
    text = help_of(capsys, *argv)
    usage, description = text.split("\n\n")[:2]
    assert usage.startswith(f"usage: dse {' '.join(argv)}")
    assert not description.startswith(("positional arguments", "options")), text
    json_line = next(ln for ln in text.splitlines() if ln.strip().startswith("--json"))
    assert json_line.strip() != "--json" and "JSON" in json_line, text


@pytest.mark.parametrize("command", ["run", "plot", "export", "explain", "worker"])
def test_model_and_seed_help_say_what_study_they_address(capsys, command):
    text = " ".join(help_of(capsys, command).split())
    assert "sibling" not in text
    assert "a separate study named STUDY[model=NAME], with the same space and objectives, kept in the same " \
           "storage" in text
    assert "STUDY[seed=S]" in text


def test_the_model_help_describes_what_load_study_does(tmp_path):
    """What MODEL_HELP / SEED_HELP say: a study of its own name, same space, objectives and storage."""
    from dse.search.storage.storage import storage_label
    from dse.search.study.study import load_study
    p = write_small_study(tmp_path, TWO_MODEL_STUDY, space=SMALL_SPACE)
    base = load_study(p)
    one = load_study(p, model="glm-5.2")
    seeded = load_study(p, seed=3)
    assert one.name == "study[model=glm-5.2]" and seeded.name == "study[seed=3]" and base.name == "study"
    assert one.space == base.space and one.objectives == base.objectives and one.models == ("glm-5.2",)
    assert storage_label(one) == storage_label(base) == storage_label(seeded)


def test_run_help_points_to_the_study_file_guide(capsys):
    text = " ".join(help_of(capsys, "run").split())
    assert "docs/guide/studies.md" in text
    for doc in re.findall(r"docs/[\w/.-]+\.md", text):
        assert (ROOT / doc).is_file(), doc
