"""What a study searches and what it asks for: the design space and the objective set.

Owns: the expression language of derived knobs and conditions (``expr``), the ``Space`` of knobs
and its TOML file (``space``, ``space_file``), and objectives, constraints and their aggregation
over workloads (``objectives``). Pure: no optuna, no storage.

Imports nothing else from ``dse.search``.
"""
