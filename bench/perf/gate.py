"""The performance gate: ``dpharness bench --baseline OLD.json [--tolerance T] [--alpha A]``.

What is compared is never an absolute time (a shared machine makes those noise) but each
benchmark's *ratio to its floor*, timed back to back in every repetition of the same run
(:mod:`.timing`). A benchmark is one dpharness row of the JSON: ``(section, n, name, floor)``; its
samples are the per-repetition ratios ``ratio_to_floor_samples`` kept in the JSON.

The statistics are those of ``dpharness regress`` (:mod:`bench.regress.stats`): per benchmark a
one-sided Welch t-test of ``H0: E[new ratio] <= (1 + tolerance) E[baseline ratio]`` (the two runs
are independent), and Holm's step-down correction over the benchmarks, so a run without a real
slowdown fails with probability at most ``alpha`` whatever the dependence between benchmarks.
A benchmark with fewer than 2 repetitions in either run is reported ``not tested`` (Table 1 at one
repetition), one present in only one run ``new`` or ``missing``; neither fails the gate.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from dpharness.bench.perf.plan import BenchInputError, Plan
from dpharness.bench.perf.report import fmt_ratio
from dpharness.bench.perf.rows import LEGACY_SCHEMA, SCHEMA

__all__ = ["DEFAULT_ALPHA", "DEFAULT_TOLERANCE", "benchmark_samples", "compare", "format_gate", "load_baseline",
           "parse_levels"]

DEFAULT_TOLERANCE = 0.25
DEFAULT_ALPHA = 0.01


def parse_levels(tolerance: Any, alpha: Any, has_baseline: bool) -> tuple[float, float]:
    """``(tolerance, alpha)`` from the command line (text or None), or :class:`BenchInputError`."""
    if not has_baseline:
        given = [f for f, v in (("--tolerance", tolerance), ("--alpha", alpha)) if v is not None]
        if given:
            raise BenchInputError(f"{' and '.join(given)} only apply to the performance gate: give --baseline OLD.json")
        return DEFAULT_TOLERANCE, DEFAULT_ALPHA
    values = []
    for flag, v, default, valid in (("--tolerance", tolerance, DEFAULT_TOLERANCE, "a number in [0, 1), e.g. 0.25"),
                                    ("--alpha", alpha, DEFAULT_ALPHA, "a number in (0, 1), e.g. 0.01")):
        if v is None:
            values.append(default)
            continue
        try:
            values.append(float(str(v).strip()))
        except ValueError:
            raise BenchInputError(f"{flag} must be {valid}, got {v!r}") from None
    tol, alpha_ = values
    try:
        from dpharness.bench.regress.stats import check_levels

        alpha_, tol = check_levels(alpha_, tol)
    except ValueError as exc:  # "alpha must be ..." / "tolerance must be ..."
        raise BenchInputError(f"--{exc}") from None
    return tol, alpha_


def benchmark_samples(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{key: {section, n, name, floor, ratio, samples}}`` for every dpharness row with a floor."""
    out: dict[str, dict[str, Any]] = {}
    for r in doc.get("rows") or []:
        if not isinstance(r, dict) or r.get("kind") != "dpharness" or not r.get("floor"):
            continue
        key = f"{r['section']} {_n_label(r)} {r['name']} / {r['floor']}"
        if key in out:  # the same ratio repeated once per peer
            continue
        samples = r.get("ratio_to_floor_samples")
        out[key] = {"section": r["section"], "n": r["n"], "name": r["name"], "floor": r["floor"],
                    "ratio": r.get("ratio_to_floor"),
                    "samples": [float(x) for x in samples] if isinstance(samples, list) else None}
    return out


def _n_label(r: dict[str, Any]) -> str:
    from dpharness.bench.perf.rows import N_LABEL

    return f"{N_LABEL.get(r['section'], 'n')}={r['n']:g}"


def _check_rows(rows: list, p: Path) -> None:
    """Every benchmark row the gate reads must have a text ``section``/``name``/``floor``, a finite
    number ``n`` and finite positive per-repetition ratios: a NaN sample would make every test
    "not significant" -- a gate that cannot fail."""
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or r.get("kind") != "dpharness" or not r.get("floor"):
            continue
        where = f"--baseline: {p}: rows[{i}]"
        for key in ("section", "name", "floor"):
            if not isinstance(r.get(key), str) or not r.get(key):
                raise BenchInputError(f"{where}.{key} must be a non-empty text, got {r.get(key)!r}")
        n = r.get("n")
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n <= 0:
            raise BenchInputError(f"{where}.n must be a positive number, got {n!r}")
        samples = r.get("ratio_to_floor_samples")
        if samples is None:
            continue
        if not isinstance(samples, list):
            raise BenchInputError(f"{where}.ratio_to_floor_samples must be a list of numbers, got {samples!r}")
        for j, x in enumerate(samples):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
                raise BenchInputError(f"{where}.ratio_to_floor_samples[{j}] must be a finite positive number "
                                      f"(a ratio of two timings), got {x!r}")


def load_baseline(path: Any, plan: Plan | None = None) -> dict[str, Any]:
    """Read and check ``--baseline OLD.json`` before anything is timed (:class:`BenchInputError`)."""
    p = Path(str(path))
    if not str(path).strip():
        raise BenchInputError("--baseline: empty path; give the JSON of an earlier run, e.g. "
                              "results/baselines/bench_quick.json")
    if p.is_dir():
        raise BenchInputError(f"--baseline: {p} is a folder; give the JSON file of an earlier `dpharness bench` run")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BenchInputError(f"--baseline: {p} does not exist; give the JSON of an earlier `dpharness bench` run "
                              "(e.g. results/baselines/bench_quick.json)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchInputError(f"--baseline: cannot read {p}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BenchInputError(f"--baseline: {p} is not JSON ({exc}); give the JSON of an earlier "
                              "`dpharness bench` run") from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema == LEGACY_SCHEMA:
        raise BenchInputError(f"--baseline: {p} is a {LEGACY_SCHEMA} file, written before the per-repetition ratios "
                              f"were kept; re-measure it with this version ({SCHEMA})")
    if schema != SCHEMA or not isinstance(doc.get("rows"), list):
        raise BenchInputError(f"--baseline: {p} is not the JSON of `dpharness bench` (schema {SCHEMA!r} with rows), "
                              f"got schema {schema!r}")
    _check_rows(doc["rows"], p)
    bench = benchmark_samples(doc)
    if not any(b["samples"] and len(b["samples"]) >= 2 for b in bench.values()):
        raise BenchInputError(f"--baseline: {p} has no benchmark with 2 or more repetitions of its ratio; "
                              "nothing could be tested")
    if plan is not None:
        old_quick = bool(doc.get("quick"))
        if old_quick != plan.quick:
            raise BenchInputError(f"--baseline: {p} was measured {'with' if old_quick else 'without'} --quick; "
                                  f"compare runs of the same tier ({'add' if old_quick else 'drop'} --quick)")
        sections = {b["section"] for b in bench.values()}
        if not sections & set(plan.sections):
            raise BenchInputError(f"--baseline: {p} has sections {', '.join(sorted(sections))}, none of which this run "
                                  f"measures ({', '.join(plan.sections)}); choose --only accordingly")
    return doc


def compare(new: dict[str, Any], base: dict[str, Any], *, tolerance: float = DEFAULT_TOLERANCE,
            alpha: float = DEFAULT_ALPHA, baseline_path: str = "") -> dict[str, Any]:
    """The gate's verdict: one entry per benchmark of either run, and ``passed``.

    Per tested benchmark: ``baseline`` / ``new`` (mean of the per-repetition ratios), ``change_pct``,
    ``t``, ``df``, ``p`` (one-sided Welch against ``(1 + tolerance)`` x the baseline), ``p_holm``
    and ``verdict`` (``ok``, ``SLOWER``, ``not tested``, ``new``, ``missing``).
    """
    tolerance, alpha = float(tolerance), float(alpha)
    nb, nn = benchmark_samples(base), benchmark_samples(new)
    keys = list(nn) + [k for k in nb if k not in nn]
    rows: list[dict[str, Any]] = []
    tested: list[int] = []
    for k in keys:
        b, x = nb.get(k), nn.get(k)
        ref = x or b
        row: dict[str, Any] = {"benchmark": k, "section": ref["section"], "n": ref["n"], "name": ref["name"],
                               "floor": ref["floor"], "baseline": None, "new": None, "change_pct": None,
                               "n_baseline": len(b["samples"] or []) if b else 0,
                               "n_new": len(x["samples"] or []) if x else 0,
                               "t": None, "df": None, "p": None, "p_holm": None}
        if b is None or x is None:
            row["verdict"] = "new" if b is None else "missing"
        else:
            bs, xs = np.asarray(b["samples"] or [], float), np.asarray(x["samples"] or [], float)
            if len(bs):
                row["baseline"] = float(bs.mean())
            if len(xs):
                row["new"] = float(xs.mean())
            if row["baseline"] and row["new"] is not None:
                row["change_pct"] = 100.0 * (row["new"] / row["baseline"] - 1.0)
            if len(bs) < 2 or len(xs) < 2:
                row["verdict"] = "not tested"
            else:
                from dpharness.bench.regress.stats import welch_greater

                t, df, p = welch_greater(xs, bs, 1.0 + tolerance)
                row.update(t=float(t), df=float(df) if math.isfinite(float(df)) else None, p=float(p))
                row["verdict"] = "ok"
                tested.append(len(rows))
        rows.append(row)
    if tested:
        from dpharness.bench.regress.stats import holm

        reject, p_adj = holm([rows[i]["p"] for i in tested], alpha)
        for i, rej, pa in zip(tested, reject, p_adj):
            rows[i]["p_holm"] = float(pa)
            if rej:
                rows[i]["verdict"] = "SLOWER"
    slower = [r for r in rows if r["verdict"] == "SLOWER"]
    if slower:
        worst = sorted(slower, key=lambda r: -(r["change_pct"] or 0))
        message = (f"SLOWDOWN in {len(slower)} of {len(tested)} tested benchmarks: "
                   + "; ".join(f"{r['benchmark']} {fmt_ratio(r['baseline'])} -> {fmt_ratio(r['new'])} "
                               f"({r['change_pct']:+.0f}%)" for r in worst[:3]) + (" ..." if len(slower) > 3 else ""))
    else:
        message = f"no significant slowdown in {len(tested)} tested benchmarks"
    return {"baseline": str(baseline_path), "baseline_created": base.get("created"), "tolerance": tolerance,
            "alpha": alpha, "test": "Welch t (one-sided, per benchmark) + Holm", "tested": len(tested),
            "slower": len(slower), "passed": not slower, "message": message, "benchmarks": rows}


def format_gate(gate: dict[str, Any]) -> str:
    """The gate's table: one line per benchmark (ratio to its floor, baseline -> new), then the verdict."""
    head = ["benchmark", "baseline", "new", "change", "p (Holm)", "verdict"]
    body = []
    for r in gate["benchmarks"]:
        body.append([r["benchmark"], fmt_ratio(r["baseline"]), fmt_ratio(r["new"]),
                     "-" if r["change_pct"] is None else f"{r['change_pct']:+.0f}%",
                     "-" if r["p_holm"] is None else f"{r['p_holm']:.2g}", r["verdict"]])
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = [f"performance gate against {gate['baseline']}: ratio to the floor (mean over repetitions), "
             f"one-sided Welch t-test of new > (1 + {gate['tolerance']:g}) x baseline per benchmark, "
             f"Holm at alpha {gate['alpha']:g}",
             "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip() for b in body]
    lines.append(("PASS: " if gate["passed"] else "FAIL: ") + gate["message"])
    return "\n".join(lines)
