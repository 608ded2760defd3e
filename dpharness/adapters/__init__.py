"""Audit DP libraries as they ship: OpenDP measurements, diffprivlib mechanisms, tools and models,
and python-dp aggregations as auditable mechanisms (docs/adapters.md). One module per library:

* :func:`opendp` (:mod:`~dpharness.adapters.opendp_`) -- an OpenDP ``Measurement`` (or a factory
  building one): its privacy map, input metric and output measure are read from the object and
  become a privacy-map claim (:mod:`dpharness.verifiers.claims`), so every audited pair is held to
  ``measurement.map`` at its own distance.
* :func:`diffprivlib_mechanism`, :func:`diffprivlib_tool`, :func:`diffprivlib_model` (or the
  dispatcher :func:`diffprivlib`; :mod:`~dpharness.adapters.diffprivlib_`) -- a diffprivlib
  mechanism object (epsilon, delta and sensitivity read from it), a function of
  ``diffprivlib.tools`` (epsilon from the arguments) or an (unfitted) estimator of
  ``diffprivlib.models`` (its parameter vector is the release).
* :func:`pydp` (:mod:`~dpharness.adapters.pydp_`) -- an aggregation of Google's python-dp
  (``pydp.algorithms.laplacian``: counts, bounded sums, means, variances, quantiles) with its
  constructor arguments; epsilon, delta and the contribution bound are read from the object it builds.
  It hands python-dp's other ε-claiming objects to :func:`pydp_numerical`, :func:`pydp_partition_selection`,
  :func:`pydp_quantile_tree` and :func:`pydp_ml` (:mod:`~dpharness.adapters.pydp_mechanisms`).
* :func:`adapt` -- picks one of these from where the object comes from; :func:`from_target` builds
  the mechanism of an import path ``"pkg.mod:Name"`` with its arguments (``library:`` in audit
  configs). Both go through :data:`LIBRARIES`, the one table of libraries.

Each returns a :class:`dpharness.verifiers.WrappedMechanism` that ``verifiers.audit``,
``verifiers.search`` and ``dpharness.testing.assert_dp`` take as they are. The libraries are
imported when an adapter is built, never when this package is; a missing one raises
:class:`MissingLibrary` (an ``ImportError``) with the install hint (:mod:`~dpharness.adapters.common`
holds the one :func:`require`). Adapted mechanisms audit floating-point leaks by default
(``float_events=True``): they are third-party float code.

Randomness: diffprivlib (0.6+) is seeded from the audit's generator (an integer ``random_state``
drawn from it), so its audits are reproducible; earlier diffprivlib releases, OpenDP and python-dp
draw from the operating system and cannot be seeded, so their audits are valid but not bit-reproducible
(the adapted object's ``seeded`` attribute says which).

Releases: the same calls work from OpenDP 0.3 and diffprivlib 0.4 on (docs/adapters.md,
"Versions tested"); what an old release does not describe (OpenDP's metric and measure before
0.7, its map before 0.5) is inferred from the object.

Adding a library: a module ``<library>_.py`` with its adapter(s) and ``LIBRARY = Library(...)``
(:class:`~dpharness.adapters.library.Library`), its names imported below and its ``LIBRARY`` in
:data:`LIBRARIES`.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from dpharness.adapters import diffprivlib_, opendp_, pydp_
from dpharness.adapters.common import DEFAULT_DELTA, INSTALL_HINT, MissingLibrary, require
from dpharness.adapters.diffprivlib_ import (MODEL_OUTPUTS, TOOL_RELATIONS, diffprivlib, diffprivlib_mechanism,
                                             diffprivlib_model, diffprivlib_tool)
from dpharness.adapters.library import Library, Target, TargetError, did_you_mean
from dpharness.adapters.opendp_ import OPENDP_MEASURES, OPENDP_METRICS, opendp
from dpharness.adapters.pydp_ import PYDP_ALGORITHMS, pydp
from dpharness.adapters.pydp_mechanisms import pydp_ml, pydp_numerical, pydp_partition_selection, pydp_quantile_tree
from dpharness.verifiers.intake import register_recogniser

if TYPE_CHECKING:  # the verifier is imported when an adapter is built: reading the table of libraries stays cheap
    from dpharness.verifiers.wrap import WrappedMechanism

__all__ = ["INSTALL_HINT", "MissingLibrary", "require", "opendp", "OPENDP_METRICS", "OPENDP_MEASURES", "DEFAULT_DELTA",
           "diffprivlib", "diffprivlib_mechanism", "diffprivlib_tool", "diffprivlib_model", "TOOL_RELATIONS",
           "MODEL_OUTPUTS", "pydp", "PYDP_ALGORITHMS", "pydp_numerical", "pydp_partition_selection",
           "pydp_quantile_tree", "pydp_ml", "adapt", "from_target", "TargetError", "Library", "LIBRARIES",
           "TARGET_ROOTS"]

#: The libraries, in the order :func:`adapt` tries them (the first that owns or recognises an object wins).
LIBRARIES: tuple[Library, ...] = (opendp_.LIBRARY, diffprivlib_.LIBRARY, pydp_.LIBRARY)
#: The top-level modules a :func:`from_target` import path may start with ("opendp", "diffprivlib", "pydp").
TARGET_ROOTS: tuple[str, ...] = tuple(lib.root for lib in LIBRARIES)


def _takes_list() -> str:
    said = [lib.takes for lib in LIBRARIES]
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])}, or {said[-1]}"


def adapt(obj: Any, **kwargs: Any) -> WrappedMechanism:
    """The adapter for ``obj``, chosen from where it comes from: an OpenDP ``Measurement``
    (:func:`opendp`), a diffprivlib mechanism, tool (pass ``epsilon=``) or estimator
    (:func:`diffprivlib`), or a python-dp object (:func:`pydp`: a class of
    ``pydp.algorithms.laplacian`` or ``QuantileTree`` with its constructor arguments, a numerical
    mechanism, a partition selection strategy or its factory, a ``pydp.ml`` mechanism).
    ``kwargs`` go to that adapter. A factory function of an OpenDP measurement cannot be told
    from any other function: pass it to :func:`opendp`."""
    module = getattr(obj, "__module__", "") if isinstance(obj, type) or callable(obj) else ""
    module = module or type(obj).__module__ or ""
    root = module.split(".")[0]
    for lib in LIBRARIES:
        if root in lib.modules or lib.recognises(obj):
            return lib.adapt(obj, **kwargs)
    if isinstance(obj, str):
        for lib in LIBRARIES:
            if lib.takes_any_name:  # e.g. a name of diffprivlib.tools
                return lib.adapt(obj, **kwargs)
    raise TypeError(f"adapt takes {_takes_list()}; got {type(obj).__name__} from module {module or '?'!r} (wrap "
                    f"other code with dpharness.verifiers.wrap)")


def _resolve(path: str, module: Any) -> Any:
    """The attribute ``path`` names (``"pkg.mod:Name"``, ``Name`` may be dotted) of its imported module."""
    module_name, _, attr = path.partition(":")
    obj, done = module, module_name
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(obj) if not n.startswith("_") and not inspect.ismodule(getattr(obj, n, None)))
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            raise TargetError(f"{done!r} has no attribute {part!r}{did_you_mean(part, names)}; its public names: "
                              f"{shown or 'none'}", "library")
        obj = getattr(obj, part)
        done = f"{done}:{part}" if done == module_name else f"{done}.{part}"
    return obj


def from_target(target: str, params: dict | None = None, adapter: dict | None = None,
                build: str | None = None) -> WrappedMechanism:
    """The mechanism of a library's class or function named by ``target`` (``"pkg.mod:Name"``, e.g.
    ``"diffprivlib.mechanisms:Laplace"``), built with ``params`` and adapted with the ``adapter``
    options, as ``library:`` in audit configs does (docs/configs.md).

    ``build`` (optional): the import path of a factory ``f(**params)`` that returns the library's
    object, for what one constructor does not make (an OpenDP chain ``make_sum >> then_laplace``,
    a fitted preprocessing step); its result is handed to :func:`adapt` with the ``adapter``
    options, and ``target`` only names the library's public name it covers.

    Raises :class:`TargetError` (a ``ValueError``) whose ``field`` is the key at fault --
    ``library``, ``build``, ``params``, ``adapter``, ``params.NAME`` or ``adapter.NAME`` -- and
    :class:`MissingLibrary` when the library is not installed.
    """
    params, options = dict(params or {}), dict(adapter or {})
    if build is not None:
        return _from_factory(target, build, params, options)
    root = target.split(".", 1)[0].split(":", 1)[0]
    lib = next((lib for lib in LIBRARIES if lib.root == root), None)
    if lib is None:
        raise TargetError(f"names {target!r}, not a class or function of one of the libraries "
                          f"{', '.join(TARGET_ROOTS)}", "library")
    both = sorted(set(params) & set(options))
    if both:
        raise TargetError("is given in both params and adapter; give it once", f"adapter.{both[0]}")
    module = _import_target_module(target.split(":", 1)[0], lib)
    return lib.from_target(Target(target, _resolve(target, module), params, options))


def _import_target_module(module_name: str, lib: Library) -> Any:
    """The module of a target: :class:`MissingLibrary` (the peers extra) only when the library
    itself does not import; a module the installed library does not have is the target's mistake
    (:class:`TargetError` on ``library``, with the closest module it has)."""
    import importlib
    import pkgutil

    require(lib.root, lib.dist)  # MissingLibrary before anything else
    try:
        return require(module_name, lib.dist)
    except MissingLibrary as exc:
        cause = exc.__cause__
        missing = getattr(cause, "name", None) or ""
        if not (isinstance(cause, ModuleNotFoundError) and missing and
                (module_name == missing or module_name.startswith(missing + "."))):
            raise  # the module exists but one of its own imports fails: a broken install, said as such
        parent_name = missing.rpartition(".")[0] or lib.root
        parent = importlib.import_module(parent_name)
        subs = sorted(f"{parent_name}.{m.name}" for m in pkgutil.iter_modules(getattr(parent, "__path__", []))
                      if not m.name.startswith("_"))
        raise TargetError(f"{lib.dist} {_version(lib.dist)} has no module {missing!r}{did_you_mean(missing, subs)}; "
                          f"its modules: {', '.join(subs[:12])}{', ...' if len(subs) > 12 else ''}", "library") from None


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


def _from_factory(target: str, build: str, params: dict, options: dict) -> WrappedMechanism:
    import importlib

    root = target.split(".", 1)[0].split(":", 1)[0]
    lib = next((lib for lib in LIBRARIES if lib.root == root), None)
    if lib is None:
        raise TargetError(f"names {target!r}, not a class or function of one of the libraries "
                          f"{', '.join(TARGET_ROOTS)}", "library")
    require(root, lib.dist)
    module_name, _, attr = build.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"cannot import {module_name!r} ({exc})", "build") from None
    factory = _resolve(build, module) if attr else None
    if not callable(factory):
        raise TargetError(f"{build!r} is not a function (give 'package.module:function')", "build")
    t = Target(build, factory, params, options)
    made = t.make(**params)
    return t.call(f"dpharness.adapters.adapt ({lib.dist})", adapt, made, **options)


# the one intake of user code (assert_dp, a config's callable:) hands these libraries' objects to adapt
register_recogniser(adapt, packages=tuple(m for lib in LIBRARIES for m in lib.modules))
