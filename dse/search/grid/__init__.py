"""``dse grid``: every point of a discrete space through the vectorised closed form.

Owns: the exhaustive evaluation and its front (``grid``) and its output files (``grid_output``).

May import ``space`` and ``front``.
"""
