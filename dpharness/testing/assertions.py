"""The assertions of the plugin: :func:`assert_dp` (a statistical audit of a claimed (epsilon,
delta)), :class:`DPAudit` (it, bound to the session: the ``dp_audit`` fixture) and
:func:`assert_no_regression` (``dpharness regress`` as an assertion), with the failures they raise.

What is audited comes from the one intake of user code, :func:`dpharness.verifiers.intake.intake`
(in code: the claim passed is the claim audited). Nothing heavy is imported at import time.
"""

from __future__ import annotations

import math
import numbers
import shlex
from typing import Any

from dpharness.testing.replay import budget_text, built_code, violation_message
from dpharness.testing.session import Session, active, derive, record_audit

#: Mechanism calls of one :func:`assert_dp` (both datasets, selection and certification) when
#: ``budget`` is not given, before the ``--dp-budget`` factor.
DEFAULT_BUDGET = 20_000
#: Default family-wise error of one :func:`assert_dp`: a correct mechanism fails a test with
#: probability at most this (the verifier's bound is valid at level alpha).
DEFAULT_ALPHA = 1e-3
#: Smallest budget after scaling by ``--dp-budget`` (the verifier needs a few draws to select).
MIN_BUDGET = 16

#: The module the public classes say they come from: where users import them, and what pytest's
#: summary line shows (``FAILED ... - dpharness.testing.DPViolation: ...``).
_PUBLIC = "dpharness.testing"


class DPViolation(AssertionError):
    """A certified violation of the claimed privacy: ``verdict`` holds the :class:`verifiers.Verdict`
    (its ``witness`` the pair, event, counts and seed)."""

    __module__ = _PUBLIC  # pytest's summary line names it dpharness.testing.DPViolation

    def __init__(self, message: str, verdict: Any = None) -> None:
        super().__init__(message)
        self.verdict = verdict


class DPUnderpowered(AssertionError):
    """Under ``--dp-strict``: an audit passed, but its budget could not have detected a privacy loss of
    :data:`WEAK_FACTOR` times the claim (``verdict`` holds what it could detect)."""

    __module__ = _PUBLIC

    def __init__(self, message: str, verdict: Any = None) -> None:
        super().__init__(message)
        self.verdict = verdict


class AccuracyRegression(AssertionError):
    """At least one cell of a run is significantly worse than its baseline: ``report`` holds the
    :class:`bench.regress.RegressionReport`."""

    __module__ = _PUBLIC

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


def _name_of(obj: Any) -> str:
    if isinstance(obj, str):  # a "package.module:attr" target
        return obj
    name = getattr(obj, "name", "") or getattr(obj, "__name__", "") or type(obj).__name__
    return str(name)


def _auditable(obj: Any, *, epsilon: Any, delta: Any, neighbours: str | None, kind: str | None,
               sensitivity: Any, name: str, attributes: dict | None) -> tuple[Any, str]:
    """(the object the verifier audits, the right-hand side of ``mech = ...`` in the replay snippet)."""
    import dpharness.adapters  # noqa: F401  (registers the library objects' recogniser with the intake)
    from dpharness.verifiers.intake import intake

    label = name or _name_of(obj)
    mech = intake(obj, epsilon=epsilon, delta=delta, neighbours=neighbours, kind=kind, sensitivity=sensitivity,
                  name=label, attributes=attributes)
    return mech, built_code(obj, mech, label, attributes)


def _scale_of(budget_scale: Any) -> float:
    if budget_scale is None:
        s = active()
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
        two are wrapped with :func:`verifiers.wrap` under the claim given here. Also an object of
        a DP library (an OpenDP measurement, a diffprivlib mechanism or model, adapted by
        :mod:`dpharness.adapters`) or a ``"package.module:attr"`` target naming any of these
        (:func:`dpharness.verifiers.intake.intake`, which takes them all).
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
    session = active()
    if origin is None and rng is None and session is not None and session.item is not None:
        # in pytest without rng: a seed derived from the session seed, the test id and the call's index,
        # so `pytest NODEID --dp-seed SEED` replays the failure exactly (as the dp_audit fixture does)
        nid = session.item.nodeid
        index = session.calls.get(nid, 0)
        session.calls[nid] = index + 1
        rng = derive(session.seed, nid + "#assert_dp", index)
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
    record_audit(session, v, label, seed)
    if v.violated:
        nodeid = session.item.nodeid if session is not None and session.item is not None else None
        raise DPViolation(violation_message(v, label=label, built=built, nodeid=nodeid, origin=origin,
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
    return (f"underpowered audit: at this budget ({budget_text(total, scale, scaled)}) it detects only {det_s}, "
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
    session = active()
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


class DPAudit:
    """:func:`assert_dp` bound to the session's seed and ``--dp-budget`` (the ``dp_audit`` fixture).

    Call it like :func:`assert_dp` (without ``rng``): the ``i``-th call of a test uses a seed
    derived from the session seed, the test's node id and ``i``, so ``pytest NODEID --dp-seed
    SEED`` replays a failure exactly, alone or in any order. ``seed`` is the session seed.
    """

    __module__ = _PUBLIC

    def __init__(self, session: Session, nodeid: str) -> None:
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
        seed = derive(self._session.seed, self._nodeid, self._calls)
        self._calls += 1
        return _assert_dp(mechanism_or_fn, d1, d2, epsilon=epsilon, delta=delta, neighbours=neighbours,
                          budget=budget, alpha=alpha, rng=seed, kind=kind, sensitivity=sensitivity, name=name,
                          attributes=attributes, budget_scale=self._session.scale, options=options,
                          origin="session")

    def __repr__(self) -> str:
        return f"<dp_audit seed={self.seed} budget x{self.budget_scale:g}>"
