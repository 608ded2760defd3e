"""What a failing audit prints: the violation (pair, event, counts, seed, budget) and how to replay
it -- the pytest command, and the Python snippet that rebuilds what was audited and certifies the
witness event again."""

from __future__ import annotations

import math
import shlex
from typing import Any

from dpharness.testing.session import Session, claim_text


def _py(v: Any) -> Any:
    """Plain Python values (numpy scalars and arrays) for code snippets."""
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, tuple):
        return tuple(_py(x) for x in v)
    return v


def _num(x: float) -> str:
    return repr(float(x)) if math.isfinite(x) else ("math.inf" if x > 0 else "-math.inf")


def _event_code(e: Any) -> str | None:
    """``verifiers.Event(...)`` that rebuilds ``e`` (None for a learned projection)."""
    if getattr(e, "projection", None) is not None:
        return None
    parts = [f"kind={e.kind!r}"]
    if e.lo != -math.inf:
        parts.append(f"lo={_num(e.lo)}")
    if e.hi != math.inf:
        parts.append(f"hi={_num(e.hi)}")
    if e.values:
        parts.append(f"values={_py(tuple(e.values))!r}")
    if e.coord != -1:
        parts.append(f"coord={int(e.coord)}")
    return f"verifiers.Event({', '.join(parts)})"


def _data_code(d: Any, limit: int = 300) -> str | None:
    import numpy as np

    try:
        a = np.asarray(d)
        text = repr(_py(a)) if a.dtype != object else repr(d)
    except Exception:  # the user's data may fail to convert or to print in any way: then no literal
        return None
    return text if len(text) <= limit else None


def budget_text(total: int, scale: float, scaled: int) -> str:
    return f"{scaled} mechanism calls" + ("" if scale == 1.0 else f" ({total} x --dp-budget {scale:g})")


def _wrap_code(target: str, claim: Any, kind: str, attributes: dict | None = None) -> str:
    """``verifiers.wrap(...)`` that rebuilds what was audited, for the replay snippet."""
    args = [f"epsilon={float(claim.epsilon)!r}"]
    if claim.delta:
        args.append(f"delta={float(claim.delta)!r}")
    args.append(f"neighbours={claim.neighbours!r}")
    if kind != "real":
        args.append(f"kind={kind!r}")
    if claim.sensitivity is not None:
        args.append(f"sensitivity={float(claim.sensitivity)!r}")
    if attributes:
        args.append("attributes=...")
    return f"verifiers.wrap({target}, {', '.join(args)})"


def _import_line(fn: Any) -> str | None:
    """``from MODULE import NAME`` for a function importable by name (a module-level function of an
    imported module other than ``__main__``), else None."""
    import sys

    mod, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not mod or mod == "__main__" or not name or "." in name or "<" in name or mod not in sys.modules:
        return None
    return f"from {mod} import {name}" if getattr(sys.modules[mod], name, None) is fn else None


def built_code(obj: Any, mech: Any, label: str, attributes: dict | None) -> str:
    """The right-hand side of ``mech = ...`` in the replay snippet: how :func:`verifiers.intake.intake`
    made ``mech`` (what is audited) from ``obj`` (what the test passed)."""
    from dpharness.verifiers.intake import Reclaimed
    from dpharness.verifiers.wrap import WrappedMechanism

    if isinstance(mech, Reclaimed):  # audited under the claim passed: the snippet wraps its sampler
        return (_wrap_code("<the mechanism under test>.sample", mech.claim, mech.kind, attributes)
                + f"  # it declares {mech.declared}")
    if isinstance(mech, WrappedMechanism) and mech is not obj:  # a function (or a sampler) wrapped
        if mech.fn is obj:
            where = _import_line(obj)
            if where is not None:  # the replay runs in a fresh interpreter: it imports the function
                return f"{where}\n" + _wrap_code(obj.__qualname__, mech.claim, mech.kind, attributes)
            return _wrap_code(label, mech.claim, mech.kind, attributes)
        sample = getattr(obj, "sample", None)
        if callable(sample) and mech.fn == sample:
            return _wrap_code(f"<{label}>.sample", mech.claim, mech.kind, attributes)
    return "<the mechanism under test>"


def _replay(v: Any, built: str, nodeid: str | None, origin: str, session: Session | None, scale: float) -> list[str]:
    w = v.witness
    out = []
    if nodeid:
        test = shlex.quote(nodeid)
        budget = "" if scale == 1.0 else f" --dp-budget {scale:g}"
        if origin == "session" and session is not None:
            out.append(f"replay in pytest:  pytest {test} --dp-seed {session.seed}{budget}")
        elif origin == "fixed":
            out.append(f"replay in pytest:  pytest {test}{budget}  (the seed is fixed by the test)")
        else:
            out.append(f"replay in pytest:  not reproducible as written (rng=None draws fresh entropy); "
                       f"pass rng={w.seed} to assert_dp")
    d1, d2 = _data_code(w.d1), _data_code(w.d2)
    ev = _event_code(w.event) or f"verifiers.Event.from_json({w.event.to_json()!r})"
    if v.pairs_tried == 1 and tuple(w.key) == (0,) and not w.chunked:
        call = (f"verifiers.audit(mech, {d1 or 'd1'}, {d2 or 'd2'}, samples={w.samples}, "
                f"event={ev}, direction={w.direction!r}, rng={w.seed}, alpha={v.alpha!r})")
    else:  # a search's pair has a draw stream of its own: replay names its key
        call = (f"verifiers.replay(mech, {d1 or 'd1'}, {d2 or 'd2'}, event={ev}, direction={w.direction!r}, "
                f"samples={w.samples}, seed={w.seed}, key={tuple(w.key)!r}, chunked={w.chunked!r}, alpha={v.alpha!r})")
    how = "on the same certification draws"
    *imports, expr = built.split("\n")  # built_code puts the function's import first when it has one
    out += [f"replay in Python (certifies the witness event again, {how}):",
            "    import math; from dpharness import verifiers",
            *[f"    {line}" for line in imports],
            f"    mech = {expr}",
            f"    {call}"]
    if d1 is None or d2 is None:
        out.append("    (d1, d2: the pair shown above; full values in DPViolation.verdict.witness)")
    return out


def violation_message(v: Any, *, label: str, built: str, nodeid: str | None, origin: str,
                      session: Session | None, total: int, scale: float, scaled: int) -> str:
    """The message of :class:`dpharness.testing.DPViolation`: the witness, then the replays."""
    from dpharness.verifiers.verdict import format_data

    w = v.witness
    num, den = ("d1", "d2") if w.direction == "d1>d2" else ("d2", "d1")
    est = "inf" if math.isinf(v.epsilon_estimate) else f"{v.epsilon_estimate:.3g}"
    lines = [
        f"dpharness: privacy claim VIOLATED by {label}: claimed {claim_text(v)} ({v.neighbours} neighbours); "
        f"with {100 * (1 - v.alpha):g}% confidence epsilon >= {v.epsilon_lower:.4g} (estimate {est})"
        + (f", delta >= {v.delta_lower:.3g}" if v.delta_lower > 0 else ""),
        f"  pair:    d1 = {format_data(w.d1)}, d2 = {format_data(w.d2)}"
        + (f"  [{w.pair_label}]" if w.pair_label else ""),
        f"  event:   E = {w.event}; bound on P[M({num}) in E] / P[M({den}) in E]",
        f"  counts:  {w.counts[0]} of {w.draws[0]} draws under d1, {w.counts[1]} of {w.draws[1]} under d2 "
        f"(certification; selection: {w.selection_counts[0]} vs {w.selection_counts[1]} of {w.selection_samples} each)",
        f"  seed:    {w.seed}" + (f" (derived from the session seed {session.seed}, --dp-seed)"
                                  if origin == "session" and session is not None else ""),
        f"  budget:  {budget_text(total, scale, scaled)}, {v.calls} used; alpha {v.alpha:g}"
        + (f"; pairs tried {v.pairs_tried}" if v.pairs_tried > 1 else ""),
    ]
    if v.support_violation:
        lines.append("  support: the event was never seen under the other dataset (true epsilon is likely infinite)")
    lines += _replay(v, built, nodeid, origin, session, scale)
    return "\n".join(lines)
