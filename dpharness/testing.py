"""Audit differential privacy inside your own pytest suite: ``assert_dp``, ``assert_no_regression``
and the ``dp_audit`` fixture (docs/ci.md, "Auditing your mechanisms in your own pytest suite").

Installed as a pytest plugin (entry point ``pytest11``: ``dpharness = "dpharness.testing"``), so
every project that has dpharness installed gets, without any ``conftest.py``:

* :func:`assert_dp` -- audit a mechanism (anything with ``claim`` and ``sample``) or a plain
  ``fn(data, size, rng)`` against a claimed (epsilon, delta); fails the test with
  :class:`DPViolation` (the witness: pair, event, counts, seed, replay commands) when a violation
  is certified, passes otherwise and records what the audit could have detected;
* :func:`assert_no_regression` -- ``dpharness regress NEW BASELINE`` as an assertion
  (:class:`AccuracyRegression` with the table of the significant regressions);
* the ``dp_audit`` fixture -- :func:`assert_dp` bound to a per-session seed (``--dp-seed``, else
  fresh entropy), printed in the failure message and after collection so a failing run can be
  replayed;
* ``--dp-budget FACTOR`` -- multiplies every audit's budget (``0.1`` for a quick CI pass, ``10``
  for a thorough local run); ``--dp-seed SEED``; the ``dp`` marker (added automatically to tests
  that use ``dp_audit``; ``-m "not dp"`` skips them).

The plugin is loaded in every pytest session of every project that has dpharness installed, so it
is silent unless used (no header line, no summary section) and imports nothing heavy at import
time: numpy, :mod:`dpharness.verifiers` and :mod:`dpharness.bench` are imported inside the
functions that need them.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import numbers
import secrets
import shlex
from dataclasses import dataclass, field
from typing import Any

try:  # the assertions work without pytest (e.g. under unittest); the fixture and hooks need it
    import pytest
except ImportError:  # pragma: no cover - pytest is how this module is normally loaded
    pytest = None  # type: ignore[assignment]

__all__ = [
    "assert_dp",
    "assert_no_regression",
    "DPViolation",
    "DPUnderpowered",
    "WEAK_FACTOR",
    "AccuracyRegression",
    "DPAudit",
    "DEFAULT_BUDGET",
    "DEFAULT_ALPHA",
]

#: Mechanism calls of one :func:`assert_dp` (both datasets, selection and certification) when
#: ``budget`` is not given, before the ``--dp-budget`` factor.
DEFAULT_BUDGET = 20_000
#: Default family-wise error of one :func:`assert_dp`: a correct mechanism fails a test with
#: probability at most this (the verifier's bound is valid at level alpha).
DEFAULT_ALPHA = 1e-3
#: Smallest budget after scaling by ``--dp-budget`` (the verifier needs a few draws to select).
MIN_BUDGET = 16


class DPViolation(AssertionError):
    """A certified violation of the claimed privacy: ``verdict`` holds the :class:`verifiers.Verdict`
    (its ``witness`` the pair, event, counts and seed)."""

    def __init__(self, message: str, verdict: Any = None) -> None:
        super().__init__(message)
        self.verdict = verdict


class DPUnderpowered(AssertionError):
    """Under ``--dp-strict``: an audit passed, but its budget could not have detected a privacy loss of
    :data:`WEAK_FACTOR` times the claim (``verdict`` holds what it could detect)."""

    def __init__(self, message: str, verdict: Any = None) -> None:
        super().__init__(message)
        self.verdict = verdict


class AccuracyRegression(AssertionError):
    """At least one cell of a run is significantly worse than its baseline: ``report`` holds the
    :class:`bench.regress.RegressionReport`."""

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


# --------------------------------------------------------------------------------------------
# session state (set by the pytest hooks; absent outside pytest)


@dataclass
class _Session:
    seed: int
    scale: float = 1.0
    seed_given: bool = False
    scale_given: bool = False
    item: Any = None
    records: list = field(default_factory=list)
    strict: bool = False
    jobs: int | None = None  # --dp-jobs: workers drawing each audit's samples
    #: assert_dp calls without rng so far, per test (their seeds are derived from the session seed)
    calls: dict = field(default_factory=dict)


_SESSIONS: list[_Session] = []


def _active() -> _Session | None:
    return _SESSIONS[-1] if _SESSIONS else None


def _derive(seed: int, nodeid: str, index: int) -> int:
    """The seed of the ``index``-th ``dp_audit`` call of test ``nodeid`` in a session seeded with
    ``seed``: a function of these three only, so ``--dp-seed`` replays a test in any order or alone."""
    h = hashlib.sha256(f"dpharness.testing:{seed}:{nodeid}:{index}".encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def _jobs_arg(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1 and v != -1:
        raise argparse.ArgumentTypeError(f"--dp-jobs must be a positive number of workers or -1 (every core), got {text!r}")
    return v


def _seed_arg(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"--dp-seed must be a non-negative integer, got {text!r}")
    return v


def _scale_arg(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(
            f"--dp-budget must be a positive factor (e.g. 0.1 for a quick CI pass, 10 locally), got {text!r}")
    return v


# --------------------------------------------------------------------------------------------
# what is audited


class _Reclaimed:
    """A mechanism's sampler audited under another claim (and optionally another ``kind`` or
    extra attributes); every other attribute is the mechanism's own."""

    def __init__(self, inner: Any, claim: Any, kind: str | None, attributes: dict | None) -> None:
        self.__dict__.update(_inner=inner, _claim=claim, _kind=kind, _attributes=dict(attributes or {}))

    @property
    def claim(self) -> Any:
        return self._claim

    @property
    def kind(self) -> str:
        return self._kind if self._kind is not None else getattr(self._inner, "kind", "real")

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> Any:
        return self._inner.sample(data, size, rng)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("__") or "_inner" not in self.__dict__:
            raise AttributeError(item)
        if item in self.__dict__["_attributes"]:
            return self.__dict__["_attributes"][item]
        return getattr(self.__dict__["_inner"], item)

    def __repr__(self) -> str:
        return f"{self._inner!r} audited as {self._claim}"


def _name_of(obj: Any) -> str:
    name = getattr(obj, "name", "") or getattr(obj, "__name__", "") or type(obj).__name__
    return str(name)


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


def _auditable(obj: Any, *, epsilon: Any, delta: Any, neighbours: str | None, kind: str | None,
               sensitivity: Any, name: str, attributes: dict | None) -> tuple[Any, str]:
    """(the object the verifier audits, the right-hand side of ``mech = ...`` in the replay snippet)."""
    from dpharness.mechanisms.base import PrivacyClaim
    from dpharness.verifiers import wrap

    if isinstance(obj, type):
        raise TypeError(f"mechanism_or_fn must be a mechanism instance or a function fn(data, size, rng), got the "
                        f"class {obj.__name__}; build an instance first")
    has_sample = callable(getattr(obj, "sample", None))
    own = getattr(obj, "claim", None) if has_sample else None
    if own is None:
        fn = obj.sample if has_sample else obj
        if not callable(fn):
            raise TypeError("mechanism_or_fn must be a mechanism (an object with `claim` and `sample(data, size, rng)`) "
                            f"or a function fn(data, size, rng); got {type(obj).__name__} {obj!r:.60}")
        label = name or _name_of(obj)
        mech = wrap(fn, epsilon=epsilon, delta=delta, neighbours=neighbours, kind=kind or "real",
                    sensitivity=sensitivity, name=label, attributes=attributes)
        target = f"<{label}>.sample" if has_sample else label
        return mech, _wrap_code(target, mech.claim, mech.kind, attributes)
    if not isinstance(own, PrivacyClaim):
        raise TypeError(f"mechanism.claim must be a mechanisms.PrivacyClaim, got {type(own).__name__}")
    rel = neighbours or own.neighbours
    unit = ({"unit_column": own.unit_column, "max_contributions": own.max_contributions}
            if rel == "privacy_unit" and own.neighbours == "privacy_unit" else {})
    for k in ("unit_column", "max_contributions"):
        if attributes and k in attributes:
            unit[k] = attributes[k]
    claim = PrivacyClaim(epsilon, delta, neighbours=rel,
                         sensitivity=own.sensitivity if sensitivity is None else sensitivity, **unit)
    own_kind = getattr(obj, "kind", "real")
    if claim == own and (kind is None or kind == own_kind) and not attributes:
        return obj, "<the mechanism under test>"
    # Audited under the claim passed (the proxy keeps every other attribute); the snippet wraps its sampler.
    proxy = _Reclaimed(obj, claim, kind, attributes)
    return proxy, (_wrap_code("<the mechanism under test>.sample", claim, proxy.kind, attributes)
                   + f"  # it declares {own}")


def _scale_of(budget_scale: Any) -> float:
    if budget_scale is None:
        s = _active()
        return s.scale if s is not None else 1.0
    if isinstance(budget_scale, bool) or not isinstance(budget_scale, numbers.Real) or not (
            math.isfinite(float(budget_scale)) and float(budget_scale) > 0):
        raise ValueError(f"budget_scale must be a positive number or None (the session's --dp-budget), "
                         f"got {budget_scale!r}")
    return float(budget_scale)


def _check_budget(budget: Any) -> int:
    if budget is None:
        return DEFAULT_BUDGET
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or int(budget) < MIN_BUDGET:
        raise ValueError(f"budget must be an integer >= {MIN_BUDGET} (mechanism calls, both datasets), got {budget!r}")
    return int(budget)


# --------------------------------------------------------------------------------------------
# messages


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
    except Exception:  # broad: the user's data may fail to convert in any way; then it is not shown
        return None
    return text if len(text) <= limit else None


def _claim_text(v: Any) -> str:
    eps, dl = v.epsilon_claimed, v.delta_claimed
    return f"({eps:g}, {dl:g})-DP" if dl > 0 else f"{eps:g}-DP"


def _budget_text(total: int, scale: float, scaled: int) -> str:
    return f"{scaled} mechanism calls" + ("" if scale == 1.0 else f" ({total} x --dp-budget {scale:g})")


def _replay(v: Any, built: str, nodeid: str | None, origin: str, session: _Session | None, scale: float) -> list[str]:
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
    d1, d2, ev = _data_code(w.d1), _data_code(w.d2), _event_code(w.event)
    call = (f"verifiers.audit(mech, {d1 or 'd1'}, {d2 or 'd2'}, samples={w.samples}, "
            f"event={ev or 'verdict.witness.event'}, direction={w.direction!r}, rng={w.seed}, "
            f"alpha={v.alpha!r})")
    how = ("on the same certification draws" if v.pairs_tried == 1
           else "on fresh draws: the search certified it on draws keyed by the pair's index")
    out += [f"replay in Python (certifies the witness event again, {how}):",
            "    import math; from dpharness import verifiers",
            f"    mech = {built}",
            f"    {call}"]
    if d1 is None or d2 is None:
        out.append("    (d1, d2: the pair shown above; full values in DPViolation.verdict.witness)")
    return out


def _violation_message(v: Any, *, label: str, built: str, nodeid: str | None, origin: str,
                       session: _Session | None, total: int, scale: float, scaled: int) -> str:
    from dpharness.verifiers.verdict import format_data

    w = v.witness
    num, den = ("d1", "d2") if w.direction == "d1>d2" else ("d2", "d1")
    est = "inf" if math.isinf(v.epsilon_estimate) else f"{v.epsilon_estimate:.3g}"
    lines = [
        f"dpharness: privacy claim VIOLATED by {label}: claimed {_claim_text(v)} ({v.neighbours} neighbours); "
        f"with {100 * (1 - v.alpha):g}% confidence epsilon >= {v.epsilon_lower:.4g} (estimate {est})"
        + (f", delta >= {v.delta_lower:.3g}" if v.delta_lower > 0 else ""),
        f"  pair:    d1 = {format_data(w.d1)}, d2 = {format_data(w.d2)}"
        + (f"  [{w.pair_label}]" if w.pair_label else ""),
        f"  event:   E = {w.event}; bound on P[M({num}) in E] / P[M({den}) in E]",
        f"  counts:  {w.counts[0]} of {w.draws[0]} draws under d1, {w.counts[1]} of {w.draws[1]} under d2 "
        f"(certification; selection: {w.selection_counts[0]} vs {w.selection_counts[1]} of {w.selection_samples} each)",
        f"  seed:    {w.seed}" + (f" (derived from the session seed {session.seed}, --dp-seed)"
                                  if origin == "session" and session is not None else ""),
        f"  budget:  {_budget_text(total, scale, scaled)}, {v.calls} used; alpha {v.alpha:g}"
        + (f"; pairs tried {v.pairs_tried}" if v.pairs_tried > 1 else ""),
    ]
    if v.support_violation:
        lines.append("  support: the event was never seen under the other dataset (true epsilon is likely infinite)")
    lines += _replay(v, built, nodeid, origin, session, scale)
    return "\n".join(lines)


def _power_statement(v: Any) -> str:
    det = v.detectable_epsilon
    det_s = "inf (no loss is detectable at this budget)" if math.isinf(det) else f"{det:.3g}"
    return (f"no violation of {_claim_text(v)} certified (epsilon >= {v.epsilon_lower:.3g} at alpha {v.alpha:g}); "
            f"this audit would have detected a privacy loss above {det_s} on an event of moderate probability; "
            f"events rarer than {v.blind_delta:.2g} under both datasets are invisible to it "
            f"({v.calls} mechanism calls, {v.pairs_tried} pair(s))")


def _record_audit(session: _Session | None, v: Any, label: str, seed: int) -> None:
    if session is None or session.item is None:
        return
    item = session.item
    props = [
        ("dp_mechanism", label),
        ("dp_claim", f"{_claim_text(v)}, {v.neighbours} neighbours"),
        ("dp_violated", str(bool(v.violated))),
        ("dp_epsilon_lower", f"{v.epsilon_lower:.6g}"),
        ("dp_detectable_epsilon", f"{v.detectable_epsilon:.6g}"),
        ("dp_blind_delta", f"{v.blind_delta:.6g}"),
        ("dp_alpha", f"{v.alpha:g}"),
        ("dp_calls", str(v.calls)),
        ("dp_seed", str(seed)),
    ]
    item.user_properties.extend(props)
    if v.violated:
        text = (f"VIOLATED {label}: claimed {_claim_text(v)}, epsilon >= {v.epsilon_lower:.4g} at alpha {v.alpha:g} "
                f"(seed {seed})")
    else:
        text = f"passed {label}: {_power_statement(v)}"
        item.user_properties.append(("dp_power", text[len("passed ") + len(label) + 2:]))
        item.add_report_section("call", "dpharness", text + "\n")
    session.records.append((item.nodeid, text))


# --------------------------------------------------------------------------------------------
# the assertions


def assert_dp(mechanism_or_fn: Any, d1: Any = None, d2: Any = None, *, epsilon: float, delta: float = 0.0,
              neighbours: str | None = None, budget: int | None = None, alpha: float = DEFAULT_ALPHA,
              rng: Any = None, kind: str | None = None, sensitivity: float | None = None, name: str = "",
              attributes: dict | None = None, budget_scale: float | None = None, **options: Any) -> Any:
    """Assert that ``mechanism_or_fn`` satisfies (``epsilon``, ``delta``)-DP, by a statistical audit.

    With ``d1`` and ``d2``: :func:`verifiers.audit` of that neighbouring pair (``budget // 2`` draws
    per dataset). Without: :func:`verifiers.search` over the neighbouring pairs of the claim's
    relation (``budget`` calls in all). The test fails with :class:`DPViolation` -- the witness
    pair, event, counts, seed and replay commands in its message -- when a violation is certified
    at level ``alpha``; so a correct mechanism fails with probability at most ``alpha``. Otherwise
    it passes, and the test's report records what the audit could have detected (user properties
    ``dp_detectable_epsilon``, ``dp_blind_delta``, ``dp_power`` ..., in ``--junitxml`` too, and a
    line of the terminal summary).

    Parameters
    ----------
    mechanism_or_fn
        A mechanism (anything with ``claim``, a :class:`mechanisms.PrivacyClaim`, and
        ``sample(data, size, rng)``), an object with only ``sample(data, size, rng)``, or a plain
        function ``fn(data, size, rng)`` returning ``size`` outputs (sample axis first); the last
        two are wrapped with :func:`verifiers.wrap` under the claim given here.
    d1, d2
        A neighbouring pair to audit (checked against the relation), or both None to search.
    epsilon, delta, neighbours
        The claim to audit. For a mechanism, this claim is audited -- not ``mechanism.claim``:
        when they differ (another epsilon or delta, another ``neighbours`` relation) the mechanism's
        ``sample`` is audited under the claim passed here through a thin proxy that keeps every
        other attribute (its ``kind``, the bounds and candidates the pair generators read, its
        exact law); its own sensitivity (and privacy-unit settings) are kept unless
        ``sensitivity`` (or ``attributes``) says otherwise. So a test can hold a mechanism to a
        tighter claim than it declares, or to the claim its documentation states. ``neighbours``
        None means the mechanism's own relation, and ``"add_remove"`` for a function.
    budget
        Mechanism calls of the audit (both datasets, selection and certification), default
        :data:`DEFAULT_BUDGET`, multiplied by ``budget_scale``.
    alpha
        The audit's family-wise error (default :data:`DEFAULT_ALPHA`).
    rng
        Seed, Generator or None (fresh entropy; the seed used is in the verdict's witness and in
        the failure message). The ``dp_audit`` fixture derives it from the session seed.
    kind, sensitivity, name, attributes
        For a function: ``kind`` ``"real"`` (default) or ``"finite"`` (outputs from a finite
        set), the claim's sensitivity, a name for messages, and the read-only attributes the pair
        generators use (``lower``/``upper``, ``candidates`` ...; see :func:`verifiers.wrap`). For a
        mechanism they override its own.
    budget_scale
        Factor on ``budget``; None: the session's ``--dp-budget`` (1 outside pytest).
    **options
        Passed to :func:`verifiers.audit` (e.g. ``events="thresholds"``) or
        :func:`verifiers.search` (e.g. ``generator=...``); ``float_events=True`` also audits the
        bits of released doubles (floating-point leaks; on by default for library adapters).

    Returns
    -------
    verifiers.Verdict
        The audit's verdict (``violated`` is False when this returns).
    """
    __tracebackhide__ = True  # pytest shows the test's line and the message, not this module's code
    return _assert_dp(mechanism_or_fn, d1, d2, epsilon=epsilon, delta=delta, neighbours=neighbours, budget=budget,
                      alpha=alpha, rng=rng, kind=kind, sensitivity=sensitivity, name=name, attributes=attributes,
                      budget_scale=budget_scale, options=options, origin=None)


def _assert_dp(mechanism_or_fn: Any, d1: Any, d2: Any, *, epsilon: Any, delta: Any, neighbours: Any, budget: Any,
               alpha: Any, rng: Any, kind: Any, sensitivity: Any, name: str, attributes: Any, budget_scale: Any,
               options: dict, origin: str | None) -> Any:
    __tracebackhide__ = True
    from dpharness.verifiers import audit, search
    from dpharness.verifiers.statistical.batch import seed_of

    if (d1 is None) != (d2 is None):
        raise TypeError("give both d1 and d2 (audit that pair) or neither (search neighbouring pairs)")
    mech, built = _auditable(mechanism_or_fn, epsilon=epsilon, delta=delta, neighbours=neighbours, kind=kind,
                             sensitivity=sensitivity, name=name, attributes=attributes)
    total = _check_budget(budget)
    scale = _scale_of(budget_scale)
    scaled = max(MIN_BUDGET, int(round(total * scale)))
    session = _active()
    if origin is None and rng is None and session is not None and session.item is not None:
        # in pytest without rng: a seed derived from the session seed, the test id and the call's index,
        # so `pytest NODEID --dp-seed SEED` replays the failure exactly (as the dp_audit fixture does)
        nid = session.item.nodeid
        index = session.calls.get(nid, 0)
        session.calls[nid] = index + 1
        rng = _derive(session.seed, nid + "#assert_dp", index)
        origin = "session"
    if origin is None:
        origin = "fresh" if rng is None else ("fixed" if isinstance(rng, (numbers.Integral,)) else "other")
    seed = seed_of(rng)
    if session is not None and session.jobs is not None and "jobs" not in options:
        options = {**options, "jobs": session.jobs}
    if d1 is None:
        v = search(mech, budget=scaled, alpha=alpha, rng=seed, **options)
    else:
        v = audit(mech, d1, d2, samples=scaled // 2, alpha=alpha, rng=seed, **options)
    label = name or _name_of(mechanism_or_fn)
    _record_audit(session, v, label, seed)
    if v.violated:
        nodeid = session.item.nodeid if session is not None and session.item is not None else None
        raise DPViolation(_violation_message(v, label=label, built=built, nodeid=nodeid, origin=origin,
                                             session=session, total=total, scale=scale, scaled=scaled), verdict=v)
    weak = _underpowered(v, total, scale, scaled)
    if weak is not None:
        if session is not None and session.item is not None:
            session.item.user_properties.append(("dp_underpowered", weak))
            session.item.add_report_section("call", "dpharness", f"WARNING: {weak}\n")
            session.records.append((session.item.nodeid, f"WARNING {label}: {weak}"))
        if session is not None and session.strict:
            raise DPUnderpowered(f"dpharness (--dp-strict): {label}: {weak}", verdict=v)
    return v


#: An audit that passes is said to be underpowered when the smallest loss its budget detects (on an
#: event of moderate probability, ``Verdict.detectable_epsilon``) exceeds this multiple of the claimed
#: epsilon: then a mechanism off by this factor -- an exponential mechanism missing its factor 2,
#: Laplace noise for half the sensitivity -- would pass too.
WEAK_FACTOR = 2.0


def _underpowered(v: Any, total: int, scale: float, scaled: int) -> str | None:
    eps = float(v.epsilon_claimed)
    det = float(v.detectable_epsilon)
    if not det > WEAK_FACTOR * eps:
        return None
    det_s = "no loss at all" if math.isinf(det) else f"a loss above {det:.3g}"
    return (f"underpowered audit: at this budget ({_budget_text(total, scale, scaled)}) it detects only {det_s}, "
            f"more than {WEAK_FACTOR:g} x the claimed epsilon {eps:g}, so a mechanism off by a factor "
            f"{WEAK_FACTOR:g} would pass too; raise budget= or --dp-budget (--dp-strict makes this a failure)")


def assert_no_regression(new_results: Any, baseline_dir: Any, *, alpha: float = 0.01, tolerance: float = 0.05,
                         paired: bool | None = None, write_report: bool = False) -> Any:
    """Assert that a run is not significantly less accurate than its baseline run
    (``dpharness regress NEW BASELINE`` as an assertion; :func:`bench.regress.regress`).

    Parameters
    ----------
    new_results
        The new run folder (or anything with a ``run_dir``, e.g. what ``bench.run.runner.run`` returns).
    baseline_dir
        The baseline run folder of the same config (e.g. committed under ``results/baselines/``).
    alpha, tolerance, paired
        As ``dpharness regress``: Holm's family-wise error over the cells, the relative slack
        before a change counts, and whether to pair replicates (None: when the root seeds match).
    write_report
        Also write ``regress.csv`` / ``regress.md`` into the new run folder (never into a baseline).

    Returns
    -------
    bench.regress.RegressionReport
        When no cell regresses. Raises :class:`AccuracyRegression` (the table of the significant
        regressions in its message) when at least one does, and
        :class:`bench.regress.RegressionInputError` (a ``ValueError``) when the runs cannot be
        compared.
    """
    from dpharness.bench.regress import RegressionInputError, is_baseline_location, regress
    from dpharness.bench.report.tables import format_text_table

    new_dir = getattr(new_results, "run_dir", new_results)
    rep = regress(new_dir, baseline_dir, alpha=alpha, tolerance=tolerance, paired=paired)
    if rep.exit_code == 2:
        raise RegressionInputError(f"dpharness regress {new_dir} {baseline_dir}: {rep.message}")
    __tracebackhide__ = True
    if write_report and not is_baseline_location(new_dir):
        rep.write(new_dir)
    session = _active()
    if session is not None and session.item is not None:
        session.item.user_properties.extend([("dp_regress", rep.message), ("dp_regress_cells", str(len(rep.cells)))])
        session.records.append((session.item.nodeid, f"regress {baseline_dir}: {rep.message}"))
    if rep.exit_code == 1:
        reg = (rep.cells["verdict"] == "regression").to_numpy()
        table = format_text_table(rep.display()[reg], right=("baseline", "new", "change %", "p-value", "detectable %"))
        cmd = " ".join(["dpharness", "regress", shlex.quote(str(new_dir)), shlex.quote(str(baseline_dir)),
                        "--alpha", f"{rep.alpha:g}", "--tolerance", f"{rep.tolerance:g}"])
        raise AccuracyRegression(f"dpharness: {rep.message}\n{rep.header()}\n\n{table}\nreplay: {cmd}", report=rep)
    return rep


# --------------------------------------------------------------------------------------------
# the fixture


class DPAudit:
    """:func:`assert_dp` bound to the session's seed and ``--dp-budget`` (the ``dp_audit`` fixture).

    Call it like :func:`assert_dp` (without ``rng``): the ``i``-th call of a test uses a seed
    derived from the session seed, the test's node id and ``i``, so ``pytest NODEID --dp-seed
    SEED`` replays a failure exactly, alone or in any order. ``seed`` is the session seed.
    """

    def __init__(self, session: _Session, nodeid: str) -> None:
        self._session = session
        self._nodeid = nodeid
        self._calls = 0

    @property
    def seed(self) -> int:
        return self._session.seed

    @property
    def budget_scale(self) -> float:
        return self._session.scale

    def __call__(self, mechanism_or_fn: Any, d1: Any = None, d2: Any = None, *, epsilon: float, delta: float = 0.0,
                 neighbours: str | None = None, budget: int | None = None, alpha: float = DEFAULT_ALPHA,
                 kind: str | None = None, sensitivity: float | None = None, name: str = "",
                 attributes: dict | None = None, **options: Any) -> Any:
        __tracebackhide__ = True
        if "rng" in options or "budget_scale" in options:
            raise TypeError("dp_audit takes its seed from the session (--dp-seed) and its budget factor from "
                            "--dp-budget; call dpharness.testing.assert_dp(..., rng=...) for a fixed seed")
        seed = _derive(self._session.seed, self._nodeid, self._calls)
        self._calls += 1
        return _assert_dp(mechanism_or_fn, d1, d2, epsilon=epsilon, delta=delta, neighbours=neighbours,
                          budget=budget, alpha=alpha, rng=seed, kind=kind, sensitivity=sensitivity, name=name,
                          attributes=attributes, budget_scale=self._session.scale, options=options,
                          origin="session")

    def __repr__(self) -> str:
        return f"<dp_audit seed={self.seed} budget x{self.budget_scale:g}>"


def _session_of(config: Any) -> _Session:
    s = getattr(config, "_dpharness_session", None)
    if s is None:  # the module was imported (e.g. the fixture re-exported in a conftest), not registered
        s = _Session(seed=secrets.randbits(32))
        config._dpharness_session = s
        _SESSIONS.append(s)
    return s


if pytest is not None:

    @pytest.fixture
    def dp_audit(request: Any) -> DPAudit:
        """:func:`dpharness.testing.assert_dp` bound to this session's seed (``--dp-seed``) and
        budget factor (``--dp-budget``); see :class:`dpharness.testing.DPAudit`."""
        return DPAudit(_session_of(request.config), request.node.nodeid)


# --------------------------------------------------------------------------------------------
# pytest hooks (the names are pytest's; the module is registered by the pytest11 entry point)


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("dpharness", "differential privacy audits (dpharness.testing)")
    group.addoption("--dp-seed", dest="dp_seed", type=_seed_arg, default=None, metavar="SEED",
                    help="session seed of the dp_audit fixture (default: fresh entropy, printed when used); "
                         "pass the seed a failure printed to replay it")
    group.addoption("--dp-budget", dest="dp_budget", type=_scale_arg, default=None, metavar="FACTOR",
                    help="multiply the budget (mechanism calls) of every dpharness audit, e.g. 0.1 for a quick "
                         "CI pass, 10 locally (default 1)")
    group.addoption("--dp-jobs", dest="dp_jobs", type=_jobs_arg, default=None, metavar="N",
                    help="draw every audit's samples on N worker processes (-1: every core); verdicts are the same "
                         "for every N >= 1 (default: one stream per role, in the test's process)")
    group.addoption("--dp-strict", dest="dp_strict", action="store_true", default=False,
                    help="fail an audit that passes with a budget too small to detect twice its claimed epsilon "
                         "(without it: a WARNING in the test report and the dpharness summary)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "dp: differential-privacy audits with dpharness (added to tests that use "
                                       "the dp_audit fixture; deselect with -m 'not dp')")
    seed = config.getoption("dp_seed", None)
    scale = config.getoption("dp_budget", None)
    worker = getattr(config, "workerinput", None)  # pytest-xdist: every worker uses the controller's seed
    if seed is None and isinstance(worker, dict) and "dpharness_seed" in worker:
        seed = int(worker["dpharness_seed"])
    s = _Session(seed=secrets.randbits(32) if seed is None else int(seed), scale=1.0 if scale is None else float(scale),
                 seed_given=config.getoption("dp_seed", None) is not None, scale_given=scale is not None,
                 strict=bool(config.getoption("dp_strict", False)), jobs=config.getoption("dp_jobs", None))
    config._dpharness_session = s
    _SESSIONS.append(s)


def pytest_unconfigure(config: Any) -> None:
    s = getattr(config, "_dpharness_session", None)
    if s is not None and s in _SESSIONS:
        _SESSIONS.remove(s)


if pytest is not None:

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(node: Any) -> None:  # pytest-xdist controller: hand the seed to the workers
        s = getattr(node.config, "_dpharness_session", None)
        if s is not None:
            node.workerinput["dpharness_seed"] = s.seed

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(config: Any, items: list) -> None:
        for item in items:  # before -m deselects: `-m "not dp"` skips the dp_audit tests
            if "dp_audit" in getattr(item, "fixturenames", ()) and item.get_closest_marker("dp") is None:
                item.add_marker("dp")


def _replay_options(s: _Session) -> str:
    return f"--dp-seed {s.seed}" + ("" if s.scale == 1.0 else f" --dp-budget {s.scale:g}")


def pytest_report_header(config: Any) -> list[str] | None:
    s = getattr(config, "_dpharness_session", None)
    if s is None or not (s.seed_given or s.scale_given):
        return None
    return [f"dpharness: dp_audit session seed {s.seed}, budget x{s.scale:g} (replay: {_replay_options(s)})"]


def pytest_report_collectionfinish(config: Any, items: list) -> list[str] | None:
    s = getattr(config, "_dpharness_session", None)
    if s is None or s.seed_given or s.scale_given:
        return None  # silent unless used; with the options given, the header said it already
    n = sum(1 for it in items if it.get_closest_marker("dp") is not None)
    if not n:
        return None
    return [f"dpharness: {n} dp test(s); dp_audit session seed {s.seed}, budget x{s.scale:g} "
            f"(replay: {_replay_options(s)})"]


def _set_item(item: Any) -> None:
    s = getattr(item.config, "_dpharness_session", None)
    if s is not None:
        s.item = item


if pytest is not None:

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(item: Any) -> None:  # before fixtures are set up: they may audit too
        _set_item(item)


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    s = _active()
    if s is not None and s.item is not None and s.item.nodeid == nodeid:
        s.item = None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: Any) -> None:
    s = getattr(config, "_dpharness_session", None)
    if s is None or not s.records:
        return
    terminalreporter.section("dpharness audits")
    terminalreporter.write_line(f"session seed {s.seed}, budget x{s.scale:g} (replay: {_replay_options(s)})")
    for nodeid, text in s.records:
        terminalreporter.write_line(f"{nodeid}: {text}")
