"""The shipped notebooks execute top to bottom (quick start: a 24-trial study in a temp folder;
reproduction: the reference table and two sweeps), and what they show is what the library computes.
A failing cell fails the test.

Each notebook is executed with one extra cell appended (never saved) that prints, as one JSON line,
the kernel's own objects; the test compares them with the library called from this process."""
from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
MARK = "NOTEBOOK-STATE "

PROBES = {
    "quickstart.ipynb": (
        "import json as _j\n"
        "print(%r + _j.dumps({'complete': summary.complete, 'front': len(front), 'same': same,"
        " 'knee_in_front': knee.number in set(front['trial'])}))" % MARK),
    "reproduction.ipynb": (
        "import json as _j\n"
        "print(%r + _j.dumps({'statuses': {str(s): int(summary[s].sum()) for s in summary.columns},"
        " 'sides': list(table.index), 'occupancy': [float(x) for x in table['occupancy_bcast (ours)']]}))"
        % MARK),
}


def run_notebook(name: str) -> tuple[str, dict]:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(PROBES), "a notebook without a probe"
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        f"{name}: commit notebooks without outputs"
    nb.cells.append(nbformat.v4.new_code_cell(PROBES[name]))
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    text = json.dumps([c.get("outputs", []) for c in nb.cells if c.cell_type == "code"])
    probe = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("output_type") == "stream")
    assert probe.startswith(MARK), f"{name}: the probe cell printed {probe!r}"
    return text, json.loads(probe[len(MARK):])


def test_quickstart_notebook():
    text, state = run_notebook("quickstart.ipynb")
    assert '"output_type": "error"' not in text
    assert text.count('"image/png"') >= 2                  # the front and the parallel coordinates show
    removed = re.search(r"removed (dse-quickstart-\w+) -> False", text)
    assert removed and not (Path(tempfile.gettempdir()) / removed.group(1)).exists()   # its temp folder is gone
    assert "re-evaluated metrics identical to the exported ones: True" in text
    assert state["complete"] == 24 and state["same"] is True
    assert state["front"] >= 1 and state["knee_in_front"] is True


def test_reproduction_notebook():
    from dse.reproduce.registry import reproduce

    text, state = run_notebook("reproduction.ipynb")
    assert '"output_type": "error"' not in text
    # the summary table counts every reference entry under the verdict the library gives it
    assert state["statuses"] == dict(Counter(r.status for r in reproduce()))
    assert state["sides"] == ["side 2", "side 4", "side 6", "side 8"]
    assert all(0 < occ <= 1 for occ in state["occupancy"])


def test_the_docs_site_executes_every_notebook():
    """The site shows each notebook with today's outputs: docs/notebooks/ links to every notebook,
    the navigation lists it, and mkdocs-jupyter executes it on every build (no cache) and fails the
    build on an error (`mkdocs build --strict` in .ci/run)."""
    root = NOTEBOOKS.parent
    cfg = (root / "mkdocs.yml").read_text()
    plugin = cfg.split("- mkdocs-jupyter:", 1)[1].split("\n  - ", 1)[0]
    for key in ("execute: true", "cache: false", "allow_errors: false"):
        assert key in plugin, f"mkdocs.yml: mkdocs-jupyter needs {key}"
    for nb in NOTEBOOKS.glob("*.ipynb"):
        link = root / "docs" / "notebooks" / nb.name
        assert link.is_symlink() and link.resolve() == nb.resolve(), f"{link} must link to {nb}"
        assert f"notebooks/{nb.name}" in cfg.split("\nnav:", 1)[1], f"{nb.name} is not in the navigation"
