"""The one table writer of the harness: aligned text for terminals and GitHub Markdown for files.

Every command that prints or writes a table (run summaries, audits, regressions, benchmarks)
formats it here, so numbers look the same everywhere.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .tasks import format_value

__all__ = ["EXACT_COLUMNS", "format_text_table", "to_markdown"]


#: Columns holding parameters rather than measurements: printed exactly (``0.5``, not ``0.50``).
EXACT_COLUMNS = ("epsilon", "q", "n", "delta", "dataset", "draws", "datasets")


def _cell_text(v: Any, nd: int | None = None) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)) and nd is not None:
        return f"{v:.{nd}f}"
    if isinstance(v, (float, np.floating)):
        return format_value(v)
    return str(v)


def format_text_table(df: pd.DataFrame, nd: int = 2) -> str:
    """Plain aligned text (numbers right-aligned) for the terminal."""
    cols = list(df.columns)
    nds = [None if c in EXACT_COLUMNS else nd for c in cols]
    cells = [[_cell_text(v, d) for v, d in zip(row, nds)] for row in df.itertuples(index=False)]
    widths = [max([len(str(c))] + [len(r[j]) for r in cells]) for j, c in enumerate(cols)]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in cols]
    def line(vals: Iterable[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()
    return "\n".join([line(map(str, cols)), line("-" * w for w in widths), *(line(r) for r in cells)])


def to_markdown(df: pd.DataFrame, nd: int = 2) -> str:
    """A GitHub Markdown table (no ``tabulate`` dependency)."""
    cols = list(df.columns)
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in cols]
    out = ["| " + " | ".join(map(str, cols)) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    nds = [None if c in EXACT_COLUMNS else nd for c in cols]
    for row in df.itertuples(index=False):
        out.append("| " + " | ".join(_cell_text(v, d).replace("|", "\\|") for v, d in zip(row, nds)) + " |")
    return "\n".join(out) + "\n"
