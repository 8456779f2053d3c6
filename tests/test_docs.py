"""The documentation site and the README, checked without mkdocs (`.ci/run` builds the site with
`mkdocs build --strict`): every page of the navigation exists, the API pages name the public
entry points, and the README stays short and keeps the two set-up commands that `.ci/run` runs."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = ROOT / "mkdocs.yml"
DOCS = ROOT / "docs"
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"

README_MAX_LINES = 250
SETUP_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/dse run studies/quickstart.toml",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
    ".venv/bin/python -m pytest -q -n auto -m \"not long\"",
)
PUBLIC_SEARCH = ("load_study", "run_study", "load_results")
# Options .ci/run adds to the README's pytest command: no cache folder in the clone, and the
# caller's extra arguments.
CI_ONLY_PYTEST_ARGS = ("-p", "no:cacheprovider", "${PYTEST_ARGS:-}")
# Options of the README's command that .ci/run leaves out: the hourly run deselects the `long` tests.
README_ONLY_PYTEST_ARGS = ("-m", '"not long"')


def nav_files(text: str) -> list[str]:
    """The Markdown files named in mkdocs.yml's `nav:` (every `- Title: path.md` entry)."""
    nav = text.split("\nnav:", 1)[1]
    return re.findall(r"^\s*-\s*(?:\"[^\"]*\"|'[^']*'|[^:\n]+):\s*([\w./-]+\.md)\s*$", nav, flags=re.M)


def api_directives(page: str) -> list[str]:
    """The objects a page documents with mkdocstrings (`::: dotted.path`)."""
    return re.findall(r"^:::\s*([\w.]+)\s*$", page, flags=re.M)


def pytest_argv(line: str) -> list[str]:
    """The interpreter-less pytest command of a shell line: `python -m pytest ARGS...`."""
    words = shlex.split(line, posix=False)
    i = words.index("pytest")
    assert words[i - 1] == "-m", line
    return ["python", "-m", "pytest", *(w for w in words[i + 1:] if w != "&&")]


def readme_test_command(text: str) -> str:
    line = next(ln for ln in text.splitlines() if "-m pytest" in ln and not ln.lstrip().startswith("#"))
    return line.split("&&")[-1].strip()


def ci_test_command(text: str) -> str:
    lines = [ln for ln in text.splitlines()
             if "-m pytest" in ln and not ln.lstrip().startswith(("#", "log "))]
    assert len(lines) == 1, lines
    return lines[0].strip()


def test_every_nav_page_exists():
    files = nav_files(MKDOCS.read_text())
    assert len(files) >= 30, files
    missing = [f for f in files if not (DOCS / f).is_file()]
    assert missing == []
    assert len(set(files)) == len(files), "a page is listed twice"


def test_nav_parser_sees_quoted_titles_and_ignores_other_sections():
    text = "validation:\n  nav:\n    not_found: warn\nnav:\n  - Home: index.md\n  - Group:\n      - \"A: b\": g/a.md\n"
    assert nav_files(text) == ["index.md", "g/a.md"]


def test_every_docs_page_is_in_the_nav():
    listed = set(nav_files(MKDOCS.read_text()))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - listed == set()


def test_api_pages_name_the_public_search_functions():
    page = (DOCS / "api" / "search.md").read_text()
    documented = api_directives(page)
    for name in PUBLIC_SEARCH:
        assert any(d.endswith("." + name) for d in documented), name
    assert "dse.search.study.study.load_study" in documented
    assert "dse.search.execute.runner.run_study" in documented
    assert "dse.search.study.results.load_results" in documented


def test_api_pages_document_objects_that_exist():
    import importlib

    for page in (DOCS / "api").glob("*.md"):
        for path in api_directives(page.read_text()):
            parts = path.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
                break
            else:
                raise AssertionError(f"{page.name}: {path} does not import")


def test_readme_is_short_and_keeps_both_setup_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    for cmd in SETUP_COMMANDS:
        assert cmd in text.splitlines(), cmd


def test_readme_links_into_the_docs_resolve():
    text = README.read_text()
    links = re.findall(r"\]\(((?:docs|benchmarks)/[^)#\s]+)(?:#[^)]*)?\)", text)
    assert any(link.startswith("docs/") for link in links)
    assert "docs/img/quickstart-front.png" in links
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_readme_test_command_is_the_one_ci_runs():
    """.ci/run runs the README's command with the `long` tests back in, and its own options."""
    readme = pytest_argv(readme_test_command(README.read_text()))
    i = len(readme) - len(README_ONLY_PYTEST_ARGS)
    assert tuple(readme[i:]) == README_ONLY_PYTEST_ARGS, readme
    every = readme[:i]
    ci = pytest_argv(ci_test_command(CI.read_text()))
    extra = [w for w in ci if w not in every]
    assert ci[:len(every)] == every, (every, ci)
    assert tuple(extra) == CI_ONLY_PYTEST_ARGS, extra


def test_ci_installs_the_extras_the_readme_installs():
    readme_extras = re.search(r"pip install -e '\.\[([\w,]+)\]'", README.read_text()).group(1).split(",")
    ci_extras = re.search(r"pip install .*-e '\.\[([\w,]+)\]'", CI.read_text()).group(1).split(",")
    assert set(readme_extras) <= set(ci_extras)
    assert "docs" in ci_extras
    assert "mkdocs build --strict" in CI.read_text()
