"""The hardware hierarchy, one module per level: unit -> core -> die -> package -> node.

Each module holds small pure functions with units in their names (``unit_read_gbps``,
``die_capacity_bytes``); `dse.hardware.hierarchy` assembles them for one design point.
"""
