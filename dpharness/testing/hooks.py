"""The pytest side of the plugin: the ``--dp-*`` options, the session they configure, the
``dp_audit`` fixture, the ``dp`` marker, and what the session prints (a header line when the
options are given, a line after collection, the ``dpharness audits`` summary section).

The names are pytest's; pytest reads them from the plugin module, ``dpharness.testing``, which
imports them from here.
"""

from __future__ import annotations

import argparse
import math
import secrets
from typing import Any

from dpharness.testing.assertions import DPAudit
from dpharness.testing.session import SESSIONS, Session, active, replay_options, session_of

try:  # the assertions work without pytest (e.g. under unittest); the fixture and hooks need it
    import pytest
except ImportError:  # pragma: no cover - pytest is how this module is normally loaded
    pytest = None  # type: ignore[assignment]


def _jobs_arg(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1 and v != -1:
        raise argparse.ArgumentTypeError(f"--dp-jobs must be a positive number of workers or -1 (every core), got {text!r}")
    return v


def _seed_arg(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"--dp-seed must be a non-negative integer, got {text!r}")
    return v


def _scale_arg(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(
            f"--dp-budget must be a positive factor (e.g. 0.1 for a quick CI pass, 10 locally), got {text!r}")
    return v


if pytest is not None:

    @pytest.fixture
    def dp_audit(request: Any) -> DPAudit:
        """:func:`dpharness.testing.assert_dp` bound to this session's seed (``--dp-seed``) and
        budget factor (``--dp-budget``); see :class:`dpharness.testing.DPAudit`."""
        return DPAudit(session_of(request.config), request.node.nodeid)


# --------------------------------------------------------------------------------------------
# pytest hooks (the names are pytest's; dpharness.testing, registered by the pytest11 entry point, imports them)


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("dpharness", "differential privacy audits (dpharness.testing)")
    group.addoption("--dp-seed", dest="dp_seed", type=_seed_arg, default=None, metavar="SEED",
                    help="session seed of the dp_audit fixture (default: fresh entropy, printed when used); "
                         "pass the seed a failure printed to replay it")
    group.addoption("--dp-budget", dest="dp_budget", type=_scale_arg, default=None, metavar="FACTOR",
                    help="multiply the budget (mechanism calls) of every dpharness audit, e.g. 0.1 for a quick "
                         "CI pass, 10 locally (default 1)")
    group.addoption("--dp-jobs", dest="dp_jobs", type=_jobs_arg, default=None, metavar="N",
                    help="draw every audit's samples on N worker processes (-1: every core); verdicts are the same "
                         "for every N >= 1 (default: one stream per role, in the test's process)")
    group.addoption("--dp-strict", dest="dp_strict", action="store_true", default=False,
                    help="fail an audit that passes with a budget too small to detect twice its claimed epsilon "
                         "(without it: a WARNING in the test report and the dpharness summary)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "dp: differential-privacy audits with dpharness (added to tests that use "
                                       "the dp_audit fixture; deselect with -m 'not dp')")
    seed = config.getoption("dp_seed", None)
    scale = config.getoption("dp_budget", None)
    worker = getattr(config, "workerinput", None)  # pytest-xdist: every worker uses the controller's seed
    if seed is None and isinstance(worker, dict) and "dpharness_seed" in worker:
        seed = int(worker["dpharness_seed"])
    s = Session(seed=secrets.randbits(32) if seed is None else int(seed), scale=1.0 if scale is None else float(scale),
                 seed_given=config.getoption("dp_seed", None) is not None, scale_given=scale is not None,
                 strict=bool(config.getoption("dp_strict", False)), jobs=config.getoption("dp_jobs", None))
    config._dpharness_session = s
    SESSIONS.append(s)


def pytest_unconfigure(config: Any) -> None:
    s = getattr(config, "_dpharness_session", None)
    if s is not None and s in SESSIONS:
        SESSIONS.remove(s)


if pytest is not None:

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(node: Any) -> None:  # pytest-xdist controller: hand the seed to the workers
        s = getattr(node.config, "_dpharness_session", None)
        if s is not None:
            node.workerinput["dpharness_seed"] = s.seed

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(config: Any, items: list) -> None:
        for item in items:  # before -m deselects: `-m "not dp"` skips the dp_audit tests
            if "dp_audit" in getattr(item, "fixturenames", ()) and item.get_closest_marker("dp") is None:
                item.add_marker("dp")


def pytest_report_header(config: Any) -> list[str] | None:
    s = getattr(config, "_dpharness_session", None)
    if s is None or not (s.seed_given or s.scale_given):
        return None
    return [f"dpharness: dp_audit session seed {s.seed}, budget x{s.scale:g} (replay: {replay_options(s)})"]


def pytest_report_collectionfinish(config: Any, items: list) -> list[str] | None:
    s = getattr(config, "_dpharness_session", None)
    if s is None or s.seed_given or s.scale_given:
        return None  # silent unless used; with the options given, the header said it already
    n = sum(1 for it in items if it.get_closest_marker("dp") is not None)
    if not n:
        return None
    return [f"dpharness: {n} dp test(s); dp_audit session seed {s.seed}, budget x{s.scale:g} "
            f"(replay: {replay_options(s)})"]


def _set_item(item: Any) -> None:
    s = getattr(item.config, "_dpharness_session", None)
    if s is not None:
        s.item = item


if pytest is not None:

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(item: Any) -> None:  # before fixtures are set up: they may audit too
        _set_item(item)


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    s = active()
    if s is not None and s.item is not None and s.item.nodeid == nodeid:
        s.item = None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: Any) -> None:
    s = getattr(config, "_dpharness_session", None)
    if s is None or not s.records:
        return
    terminalreporter.section("dpharness audits")
    terminalreporter.write_line(f"session seed {s.seed}, budget x{s.scale:g} (replay: {replay_options(s)})")
    for nodeid, text in s.records:
        terminalreporter.write_line(f"{nodeid}: {text}")
