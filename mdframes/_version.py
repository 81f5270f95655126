"""The package's one version number: the installed metadata (pyproject.toml's ``version``)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mdframes")
except PackageNotFoundError:  # a source tree on sys.path, never installed
    __version__ = "0+unknown"
