"""Helpers shared by the textbook experiment kinds (pumpkin, randomized_response,
laplace_from_exponential, private_mode): intervals, rows and figure plumbing.

Not a kind itself (the leading underscore keeps it out of :func:`bench.experiments.available`).
Intervals come from :mod:`verifiers.bounds` and tables from :mod:`bench.report.tables`, so each exists
once in the harness. Figures use :class:`matplotlib.figure.Figure` directly (no pyplot global state), so plotting is
safe in worker threads and never opens a window.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # imported where used: a config error must not wait for matplotlib/scipy.stats
    from matplotlib.figure import Figure

from dpharness.bench.report.tables import to_markdown

__all__ = [
    "ok_rows",
    "clopper_pearson",
    "mean_interval",
    "hoeffding_radius",
    "new_figure",
    "save",
    "density_curve",
    "md_table",
]


def ok_rows(results: pd.DataFrame, what: str | None = None) -> pd.DataFrame:
    """Rows of successful tasks (``status == "ok"`` when the runner added a status column),
    optionally only those whose ``what`` column equals ``what``."""
    df = results
    if "status" in df.columns:
        df = df[df["status"].fillna("ok") == "ok"]
    if what is not None and "what" in df.columns:
        df = df[df["what"] == what]
    return df.copy()


def clopper_pearson(k: Any, n: Any, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided Clopper-Pearson interval at confidence ``level`` for a binomial proportion
    (vectorised): the one-sided bounds :func:`verifiers.bounds.cp_lower` / ``cp_upper`` at
    ``(1 - level) / 2`` each -- the verifier's implementation, the only one in the harness.

    Raises ValueError (from :mod:`verifiers.bounds`) unless ``0 <= k <= n``, ``n > 0`` and
    ``0 < level < 1``.
    """
    a = (1.0 - level) / 2.0
    # imported here: the verifier package (zoo, suites) costs ~0.4 s, which a config error must not wait for
    from dpharness.verifiers.bounds import cp_lower, cp_upper

    return np.asarray(cp_lower(k, n, a), dtype=np.float64), np.asarray(cp_upper(k, n, a), dtype=np.float64)


def mean_interval(x: np.ndarray, level: float = 0.95, support: tuple[float, float] | None = None) -> tuple[float, float, float, float]:
    """(mean, standard error, lower, upper): the CLT interval mean +- z * se.

    When every draw is equal (se = 0, e.g. no loss at all in n draws at large epsilon) the CLT
    interval collapses to a point; if the values are known to lie in ``support`` = (a, b), the
    interval is then the exact one implied by Clopper-Pearson on "a draw differs from the
    observed value" (0 of n): the mean can be off by at most (b - a) * (1 - (alpha/2)^(1/n)).
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    m = float(x.mean())
    se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + level / 2))
    lo, hi = m - z * se, m + z * se
    if support is not None and se == 0.0:
        a, b = support
        p_hi = 1.0 - ((1 - level) / 2) ** (1.0 / n)
        lo, hi = max(a, m - (m - a) * p_hi), min(b, m + (b - m) * p_hi)
    return m, se, lo, hi


def hoeffding_radius(value_range: float, n: int, alpha: float) -> float:
    """r with P[|mean of n iid draws in an interval of width value_range - its expectation| > r] <= alpha.

    Hoeffding: 2 exp(-2 n r^2 / range^2) = alpha. Used for pass/fail checks because it holds for
    every n, unlike the CLT interval shown in the figures.
    """
    return float(value_range * math.sqrt(math.log(2.0 / alpha) / (2.0 * n)))


def new_figure(width: float = 7.0, height: float = 4.2, ncols: int = 1) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols)
    return fig, axes


def save(fig: Figure, fig_dir: Path, name: str) -> Path:
    fig_dir = Path(fig_dir)
    fig_dir.mkdir(parents=True, exist_ok=True)
    path = fig_dir / name
    fig.savefig(path, dpi=120)
    return path


def density_curve(law: Any, points_per_piece: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """(x, density) tracing a PiecewiseDensity exactly: each piece evaluated up to (not across)
    its right edge, so jumps at the edges are drawn as vertical segments."""
    xs, ys = [], []
    for j in range(law.log_mass.size):
        a, b = float(law.edges[j]), float(law.edges[j + 1])
        if b <= a:
            continue
        x = np.linspace(a, b, points_per_piece)
        # the right end belongs to the next piece (right-continuous); evaluate this piece's limit
        x_eval = x.copy()
        x_eval[-1] = np.nextafter(b, a)
        xs.append(x)
        ys.append(np.exp(law.log_pdf(x_eval)))
    return np.concatenate(xs), np.concatenate(ys)


def md_table(df: pd.DataFrame, floatfmt: str = ".6g") -> str:
    """A GitHub-markdown table, floats as ``floatfmt``, without a trailing newline (a line of a
    kind's summary text): :func:`bench.report.tables.to_markdown`, the harness's one table writer."""
    return to_markdown(df, floatfmt=floatfmt).rstrip("\n")
