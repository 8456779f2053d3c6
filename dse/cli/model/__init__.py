"""Commands about one design and the model itself (no study): ``dse evaluate``, ``compare``,
``sweep``, ``trace``, ``params`` / ``constants`` (``info``), ``reproduce`` and ``init``. The study
commands (run, front, plot, export, report, explain, worker, grid) sit in ``dse.cli``."""
