"""Mapping: expert sharding onto units (chunks, TP degree, D_used), pool die count,
and (trace-driven) scheduling of jobs onto PE groups."""
