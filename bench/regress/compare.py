"""Cell-by-cell comparison of a new run with a baseline run, and the verdict.

Per cell (a combination of the kind's ``cell_columns``) the regression test is one-sided against
the baseline scaled by ``1 + tolerance`` (``H0: E[x] <= (1 + tolerance) E[b]``) and the
improvement test against ``1 - tolerance`` in the other direction; both families of per-cell
p-values are Holm-corrected separately (:mod:`bench.regress.stats`). Which test: paired t for runs
with the same root seed and the same replicate ids (same datasets), Welch t otherwise, a z-test for
kinds that report one Monte Carlo mean ± SE per cell. Why: :mod:`bench.regress`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from dpharness.bench.regress.load import RegressionInputError, by_cell, can_pair, check_comparable, load_run
from dpharness.bench.regress.power import detectable_degradation, detectable_degradation_se
from dpharness.bench.regress.report import RegressionReport
from dpharness.bench.regress.stats import check_levels, holm, paired_greater, welch_greater, z_greater

__all__ = ["compare_cells", "regress"]

#: Columns of :func:`compare_cells`' result after the cell columns, in order.
RESULT_COLUMNS = ("cell", "baseline", "new", "change_pct", "p_value", "verdict", "test", "baseline_se", "new_se",
                  "n_baseline", "n_new", "t_worse", "df_worse", "p_worse", "p_worse_holm", "p_better",
                  "p_better_holm", "detectable_pct")


def _change_pct(mb: float, mx: float) -> float:
    return 100.0 * (mx / mb - 1.0) if mb != 0 else (0.0 if mx == 0 else math.inf)


def _same_cells(nb: dict, nn: dict) -> None:
    only_base = [c for c in nb if c not in nn]
    only_new = [c for c in nn if c not in nb]
    if only_base or only_new:
        parts = []
        if only_base:
            parts.append(f"missing from the new run: {', '.join(only_base[:5])}{' ...' if len(only_base) > 5 else ''}")
        if only_new:
            parts.append(f"not in the baseline: {', '.join(only_new[:5])}{' ...' if len(only_new) > 5 else ''}")
        raise RegressionInputError("the runs do not have the same cells; " + "; ".join(parts))


def compare_cells(
    new: pd.DataFrame,
    base: pd.DataFrame,
    cell_columns: Sequence[str],
    metric: str,
    *,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    power: float = 0.8,
    lower_is_better: bool = True,
    replicate_column: str | None = None,
    paired: bool = False,
    se_column: str | None = None,
) -> pd.DataFrame:
    """Cell-by-cell comparison of two tidy result frames (one row per dataset and cell).

    With ``se_column`` and exactly one row per cell in both frames (kinds that report a Monte
    Carlo mean of many independent draws and its standard error per cell), each cell is tested
    with :func:`z_greater` on those summaries instead.

    With ``paired`` (runs with the same root seed: replicate ``i`` of both runs is the same
    dataset), replicates are matched through ``replicate_column`` and tested with
    :func:`paired_greater`, which removes the between-dataset variance -- the dominant part for
    median mechanisms, whose error depends strongly on the data near the median. Otherwise
    :func:`welch_greater`.

    Returns one row per cell (in the baseline's order) with the cell columns, ``cell`` (label),
    ``n_baseline, n_new, baseline, new, baseline_se, new_se, change_pct``, the regression test
    (``t_worse, df_worse, p_worse, p_worse_holm``), the improvement test (``p_better,
    p_better_holm``), ``verdict`` (ok / regression / improvement), ``p_value`` (the Holm-adjusted
    p-value of the test that decided the verdict: the improvement test for improvements, the
    regression test otherwise) and ``detectable_pct`` (:func:`detectable_degradation` of the
    baseline cell at ``power``).

    Raises
    ------
    RegressionInputError
        When the cells differ between the frames or a cell has fewer than 2 datasets, or the
        dataset counts differ (an incomplete run).
    """
    cols = list(cell_columns)
    if paired and not can_pair(new, base, cols, replicate_column):
        raise RegressionInputError(
            f"paired comparison needs the same {replicate_column or 'replicate'} ids in every cell of both runs "
            "(same dataset ids)"
        )
    rep_col = replicate_column if paired else None
    nb = by_cell(base, cols, metric, rep_col)
    nn = by_cell(new, cols, metric, rep_col)
    if se_column is not None and all(len(v[1]) == 1 for v in (*nb.values(), *nn.values())):
        return _compare_summaries(new, base, cols, se_column, nb, nn, alpha=alpha, tolerance=tolerance,
                                  power=power, lower_is_better=lower_is_better)
    test = paired_greater if paired else welch_greater
    _same_cells(nb, nn)
    for c, (_, b, _) in nb.items():
        x = nn[c][1]
        if len(b) < 2 or len(x) < 2:
            raise RegressionInputError(
                f"cell {c} has {len(b)} baseline and {len(x)} new dataset value(s); the test needs at least 2 each"
            )
        if len(b) != len(x):
            raise RegressionInputError(
                f"cell {c} has {len(x)} datasets in the new run but {len(b)} in the baseline "
                "(same config, so one run is incomplete)"
            )

    k = len(nb)
    rows = []
    for c, (values, b, _) in nb.items():
        x = nn[c][1]
        up = test(x, b, 1.0 + tolerance)  # H0: E[x] <= (1 + tol) E[b]
        down = test((1.0 - tolerance) * b, x, 1.0)  # H0: E[x] >= (1 - tol) E[b]
        (t_w, df_w, p_w), (_, _, p_b) = (up, down) if lower_is_better else (down, up)
        mb, mx = float(b.mean()), float(x.mean())
        sb = float(b.std(ddof=1))
        rows.append(
            {
                **dict(zip(cols, values)),
                "cell": c,
                "test": "paired t" if paired else "Welch t",
                "baseline": mb,
                "new": mx,
                "change_pct": _change_pct(mb, mx),
                "baseline_se": sb / math.sqrt(len(b)),
                "new_se": float(x.std(ddof=1)) / math.sqrt(len(x)),
                "n_baseline": len(b),
                "n_new": len(x),
                "t_worse": float(t_w),
                "df_worse": float(df_w),
                "p_worse": float(p_w),
                "p_better": float(p_b),
                "detectable_pct": 100.0
                * detectable_degradation(len(b), mb, sb, n_cells=k, alpha=alpha, tolerance=tolerance, power=power,
                                         lower_is_better=lower_is_better),
            }
        )
    return _finish(pd.DataFrame(rows), cols, alpha)


def _finish(out: pd.DataFrame, cols: list[str], alpha: float) -> pd.DataFrame:
    """Holm over the cells, verdicts, column order."""
    rej_w, adj_w = holm(out["p_worse"].to_numpy(), alpha)
    rej_b, adj_b = holm(out["p_better"].to_numpy(), alpha)
    out["p_worse_holm"] = adj_w
    out["p_better_holm"] = adj_b
    out["verdict"] = np.where(rej_w, "regression", np.where(rej_b, "improvement", "ok"))
    out["p_value"] = np.where(out["verdict"] == "improvement", adj_b, adj_w)
    return out[cols + list(RESULT_COLUMNS)]


def _compare_summaries(new, base, cols, se_column, nb, nn, *, alpha, tolerance, power, lower_is_better):
    """compare_cells for one-row-per-cell runs with a standard-error column."""
    sb_cells = by_cell(base, cols, se_column)
    sn_cells = by_cell(new, cols, se_column)
    _same_cells(nb, nn)
    rows = []
    k = len(nb)
    for c, (values, b, _) in nb.items():
        mb, mx = float(b[0]), float(nn[c][1][0])
        sb, sx = float(sb_cells[c][1][0]), float(sn_cells[c][1][0])
        up = z_greater(mx, sx, mb, sb, 1.0 + tolerance)
        down = z_greater((1.0 - tolerance) * mb, (1.0 - tolerance) * sb, mx, sx, 1.0)
        (t_w, df_w, p_w), (_, _, p_b) = (up, down) if lower_is_better else (down, up)
        rows.append(
            {
                **dict(zip(cols, values)),
                "cell": c,
                "test": "z (mean ± SE)",
                "baseline": mb,
                "new": mx,
                "change_pct": _change_pct(mb, mx),
                "baseline_se": sb,
                "new_se": sx,
                "n_baseline": 1,
                "n_new": 1,
                "t_worse": float(t_w),
                "df_worse": float(df_w),
                "p_worse": float(p_w),
                "p_better": float(p_b),
                "detectable_pct": 100.0 * detectable_degradation_se(mb, sb, n_cells=k, alpha=alpha, tolerance=tolerance,
                                                                    power=power, lower_is_better=lower_is_better),
            }
        )
    return _finish(pd.DataFrame(rows), list(cols), alpha)


def regress(
    new_dir: str | Path,
    baseline_dir: str | Path,
    *,
    alpha: float = 0.01,
    tolerance: float = 0.05,
    paired: bool | None = None,
) -> RegressionReport:
    """Compare a new run folder with a baseline run folder of the same config, cell by cell.

    Reads both folders and writes nothing (:meth:`RegressionReport.write` does).

    Parameters
    ----------
    new_dir, baseline_dir
        Run folders written by ``dpharness run`` (``results.csv``, ``config.yaml``,
        ``manifest.json`` with ``cell_columns`` and ``metric``). Their configs must be equal except
        for the root seed (and description).
    alpha
        Family-wise error rate over the cells (Holm): the probability that a run whose every cell is
        within tolerance of the baseline is reported as a regression is at most ``alpha``.
    tolerance
        Relative slack: a cell regresses when its mean error exceeds ``(1 + tolerance)`` x the
        baseline's, significantly.
    paired
        ``None`` (default): pair replicates (paired t-test) when both runs have the same root seed
        and the same replicate ids in every cell -- then replicate ``i`` is the same dataset in
        both runs -- else compare independent samples (Welch). ``False`` forces Welch; ``True``
        requires pairing (exit 2 if impossible).

    Returns
    -------
    RegressionReport
        ``exit_code`` 0, 1 or 2 (unusable input: ``cells`` empty, ``message`` says why).

    Raises
    ------
    ValueError
        If ``alpha`` or ``tolerance`` is out of range.
    """
    alpha, tolerance = check_levels(alpha, tolerance)
    common: dict[str, Any] = dict(new_dir=str(new_dir), baseline_dir=str(baseline_dir), alpha=alpha, tolerance=tolerance)
    try:
        new = load_run(new_dir, "new")
        base = load_run(baseline_dir, "baseline")
        check_comparable(new, base)
        if paired is None:
            same_seed = new.seed is not None and new.seed == base.seed
            paired = same_seed and can_pair(new.results, base.results, base.cell_columns, base.replicate_column)
        cells = compare_cells(new.results, base.results, base.cell_columns, base.metric, alpha=alpha,
                              tolerance=tolerance, lower_is_better=base.lower_is_better,
                              replicate_column=base.replicate_column, paired=bool(paired),
                              se_column=base.se_column)
        paired = bool(paired) and bool((cells["test"] == "paired t").all())
    except RegressionInputError as exc:
        return RegressionReport(cells=pd.DataFrame(), exit_code=2, message=f"cannot compare: {exc}", **common)
    report = RegressionReport(
        cells=cells,
        exit_code=0,
        message="",
        metric=base.metric,
        cell_columns=base.cell_columns,
        lower_is_better=base.lower_is_better,
        paired=bool(paired),
        **common,
    )
    short = pd.Series(report.short_labels(), index=cells.index)
    reg = cells["verdict"] == "regression"
    n_reg, n_imp = int(reg.sum()), int((cells["verdict"] == "improvement").sum())
    if n_reg:
        worst = short[reg].loc[cells.loc[reg, "change_pct"].sort_values(ascending=False).index].tolist()
        msg = f"REGRESSION in {n_reg} of {len(cells)} cells ({'; '.join(worst[:5])}{' ...' if n_reg > 5 else ''})"
    else:
        msg = f"no significant regression in {len(cells)} cells"
    if n_imp:
        msg += f"; {n_imp} significant improvement(s)"
    return replace(report, exit_code=1 if n_reg else 0, message=msg)
