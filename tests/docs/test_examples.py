"""Every ``console`` example of the README and the user guide runs, and prints what it shows.

Sybil (its markdown code-block parser) finds the ```console blocks of ``DOCUMENTS``; this module
runs each ``$ `` command with bash, in a temporary folder holding copies of the examples' files
(``studies/*.toml``, ``spaces/``, ``objectives/``, ``notebooks/``), one folder per document, the
blocks in document order: a block may read what an earlier one wrote (the quickstart's results,
``design.toml``).

How an example is read:

* a command is a line starting ``$ `` (a trailing ``\\`` continues it); its output is the lines
  up to the next command or the end of the block, stdout and stderr together in the order they
  were printed, as without a terminal (``COLUMNS=100``);
* a line ``...`` stands for any number of lines, ``...`` inside a line for any text in that line;
* a number is compared to the digits shown: the printed value must be within half a unit of the
  shown value's last digit (``1.93`` admits 1.93024, not 1.9351);
* runs of spaces count as one (a table may be re-aligned) and trailing spaces are ignored;
* a command shown without output must print nothing; one whose shown output has a line starting
  ``dse: error:`` must exit non-zero, every other one must exit 0.

Blocks that run a study of minutes (``LONG``: the catalog and full studies) are marked ``long``.
A document being rewritten may be left out for a while under ``EXCLUDED``, with the reason.

To update a document after an intended change of output, print what its examples print today::

    python tests/docs/test_examples.py README.md          # each command and its output, in order
"""
from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser

ROOT = Path(__file__).resolve().parents[2]
EXCLUDED: dict[str, str] = {}      # document -> why it is left out (none today)
DOCUMENTS = [p for p in ["README.md", "docs/getting-started.md",
                         *sorted(q.relative_to(ROOT).as_posix() for q in (ROOT / "docs" / "guide").glob("*.md"))]
             if p not in EXCLUDED]
LONG = re.compile(r"studies/(catalog|full)\.toml")      # a study of minutes, not seconds
COMMAND_TIMEOUT_S = 900
DIFF_LINES = 40                                         # of a failure's diff shown
NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"


@dataclass
class Command:
    text: str
    expected: list[str]
    line: int                                   # of the command in the document


@dataclass
class Block:
    document: str
    line: int
    commands: list[Command]

    @property
    def long(self) -> bool:
        return any(LONG.search(c.text) for c in self.commands)


def commands(source: str, first_line: int) -> list[Command]:
    """The commands of one console block and the output shown after each."""
    out: list[Command] = []
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("$ "):
            text, start = ln[2:], i
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + "\n" + lines[i]
            out.append(Command(text, [], first_line + start))
        elif out:
            out[-1].expected.append(ln)
        elif ln.strip():
            raise AssertionError(f"line {first_line + i}: output before any `$ ` command: {ln!r}")
        i += 1
    return out


def blocks(document: str) -> list[Block]:
    """The console blocks of ``document`` (a path relative to the repository), found by sybil."""
    found: list[Block] = []
    sybil = Sybil(parsers=[CodeBlockParser("console", lambda example: None)])
    for ex in sybil.parse(ROOT / document):
        found.append(Block(document, ex.line, commands(str(ex.parsed), ex.line + 1)))
    return found


def pattern(expected: list[str]) -> tuple[re.Pattern, list[str]]:
    """A regex for the shown output (module docstring) and the numbers shown, in order."""
    parts: list[str] = []
    shown: list[str] = []
    for ln in expected:
        ln = ln.rstrip()
        if ln.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        pieces = []
        for chunk in ln.split("..."):
            rx = []
            for tok in re.findall(rf"{NUMBER}|\s+|[^\s\d+-]+|[+-]", chunk):
                if re.fullmatch(NUMBER, tok):
                    rx.append(f"({NUMBER})")
                    shown.append(tok)
                elif tok.isspace():
                    rx.append(r"[ \t]+")
                else:
                    rx.append(re.escape(tok))
            pieces.append("".join(rx))
        parts.append("[^\n]*?".join(pieces) + r"[ \t]*\n")
    return re.compile("".join(parts)), shown


def digits_agree(shown: str, printed: str) -> bool:
    """Whether ``printed`` is within half a unit of the last digit of ``shown``."""
    mant, _, exp = shown.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    unit = 10.0 ** (int(exp or 0) - decimals)
    return abs(float(printed) - float(shown)) <= 0.5 * unit * (1 + 1e-9)


def matches(expected: list[str], printed: str) -> bool:
    """Whether ``printed`` is what ``expected`` shows (module docstring)."""
    rx, shown = pattern(expected)
    text = "".join(ln.rstrip() + "\n" for ln in printed.splitlines())
    m = rx.fullmatch(text)
    return m is not None and all(digits_agree(s, p) for s, p in zip(shown, m.groups()))


def workspace(tmp: Path) -> Path:
    """A folder holding copies of the files the examples name."""
    for sub in ("spaces", "objectives", "notebooks"):
        shutil.copytree(ROOT / sub, tmp / sub)
    (tmp / "studies").mkdir()
    for f in (ROOT / "studies").glob("*.toml"):
        shutil.copy(f, tmp / "studies" / f.name)
    return tmp


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSE_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", PYTHONUNBUFFERED="1",
               COLUMNS="100", LC_ALL="C.UTF-8")
    return env


def run(command: Command, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    if re.search(r"(^|\|)\s*jq\b", command.text, re.M) and shutil.which("jq") is None:
        pytest.fail(f"line {command.line}: the example pipes into jq, which is not installed (apt-get install jq)")
    r = subprocess.run(["bash", "-o", "pipefail", "-c", command.text], cwd=cwd, env=env, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT_S)
    return r.returncode, r.stdout


def check(block: Block, cwd: Path, env: dict[str, str]) -> list[str]:
    """The failures of one block's commands (empty: every command printed what it shows)."""
    failures = []
    for c in block.commands:
        rc, out = run(c, cwd, env)
        where = f"{block.document}:{c.line}: $ {c.text}"
        error = any(ln.startswith("dse: error:") for ln in c.expected)
        if error != (rc != 0):
            failures.append(f"{where}\n  exit status {rc} ({'an error is shown' if error else 'no error is shown'})"
                            f"\n  printed:\n" + "\n".join(out.splitlines()[:DIFF_LINES]))
        elif not matches(c.expected, out):
            diff = list(difflib.unified_diff(c.expected, out.splitlines(), "shown", "printed", lineterm=""))
            more = f"\n  ... ({len(diff) - DIFF_LINES} more diff lines)" if len(diff) > DIFF_LINES else ""
            note = "  (- shown, + printed; a shown `...` stands for any lines, so it shows in the diff)"
            failures.append(f"{where}\n{note}\n" + "\n".join(diff[:DIFF_LINES]) + more)
    return failures


def cases():
    for doc in DOCUMENTS:
        bs = blocks(doc)
        for long in (False, True):
            sel = [b for b in bs if b.long == long]
            if sel:
                yield pytest.param(doc, long, id=f"{doc}{'-long' if long else ''}",
                                   marks=[pytest.mark.long] if long else [])


@pytest.mark.timeout(3600)
@pytest.mark.parametrize(("document", "long"), list(cases()))
def test_console_examples_print_what_they_show(document, long, tmp_path):
    cwd, env = workspace(tmp_path), environment()
    failures = []
    for b in blocks(document):
        if b.long == long:
            failures += check(b, cwd, env)
    assert not failures, "\n\n".join(failures)


def test_the_documents_in_scope_exist():
    """The documents listed exist, and the excluded ones still do (delete their line once in scope)."""
    for doc in [*DOCUMENTS, *EXCLUDED]:
        assert (ROOT / doc).is_file(), doc


@pytest.mark.parametrize(("expected", "printed", "ok"), [
    (["1.93"], "1.93024\n", True),
    (["1.93"], "1.9351\n", False),
    (["1.94"], "1.93024\n", False),
    (["64 trials, 46 feasible"], "64 trials, 46 feasible\n", True),
    (["64 trials, 47 feasible"], "64 trials, 46 feasible\n", False),
    (["a  b"], "a b   \n", True),
    (["first", "...", "last"], "first\nx\ny\nlast\n", True),
    (["first", "...", "last"], "first\nlast\n", True),
    (["took ... s, done"], "took 0.8 s, done\n", True),
    (["took ... s, done"], "took 0.8 s, gone\n", False),
    ([], "", True),
    ([], "something\n", False),
    (['"chunk of 18432 columns"'], '"chunk of 18432 columns"\n', True),
    (["qwen3.5-35b-a3b: 2.5e-03"], "qwen3.5-35b-a3b: 0.0025\n", True),
])
def test_the_comparison(expected, printed, ok):
    assert matches(expected, printed) is ok


if __name__ == "__main__":
    import tempfile
    for doc in sys.argv[1:] or DOCUMENTS:
        with tempfile.TemporaryDirectory() as d:
            cwd, env = workspace(Path(d)), environment()
            for b in blocks(doc):
                for c in b.commands:
                    rc, out = run(c, cwd, env)
                    print(f"# {doc}:{c.line} (exit {rc})\n$ {c.text}\n{out}", end="", flush=True)
