"""Reproduction of the reference study's published figures (`dse reproduce`).

`dse/data/reference/rexpert-35b.toml` lists every published figure with a tolerance class.
Each figure the model can compute is registered with ``@figure("section.key")`` in one of the
``figures_*.py`` modules, which is where a newcomer finds how that number is computed.
"""
from dse.reproduce.registry import FIGURE_MODULES, Row, figure, reproduce

__all__ = ["FIGURE_MODULES", "Row", "figure", "reproduce"]
