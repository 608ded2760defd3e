"""The one table writer (bench/report/tables.py): text and markdown, number formats and alignment."""

from __future__ import annotations

import math

import pandas as pd

from dpharness.bench.report.tables import format_text_table, to_markdown

DF = pd.DataFrame({"mechanism": ["Duff", "SS|a"], "epsilon": [0.5, 1.0], "error": [0.123456, 12.0],
                   "ok": [True, False], "note": [math.nan, "x"]})


def test_markdown_default_two_decimals_exact_parameters_escaped_pipes():
    assert to_markdown(DF) == (
        "| mechanism | epsilon | error | ok | note |\n"
        "|---|---:|---:|---|---|\n"
        "| Duff | 0.5 | 0.12 | yes |  |\n"
        "| SS\\|a | 1 | 12.00 | no | x |\n"
    )


def test_floatfmt_and_right_alignment_of_text_numbers():
    md = to_markdown(DF, floatfmt=".3g", right=["note"]).splitlines()
    assert md[1] == "|---|---:|---:|---|---:|"
    assert md[2] == "| Duff | 0.5 | 0.123 | yes |  |"  # epsilon stays exact, error as .3g
    text = format_text_table(DF, floatfmt=".3g", right=["mechanism"]).splitlines()
    assert text[0] == "mechanism  epsilon  error  ok   note"
    assert text[1] == "---------  -------  -----  ---  ----"
    assert text[2] == "     Duff      0.5  0.123  yes"
    assert text[3] == "     SS|a        1     12  no   x"
    assert format_text_table(DF).splitlines()[2] == "Duff           0.5   0.12  yes"
