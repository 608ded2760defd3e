"""The one table writer of the harness: aligned text for terminals and GitHub Markdown for files.

Every command that prints or writes a table (run summaries, audits, regressions, benchmarks)
formats it here, so numbers look the same everywhere.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from typing import TYPE_CHECKING

import numpy as np

from dpharness.bench.run.tasks import format_value

if TYPE_CHECKING:  # imported where a table is formatted: checking a config loads no pandas
    import pandas as pd

__all__ = ["EXACT_COLUMNS", "format_text_table", "to_markdown"]


#: Columns holding parameters rather than measurements: printed exactly (``0.5``, not ``0.50``).
EXACT_COLUMNS = ("epsilon", "q", "n", "delta", "dataset", "draws", "datasets")


def _cell_text(v: Any, fmt: str | None = None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType":  # pandas.NA
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)) and fmt is not None:
        return format(float(v), fmt)
    if isinstance(v, (float, np.floating)):
        return format_value(v)
    return str(v)


def _layout(df: pd.DataFrame, nd: int, floatfmt: str | None,
            right: Sequence[str] | None) -> tuple[list[str], list[list[str]], list[bool]]:
    """Column names, cell texts and which columns are right-aligned (numbers, plus ``right``)."""
    cols = list(df.columns)
    fmt = floatfmt if floatfmt is not None else f".{int(nd)}f"
    fmts = [None if c in EXACT_COLUMNS else fmt for c in cols]
    cells = [[_cell_text(v, f) for v, f in zip(row, fmts)] for row in df.itertuples(index=False)]
    flush = set(right or ())
    import pandas as pd

    aligned = [c in flush or (pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]))
               for c in cols]
    return [str(c) for c in cols], cells, aligned


def format_text_table(df: pd.DataFrame, nd: int = 2, *, floatfmt: str | None = None,
                      right: Sequence[str] | None = None) -> str:
    """Plain aligned text for the terminal: a header, a rule, one line per row.

    Floats get ``nd`` decimals, or the format spec ``floatfmt`` (e.g. ``".3g"``) when given, except
    in :data:`EXACT_COLUMNS`; numeric columns and the columns named in ``right`` (numbers already
    formatted as text) are right-aligned, the others left-aligned.
    """
    cols, cells, aligned = _layout(df, nd, floatfmt, right)
    widths = [max([len(c)] + [len(r[j]) for r in cells]) for j, c in enumerate(cols)]

    def line(vals: Iterable[str]) -> str:
        return "  ".join(v.rjust(w) if a else v.ljust(w) for v, w, a in zip(vals, widths, aligned)).rstrip()
    return "\n".join([line(cols), line("-" * w for w in widths), *(line(r) for r in cells)])


def to_markdown(df: pd.DataFrame, nd: int = 2, *, floatfmt: str | None = None,
                right: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table (no ``tabulate`` dependency), ending with a newline.

    Same cell texts and alignment as :func:`format_text_table`; ``|`` inside a cell is escaped.
    """
    cols, cells, aligned = _layout(df, nd, floatfmt, right)
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" if a else "---" for a in aligned) + "|"]
    for r in cells:
        out.append("| " + " | ".join(v.replace("|", "\\|") for v in r) + " |")
    return "\n".join(out) + "\n"
