"""The installed package's version (``0.0.0+src`` in a source tree that is not installed)."""
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:
    __version__ = _version("rexpert-dse")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+src"
