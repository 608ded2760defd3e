"""dpharness: implement, benchmark and audit differentially private selection mechanisms.

Three layers, each importing only the ones below it:

* :mod:`dpharness.mechanisms` -- exact, vectorised mechanisms and their exact output laws;
* :mod:`dpharness.verifiers` -- the auditing library (statistical and exact privacy-loss bounds);
* :mod:`dpharness.bench` -- the harness: configs, the experiment runner, run folders, plots,
  regression checks, performance benchmarks and the ``dpharness`` command line.

The repository keeps the three layers as top-level folders (``mechanisms/``, ``verifiers/``,
``bench/``); packaging maps them under this one namespace, so no generic top-level name is
installed.
"""

from __future__ import annotations

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("dpharness")
except _metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
