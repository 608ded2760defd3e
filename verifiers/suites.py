"""The peers' benchmark suites as audit targets: the API of :mod:`verifiers.suite_base`, with
every suite module imported so that its entries are registered."""

from .suite_base import SUITES, SuiteEntry, entries, get, suites

from . import suite_statdp  # noqa: E402,F401
from . import suite_dpsniper  # noqa: E402,F401
from . import suite_library_bugs  # noqa: E402,F401

__all__ = ["SuiteEntry", "SUITES", "entries", "get", "suites"]
