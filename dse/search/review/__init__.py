"""Reading a finished study out: designs exported to files that re-evaluate to the same numbers
(``export``), and the quality of a front (hypervolume on a stated reference, knee history,
several studies compared: ``quality``).

The top of ``dse.search``: may import every other sub-package.
"""
