"""Workloads: the MoE model catalog, U(B) unions, routing traces and their statistics."""
