"""rexpert-dse: design-space exploration for resident near-memory MoE FFN pools.

Public entry points::

    from dse import DesignPoint, evaluate
    r = evaluate(DesignPoint.from_dict({"core_side": 4, "model": "qwen3.5-35b-a3b"}))
    r.metrics["t_layer_us"]
"""
from dse.errors import DSEError
from dse.pipeline.evaluate import Result, evaluate
from dse.spec import DesignPoint
from dse.version import __version__

__all__ = ["DSEError", "DesignPoint", "Result", "evaluate", "__version__"]
