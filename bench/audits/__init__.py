"""Audit configs as a harness concern (``dpharness audit CONFIG``).

The verifier (:mod:`verifiers`) is a library: one audit, one search, exact losses. Everything that
turns a YAML file into verdicts lives here, and runs through the one experiment runner as the
experiment kind ``audit`` (:mod:`bench.experiments.audit`), with its resume, manifest and progress:

* :mod:`bench.audits.spec` -- the audit keys of a config, validated (every mistake at once) into
  one spec that the checks and the tasks use; :mod:`bench.audits.datasets` (given pairs) and
  :mod:`bench.audits.targets` (targets) are parts of it;
* :mod:`bench.audits.catalogue` -- the mechanisms a config can name (``mechanism: {name: ...}``:
  registry, zoo, suites, peers) and the parsed mechanism of an audit;
* :mod:`bench.audits.build` -- building mechanisms (the catalogue's, the user's code, released
  libraries' objects) and the up-front checks;
* :mod:`bench.audits.task` -- one audit task (audit x sample size x repeat) as a results row;
* :mod:`bench.audits.report` -- summary table, pass/fail judgement, targets, report.md;
* :mod:`bench.audits.plots` -- figures;
* :mod:`bench.audits.machine` -- the ``--json`` / ``--junit`` verdicts.

The ``dpharness audit`` command is :mod:`bench.cli.audit`. The float audit of every registered
mechanism (``dpharness float-audit``) is the experiment kind :mod:`bench.experiments.float_audit`.
"""

from dpharness.bench.audits.spec import AuditSet, AuditSpec, TargetSpec

__all__ = ["AuditSet", "AuditSpec", "TargetSpec"]
