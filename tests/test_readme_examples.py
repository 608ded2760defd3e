"""The README's Python example of auditing real implementations runs as written (and says what it
claims: a support violation for the textbook float Laplace, nothing for the correct releases)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_readme_implementation_audit_example_runs():
    pytest.importorskip("opendp")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```python", text.index("Auditing implementations as they ship"))
    code = text[start + len("```python"): text.index("```", start + 9)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["True", "False", "False"]
    # OpenDP samples from the OS, not from rng: this line is random. The README audits at alpha = 1e-6,
    # so P[a correct measurement is flagged] <= 1e-6 (the certified bound exceeds the truth w.p. <= alpha).
    assert lines[3].startswith("No violation found")
