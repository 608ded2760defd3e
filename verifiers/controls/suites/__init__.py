"""The peers' benchmark suites as audit targets: the API of :mod:`verifiers.suites.base`, with
every suite module imported so that its entries are registered."""

from dpharness.verifiers.controls.suites.base import SUITES, SuiteEntry, entries, get, suites

from dpharness.verifiers.controls.suites import dpsniper, library_bugs, statdp  # noqa: F401 - each registers its suite

__all__ = ["SuiteEntry", "SUITES", "entries", "get", "suites"]
