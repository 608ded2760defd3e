"""dpharness mechanisms for the benchmark, built from the registry -- or a skip reason.

A mechanism that is not registered (not written yet) or cannot be built is reported as skipped
with the reason, and the rest of the benchmark still runs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["make_mechanism"]


def make_mechanism(name: str, **params: Any) -> tuple[Any, str | None]:
    """``mechanisms.make(name, **params)`` or ``(None, reason)`` when it is not available yet."""
    try:
        from dpharness import mechanisms
    except Exception as exc:  # a half-built tree is reported as a skipped case, not a crash
        return None, f"mechanisms package fails to import: {type(exc).__name__}: {exc}"
    if name not in mechanisms.available():
        return None, f"mechanism {name!r} is not registered (not implemented yet?)"
    try:
        return mechanisms.make(name, **params), None
    except Exception as exc:  # the mechanism's own checks may raise anything: the case is skipped with the reason
        return None, f"cannot build {name}({', '.join(f'{k}={v!r}' for k, v in params.items())}): {exc}"
