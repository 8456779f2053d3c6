"""Where a study's trials live, and every use of optuna's private API.

Owns: opening and validating storages (``storage``: SQLite, PostgreSQL, journal files, the
SQLite guard and the RDB schema check), the stored form of a trial (``stored``), read-only bulk
reads of a study (``optuna_read``), the in-memory mirror the samplers read (``mirror``), and
``optuna_compat``, the one adapter for optuna's private names (each checked by a test that fails
when optuna changes it).

Imports nothing else from ``dse.search``: every other sub-package may import it.
"""
