"""Build hook (the rest of the build is in pyproject.toml): the wheel carries the repository's
example studies as package data, so `dse init DIR` works from a wheel without a checkout.

One copy: the files stay where the repository keeps them (``spaces/``, ``objectives/``,
``studies/``, ``notebooks/quickstart.ipynb``) and ``build_py`` copies them into the wheel's
``dse/data/examples/``; every ``studies/*.toml`` goes, so a new study needs no edit here. From a
checkout (editable install) `dse init` reads the same files in place. ``EXAMPLES`` is repeated in
``dse/cli/model/init.py``; tests/cli/model/test_init.py builds a wheel and checks both copy the same files.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

EXAMPLES = {"spaces": "*.toml", "objectives": "*.toml", "studies": "*.toml", "notebooks": "quickstart.ipynb"}


class BuildPyWithExamples(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):       # an editable install reads the checkout
            return
        root = Path(__file__).resolve().parent
        dest = Path(self.build_lib) / "dse" / "data" / "examples"
        shutil.rmtree(dest, ignore_errors=True)          # no stale file from an earlier build
        for folder, pattern in EXAMPLES.items():
            for f in sorted((root / folder).glob(pattern)):
                (dest / folder).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest / folder / f.name)


setup(cmdclass={"build_py": BuildPyWithExamples})
