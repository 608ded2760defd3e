"""Family-wise error: the level of each test of a family (Bonferroni).

Several audits of one config, or one audit over several given pairs, are a family of tests: each
false flag of a correct mechanism is a false discovery of the family. Giving each of ``n`` tests
the level ``family_alpha / n`` keeps the chance of any false flag in the family at most
``family_alpha`` (Bonferroni: the union bound, whatever the dependence between the tests).
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

from dpharness.mechanisms.base import ParamError
from dpharness.verifiers.bounds import check_alpha

__all__ = ["split_alpha"]


def _count(n: Any, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ParamError(name, f"{name} must be an integer >= 0, got {n!r}")
    return int(n)


def split_alpha(family_alpha: float, n_audits: int, tests: Sequence[int] | None = None) -> float:
    """The level of each test of a family of ``n_audits`` audits at family-wise error ``family_alpha``.

    ``tests``: when each audit is several tests (an audit config's audit runs one task per sample
    size and repeat), the number of tests of each audit (one entry per audit); the family then has
    ``sum(tests)`` tests. Without it each audit is one test. Every test gets ``family_alpha / n``
    for ``n`` tests in all (``family_alpha`` itself for an empty family).

    >>> split_alpha(0.05, 10)
    0.005
    >>> split_alpha(0.05, 2, tests=[2, 3])
    0.01
    """
    family_alpha = check_alpha(family_alpha, "family_alpha")
    n = _count(n_audits, "n_audits")
    if tests is not None:
        counts = [_count(t, "tests") for t in tests]
        if len(counts) != n:
            raise ParamError("tests", f"tests must give one number of tests per audit ({n}), got {len(counts)}")
        n = sum(counts)
    return family_alpha / max(n, 1)
