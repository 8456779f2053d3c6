"""Tiny, safe arithmetic for conditional bounds in space files (never ``eval``).

A bound may be a number or an expression over knobs suggested earlier in the same space, e.g.
``high = "core_side**2"`` or ``high = "min(core_side * core_side, 16)"``. Allowed: numbers,
knob names, ``+ - * / // % **``, unary minus, parentheses, ``min``, ``max``. The expression is
parsed with :mod:`ast` and interpreted node by node over a whitelist.
"""
from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from typing import Any

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_FUNCS = {"min": min, "max": max}
ALLOWED = "numbers, knob names, + - * / // % **, parentheses, min(), max()"


class ExprError(ValueError):
    """A malformed or disallowed expression (the caller adds file and key)."""


def parse(text: str) -> ast.Expression:
    """Parse and check ``text``; raise ExprError naming what is not allowed."""
    if len(text) > 200:
        raise ExprError("expression longer than 200 characters")
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except SyntaxError:
        raise ExprError(f"not a valid expression (allowed: {ALLOWED})") from None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop)):
            if isinstance(node, ast.operator) and type(node) not in _BINOPS:
                raise ExprError(f"operator {type(node).__name__} not allowed (allowed: {ALLOWED})")
            if isinstance(node, ast.unaryop) and not isinstance(node, (ast.USub, ast.UAdd)):
                raise ExprError(f"operator {type(node).__name__} not allowed (allowed: {ALLOWED})")
            continue
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ExprError(f"constant {node.value!r} not allowed (allowed: {ALLOWED})")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise ExprError(f"only min() and max() may be called (allowed: {ALLOWED})")
        elif not isinstance(node, (ast.Name, ast.BinOp, ast.UnaryOp)):
            raise ExprError(f"{type(node).__name__} not allowed (allowed: {ALLOWED})")
    return tree


def names(tree: ast.Expression) -> set[str]:
    """Knob names an expression refers to (function names excluded)."""
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def evaluate(tree: ast.Expression, env: Mapping[str, Any]) -> float | int:
    """Interpret a parsed expression with knob values from ``env``."""
    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise ExprError(f"unknown name {node.id!r}")
            v = env[node.id]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ExprError(f"{node.id} = {v!r} is not a number")
            return v
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(b) > 64:
                raise ExprError("exponent larger than 64")
            try:
                return _BINOPS[type(node.op)](a, b)
            except ZeroDivisionError:
                raise ExprError("division by zero") from None
        if isinstance(node, ast.Call):
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))  # type: ignore[union-attr]
        raise ExprError(f"{type(node).__name__} not allowed")

    out = ev(tree)
    if isinstance(out, float) and not math.isfinite(out):
        raise ExprError("result is not finite")
    return out
