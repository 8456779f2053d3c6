"""Vectorised closed-form evaluation: numpy over tables of design points (see `evaluate`)."""
from dse.vector.columns import Columns
from dse.vector.evaluate import evaluate_chunks, evaluate_columns

__all__ = ["Columns", "evaluate_columns", "evaluate_chunks"]
