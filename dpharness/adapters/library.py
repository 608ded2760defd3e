"""What each library module declares (:class:`Library`), and what its config builder works with:
a :class:`Target` (``library: "pkg.mod:Name"`` with ``params`` and ``adapter`` options) whose
mistakes are :class:`TargetError`\\ s naming the *field* at fault (``library``, ``params``,
``adapter``, ``params.NAME`` or ``adapter.NAME``), so a caller maps them to its own config path
without reading the message.
"""

from __future__ import annotations

import difflib
import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpharness.adapters.common import MissingLibrary
from dpharness.mechanisms.base import ParamError

if TYPE_CHECKING:  # the verifier is imported when an adapter is built: reading the table of libraries stays cheap
    from dpharness.verifiers.wrap import WrappedMechanism

__all__ = ["Library", "Target", "TargetError", "did_you_mean", "keywords"]


def _never(obj: Any) -> bool:
    return False


def _no_api() -> list[str]:
    return []


@dataclass(frozen=True)
class Library:
    """One DP library the adapters read, as its module declares it (``LIBRARY = Library(...)``).

    ``adapt`` is its entry point for :func:`dpharness.adapters.adapt`, which picks the first library
    (in the order of :data:`dpharness.adapters.LIBRARIES`) whose ``modules`` hold the object's
    top-level module or which ``recognises`` it (objects told by shape or by name: an OpenDP
    measurement, a python-dp class name); a string no library recognises goes to the library that
    ``takes_any_name``. ``from_target`` builds the mechanism of a config's ``library:`` target
    whose import path starts with ``root``; ``api`` lists the installed release's ε-claiming public
    functions and classes (for ``dpharness sweep``).
    """

    #: package-index name, for install messages ("python-dp")
    dist: str
    #: top-level import name: what a ``library:`` target starts with ("pydp")
    root: str
    #: what :func:`dpharness.adapters.adapt` takes from it, for its error message
    takes: str
    adapt: Callable[..., WrappedMechanism]
    from_target: Callable[[Target], WrappedMechanism]
    #: top-level modules its objects come from (``root`` and, e.g., a compiled module)
    modules: tuple[str, ...] = ()
    recognises: Callable[[Any], bool] = _never
    takes_any_name: bool = False
    #: the installed release's public epsilon-claiming API as import paths ``"pkg.mod:Name"`` (what
    #: ``dpharness sweep`` holds its catalogue against; imports the library)
    api: Callable[[], list[str]] = _no_api


class TargetError(ValueError):
    """What is wrong with a ``library:`` target; ``field`` is the key at fault: ``library``,
    ``params``, ``adapter``, ``params.NAME`` or ``adapter.NAME``."""

    def __init__(self, message: str, field: str = "library") -> None:
        super().__init__(message)
        self.field = field


def did_you_mean(word: str, options: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options`` to a misspelt ``word``, else ``""``
    (worded as the harness's own hints, which this floor cannot import)."""
    by_lower = {str(o).lower(): str(o) for o in options}  # case slips first (Age for age)
    close = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and compiled classes may not describe themselves
        return None


def keywords(fn: Any) -> list[str]:
    """The keyword arguments ``fn`` names (a class: its constructor's), or [] if it cannot tell."""
    sig = _signature(fn)
    if sig is None:
        return []
    return [n for n, p in sig.parameters.items()
            if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _unknown_keywords(fn: Any, kw: dict) -> list[str]:
    """The names of ``kw`` that ``fn``'s signature does not take, in order (empty: all taken, or it
    takes ``**kwargs``, or its signature is unknown)."""
    sig = _signature(fn)
    if sig is None or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return []
    # a positional-only name passed by keyword is left to the call (its own TypeError says so)
    names = {n for n, p in sig.parameters.items() if p.kind is not p.VAR_POSITIONAL}
    return [k for k in kw if k not in names]


@dataclass(frozen=True)
class Target:
    """A ``library:`` target being built: its import path, the object it names, the arguments of
    that object (``params``) and the options of its adapter (``adapter``)."""

    path: str
    obj: Any
    params: dict
    adapter: dict

    def call(self, what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        """``fn(*args, **kw)`` with the library's warnings silenced; what goes wrong is a
        :class:`TargetError` naming the field at fault (a keyword ``fn`` does not take: that key;
        any other error of the library: ``params``), :class:`MissingLibrary` passes through."""
        unknown = _unknown_keywords(fn, kw)
        if unknown:  # names the callee does not take: the user's keys at fault (the first is the field)
            bad = unknown[0]
            group = "adapter" if bad in self.adapter else "params"
            takes = keywords(fn)[len(args):]  # an adapter's first parameter is the object passed in
            more = "".join(f"; {'adapter' if k in self.adapter else 'params'}.{k} is not one either"
                           f"{did_you_mean(k, takes)}" for k in unknown[1:])
            raise TargetError(f"is not an argument of {what}{did_you_mean(bad, takes)}{more}; accepted: "
                              f"{', '.join(takes) or '?'}", field=f"{group}.{bad}")
        try:
            with warnings.catch_warnings():  # the libraries warn per call (e.g. PrivacyLeakWarning): not ours
                warnings.simplefilter("ignore")
                return fn(*args, **kw)
        except MissingLibrary:
            raise
        except ParamError as exc:  # an argument refused by name: that key of the user's is at fault
            group = "adapter" if exc.field in self.adapter else "params"
            raise TargetError(str(exc), field=f"{group}.{exc.field}") from None
        except TypeError as exc:
            raise TargetError(f"{what} raised TypeError: {str(exc).splitlines()[0]}",
                              field="params" if what == self.path else "adapter") from None
        except Exception as exc:  # the library's code may raise anything (OpenDP raises OpenDPException)
            why = getattr(exc, "message", None) or str(exc).strip() or repr(exc)
            raise TargetError(f"{what} raised {type(exc).__name__}: {str(why).strip().splitlines()[0]}",
                              field="params") from None

    def make(self, **params: Any) -> Any:
        """The library's object: the target called with ``params``."""
        return self.call(self.path, self.obj, **params)

    def adapt(self, adapter: Callable[..., WrappedMechanism], *args: Any, **kw: Any) -> WrappedMechanism:
        """``adapter(*args, **kw)``, one of this package's adapters (named in messages as
        ``dpharness.adapters.<name>``)."""
        return self.call(f"dpharness.adapters.{adapter.__name__}", adapter, *args, **kw)
