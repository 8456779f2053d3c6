"""The typed Context: every stage reads only the fields that the caller or an earlier stage in
STAGES set, and every field a stage sets is declared on Context (no ad-hoc attributes)."""
from __future__ import annotations

import ast
import dataclasses
import inspect

from dse.pipeline.context import Context
from dse.pipeline.evaluate import STAGES

GIVEN = {"point", "workload", "metrics", "reasons"}          # set by evaluate() before any stage
METHODS = {"infeasible", "feasible", "number"}


def ctx_fields(stage) -> tuple[set[str], set[str]]:
    """(fields read, fields assigned) as ``ctx.<field>`` in the stage's module."""
    tree = ast.parse(inspect.getsource(inspect.getmodule(stage.run)))
    read, written = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ctx":
            (written if isinstance(node.ctx, ast.Store) else read).add(node.attr)
    return read, written


def test_stages_read_only_fields_set_before_them():
    declared = {f.name for f in dataclasses.fields(Context)}
    available = set(GIVEN)
    for stage in STAGES:
        read, written = ctx_fields(stage)
        assert written <= declared, f"{stage.name} sets undeclared Context fields {written - declared}"
        early = (read - METHODS) - available - written
        assert early == set(), f"{stage.name} reads {early} before any stage sets them"
        available |= written


def test_the_check_sees_reads_and_writes():
    # structure sets the objects the later stages read; routing reads the model it set
    read, written = ctx_fields(STAGES[0])
    assert {"model", "hierarchy", "sharding", "dies"} <= written
    read, written = ctx_fields(STAGES[1])
    assert "model" in read and {"union", "schedule"} <= written
