"""The ``targets:`` of an audit config: benchmark targets, reported as met / NOT MET.

One target::

    - {id: T2, text: "...", check: violated, audit: rnm_value_pair, samples: 1500,
       max_draws_per_dataset: 1500}

checks: ``violated`` (a share >= ``min_rate`` (default 1) of the repeats flagged; optional
``max_draws_per_dataset``), ``epsilon_lower_at_least`` (``value``; median over repeats),
``support_violation`` (with ``value`` = minimum epsilon_lower), ``false_violation_rate``
(``audits`` list, ``max``), ``calls_at_most`` (search audits: flagged with at most ``value``
calls), ``wall_time_at_most`` (seconds; the invocation that completes the run). Judged by
:func:`bench.audits.report.evaluate_targets`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpharness.bench.config import Ctx

__all__ = ["TargetSpec", "CHECKS", "TARGET_KEYS", "parse_target"]

CHECKS = ("violated", "epsilon_lower_at_least", "support_violation", "false_violation_rate", "calls_at_most",
          "wall_time_at_most")
TARGET_KEYS = ("id", "text", "check", "audit", "audits", "samples", "value", "max", "max_draws_per_dataset",
               "min_rate")


@dataclass(frozen=True)
class TargetSpec:
    id: str
    text: str
    check: str
    audit: str | None = None
    audits: tuple[str, ...] = ()
    samples: int | None = None
    value: float | None = None
    max: float | None = None
    max_draws_per_dataset: int | None = None
    min_rate: float = 1.0



def parse_target(c: Ctx, raw: Any, sizes: dict[str, set[int]]) -> TargetSpec:
    """One target; ``sizes`` maps every audit id to its sample sizes (before any cap)."""
    ids = set(sizes)
    c.require_mapping(raw)
    c.reject_unknown(raw, TARGET_KEYS)
    tid = c.get(raw, "id", str)
    check = c.choice(raw, "check", CHECKS)
    audit = c.get(raw, "audit", str, None)
    audits_raw = raw.get("audits") or []
    if not isinstance(audits_raw, list):
        c.error("audits", f"must be a list of audit ids, got {audits_raw!r}")
    if audit is not None and audit not in ids:
        c.error("audit", f"unknown audit id {audit!r}; accepted: {', '.join(sorted(ids))}")
    for j, a in enumerate(audits_raw):
        if a not in ids:
            c.error(f"audits[{j}]", f"unknown audit id {a!r}; accepted: {', '.join(sorted(ids))}")
    if check not in ("false_violation_rate", "wall_time_at_most") and audit is None:
        c.error("audit", f"is required for check {check}")
    samples = c.number(raw, "samples", None, lo=1, integer=True)
    if samples is not None and audit is not None and int(samples) not in sizes[audit]:
        c.error("samples", f"audit {audit!r} runs no sample size {int(samples)}; accepted: "
                f"{', '.join(map(str, sorted(sizes[audit])))}")
    value = c.number(raw, "value", None)
    mx = c.number(raw, "max", None)
    mdd = c.number(raw, "max_draws_per_dataset", None, lo=1, integer=True)
    min_rate = float(c.number(raw, "min_rate", 1.0, lo=0.0, hi=1.0))
    if check in ("epsilon_lower_at_least", "calls_at_most", "wall_time_at_most", "support_violation") and value is None:
        c.error("value", f"is required for check {check}")
    if check == "false_violation_rate" and mx is None:
        c.error("max", "is required for check false_violation_rate (with audits: [...])")
    if check == "false_violation_rate" and not audits_raw:
        c.error("audits", "is required for check false_violation_rate: a list of audit ids")
    return TargetSpec(id=tid, text=c.get(raw, "text", str, ""), check=check, audit=audit, audits=tuple(audits_raw),
                      samples=None if samples is None else int(samples), value=None if value is None else float(value),
                      max=None if mx is None else float(mx), max_draws_per_dataset=None if mdd is None else int(mdd),
                      min_rate=min_rate)

