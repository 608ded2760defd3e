"""The outcome of ``dpharness regress``: one row per cell, a verdict, and its text forms.

:class:`RegressionReport` is a plain result; it formats itself (a header, an aligned text table
and markdown, all through the one table writer :mod:`bench.report.tables`) and :meth:`RegressionReport.write`
writes ``regress.csv`` and ``regress.md`` atomically (a reader never sees a half-written file).
Printing is left to :mod:`bench.cli.regress`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpharness.bench.run.folders import atomic_write_text
from dpharness.bench.report.tables import format_text_table, to_markdown
from dpharness.bench.regress.load import cell_label, format_row

__all__ = ["RegressionReport", "REPORT_FILES"]

#: Files :meth:`RegressionReport.write` puts into the new run folder.
REPORT_FILES = ("regress.csv", "regress.md")
#: Display columns holding numbers formatted as text (right-aligned).
_NUMBER_COLUMNS = ("baseline", "new", "change %", "p-value", "detectable %")


@dataclass(frozen=True)
class RegressionReport:
    """Outcome of :func:`bench.regress.regress`.

    Attributes
    ----------
    cells : pandas.DataFrame
        One row per cell (see :func:`bench.regress.compare_cells`); empty when the input was unusable.
    exit_code : int
        0 (no significant regression), 1 (at least one), 2 (unusable input; see ``message``).
    message : str
        One-line summary, or what made the input unusable.
    """

    cells: pd.DataFrame = field(repr=False)
    exit_code: int
    message: str
    new_dir: str = ""
    baseline_dir: str = ""
    alpha: float = 0.01
    tolerance: float = 0.05
    metric: str = ""
    cell_columns: tuple[str, ...] = ()
    lower_is_better: bool = True
    paired: bool = False

    @property
    def regressions(self) -> pd.DataFrame:
        return self.cells[self.cells["verdict"] == "regression"] if len(self.cells) else self.cells

    @property
    def improvements(self) -> pd.DataFrame:
        return self.cells[self.cells["verdict"] == "improvement"] if len(self.cells) else self.cells

    def short_labels(self) -> list[str]:
        """Cell labels without the cell columns that are the same in every cell (e.g. data, n)."""
        c = self.cells
        cols = [col for col in self.cell_columns if col in c.columns]
        varying = [col for col in cols if c[col].astype(str).nunique() > 1] or cols
        if not varying or len(varying) == len(cols):
            return c["cell"].tolist()
        return [cell_label(varying, format_row(r)) for r in c[varying].itertuples(index=False)]

    def display(self) -> pd.DataFrame:
        """The table shown to people: short cell labels, mean ± SE, change, Holm p-value, verdict
        (REGRESSION in capitals) and the detectable degradation, all as text."""
        c = self.cells
        return pd.DataFrame(
            {
                "cell": self.short_labels(),
                "baseline": [f"{m:.4g} ± {s:.2g}" for m, s in zip(c["baseline"], c["baseline_se"])],
                "new": [f"{m:.4g} ± {s:.2g}" for m, s in zip(c["new"], c["new_se"])],
                "change %": [f"{v:+.1f}" if math.isfinite(v) else "n/a" for v in c["change_pct"]],
                "p-value": [f"{p:.2g}" for p in c["p_value"]],
                "verdict": [v.upper() if v == "regression" else v for v in c["verdict"]],
                "detectable %": [f"{v:.0f}" if math.isfinite(v) else "n/a" for v in c["detectable_pct"]],
            }
        )

    def header(self) -> str:
        """What was compared and how (four lines)."""
        better, worse = ("smaller", f"new > (1 + {self.tolerance:g}) x baseline") if self.lower_is_better else (
            "larger", f"new < (1 - {self.tolerance:g}) x baseline")
        c = self.cells
        cols = [col for col in self.cell_columns if col in c.columns]
        fixed = [f"{col}={format_row([c[col].iloc[0]])[0]}" for col in cols if c[col].astype(str).nunique() == 1]
        fixed_text = f" All cells: {', '.join(fixed)}." if fixed and len(fixed) < len(cols) else ""
        test = str(c["test"].iloc[0]) if len(c) else ""
        what, how = {
            "paired t": ("mean over datasets ± SE", "paired t-test (same root seed: same datasets)"),
            "Welch t": ("mean over datasets ± SE", "Welch t-test (independent runs)"),
        }.get(test, ("Monte Carlo mean ± SE of each cell", "z-test on the two means"))
        return (
            f"regress: {self.new_dir} vs baseline {self.baseline_dir}\n"
            f"metric {self.metric}: {what}, {better} is better.{fixed_text}\n"
            f"Per cell a one-sided {how} of {worse}; Holm over {len(c)} cells at alpha {self.alpha:g}.\n"
            "p-value: Holm-adjusted (of the improvement test for improvements); detectable %: the "
            "degradation of one cell caught with 80% power by a re-run with another seed."
        )

    def format_table(self) -> str:
        """Aligned plain-text table for the terminal (empty when there are no cells)."""
        if not len(self.cells):
            return ""
        return format_text_table(self.display(), right=_NUMBER_COLUMNS)

    def to_markdown(self) -> str:
        """The report as markdown (``regress.md``)."""
        out = [f"# Regression check: {self.message}", "", self.header().replace("\n", "\n\n"), ""]
        if len(self.cells):
            out.append(to_markdown(self.display(), right=_NUMBER_COLUMNS).rstrip("\n"))
        return "\n".join(out) + "\n"

    def write(self, directory: str | Path) -> list[Path]:
        """Write ``regress.csv`` (all columns) and ``regress.md`` into ``directory``, each atomically
        (a temporary file in the same folder, then a rename), replacing earlier ones."""
        d = Path(directory)
        paths = [d / name for name in REPORT_FILES]
        atomic_write_text(paths[0], self.cells.to_csv(index=False))
        atomic_write_text(paths[1], self.to_markdown())
        return paths
