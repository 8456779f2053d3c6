"""A study as a user writes it and as it is stored: the study file and its results read back.

Owns: loading and validating a study TOML into a ``StudyConfig`` (``study``), the metrics a study
may name (``study_metrics``), and a finished or running study read back as records, front and
knee (``results``: ``load_results``).

May import ``storage``, ``space``, ``front``, ``grid`` and ``propose``.
"""
