"""rexpert-dse: design-space exploration for resident near-memory MoE FFN pools.

Public entry points::

    from dse import DesignPoint, evaluate
    r = evaluate(DesignPoint.from_dict({"core_side": 4, "model": "qwen3.5-35b-a3b"}))
    r.metrics["t_layer_us"]
"""
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("rexpert-dse")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+src"

from dse.errors import DSEError  # noqa: E402
from dse.spec import DesignPoint  # noqa: E402
from dse.pipeline.evaluate import Result, evaluate  # noqa: E402

__all__ = ["DSEError", "DesignPoint", "Result", "evaluate", "__version__"]
