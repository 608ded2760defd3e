"""Audit differential privacy inside your own pytest suite: ``assert_dp``, ``assert_no_regression``
and the ``dp_audit`` fixture (docs/ci.md, "Auditing your mechanisms in your own pytest suite").

Installed as a pytest plugin (entry point ``pytest11``: ``dpharness = "dpharness.testing"``), so
every project that has dpharness installed gets, without any ``conftest.py``:

* :func:`assert_dp` -- audit a mechanism (anything with ``claim`` and ``sample``) or a plain
  ``fn(data, size, rng)`` against a claimed (epsilon, delta); fails the test with
  :class:`DPViolation` (the witness: pair, event, counts, seed, replay commands) when a violation
  is certified, passes otherwise and records what the audit could have detected;
* :func:`assert_no_regression` -- ``dpharness regress NEW BASELINE`` as an assertion
  (:class:`AccuracyRegression` with the table of the significant regressions);
* the ``dp_audit`` fixture -- :func:`assert_dp` bound to a per-session seed (``--dp-seed``, else
  fresh entropy), printed in the failure message and after collection so a failing run can be
  replayed;
* ``--dp-budget FACTOR`` -- multiplies every audit's budget (``0.1`` for a quick CI pass, ``10``
  for a thorough local run); ``--dp-seed SEED``; ``--dp-jobs N``; ``--dp-strict``; the ``dp``
  marker (added automatically to tests that use ``dp_audit``; ``-m "not dp"`` skips them).

The package, by job: :mod:`~dpharness.testing.assertions` (the assertions and their failures),
:mod:`~dpharness.testing.hooks` (options, fixture, marker, what the session prints),
:mod:`~dpharness.testing.session` (per-session seed, budget factor and records) and
:mod:`~dpharness.testing.replay` (the failure message and its replay command and snippet). What
is audited comes from the one intake of user code, :mod:`dpharness.verifiers.intake`.

The plugin is loaded in every pytest session of every project that has dpharness installed, so it
is silent unless used (no header line, no summary section) and imports nothing heavy at import
time: numpy, :mod:`dpharness.verifiers` and :mod:`dpharness.bench` are imported inside the
functions that need them.
"""

from dpharness.testing.assertions import (DEFAULT_ALPHA, DEFAULT_BUDGET, WEAK_FACTOR, AccuracyRegression, DPAudit,
                                          DPUnderpowered, DPViolation, assert_dp, assert_no_regression)
from dpharness.testing import hooks as _hooks

# pytest reads a plugin's hooks and fixtures from the plugin module itself (this one, named by the
# entry point or by `-p dpharness.testing`), so the names defined in hooks are imported here.
from dpharness.testing.hooks import (  # noqa: F401
    pytest_addoption, pytest_configure, pytest_report_collectionfinish, pytest_report_header, pytest_runtest_logfinish,
    pytest_terminal_summary, pytest_unconfigure)

if _hooks.pytest is not None:  # the fixture and the decorated hooks exist where pytest does
    from dpharness.testing.hooks import (  # noqa: F401
        dp_audit, pytest_collection_modifyitems, pytest_configure_node, pytest_runtest_setup)

__all__ = [
    "assert_dp",
    "assert_no_regression",
    "DPViolation",
    "DPUnderpowered",
    "WEAK_FACTOR",
    "AccuracyRegression",
    "DPAudit",
    "DEFAULT_BUDGET",
    "DEFAULT_ALPHA",
]
