"""Running a study: trials asked, designs evaluated in parallel, results told and recorded.

Owns: evaluating one design and its design key (``evaluation``), the worker pools (``pool``,
``workers``, ``dask_pool``), per-process warm state (``warm``), the one trial lifecycle and the
design cache (``trials``), the grid sampler's queue (``grid_queue``), the progress line
(``progress``) and ``dse run`` itself (``runner``: ``run_study``).

May import every sub-package above except ``review``.
"""
