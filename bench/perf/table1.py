"""The ``table1`` section: wall time of ``bench.run.runner.run`` on the Table 1 config at each --jobs.

jobs=1 is the floor, so ``ratio_to_floor`` of ``table1[jobs=2]`` is the inverse of the parallel
speed-up. ``n`` is the number of tasks of the timed config.
"""

from __future__ import annotations

import gc
import inspect
import pathlib
import statistics
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

from dpharness.bench.perf.plan import ROOT, Plan
from dpharness.bench.perf.rows import Report, floor_row, rows_for
from dpharness.bench.perf.timing import Impl, timed

__all__ = ["bench_table1"]


def _call_runner(run: Callable[..., Any], cfg: Any, **kw: Any) -> Any:
    """Call ``bench.run.runner.run`` with whichever of our keywords it accepts."""
    try:
        sig = inspect.signature(run)
        accepts_all = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        kw = {k: v for k, v in kw.items() if accepts_all or k in sig.parameters}
    except (TypeError, ValueError):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(cfg, **kw)


def bench_table1(plan: Plan, report: Report) -> None:
    """Wall time of the Table 1 reproduction at each --jobs (jobs=1 is the floor).

    Warm-up: one untimed run of a tiny version of the config (2 datasets x 5 draws) at every
    --jobs value first, so imports, matplotlib's first figure and joblib's worker start-up are
    not billed to the first timed run (they would be several seconds on their own: the cold
    times are kept in the note).
    """
    cfg = pathlib.Path(plan.table1_config)
    if not cfg.is_absolute() and not cfg.exists():
        cfg = ROOT / cfg  # run from elsewhere than the checkout
    name = "table1"
    if not cfg.exists():
        report.skip("table1", name, f"{plan.table1_config} does not exist yet")
        return
    try:
        import yaml

        from dpharness.bench.run import runner
        run = runner.run
        raw = yaml.safe_load(cfg.read_text())
    except Exception as exc:  # broad: whatever keeps the runner or its config from loading skips this section
        report.skip("table1", name, f"bench.run.runner.run is not available ({type(exc).__name__}: {exc})")
        return
    raw.pop("quick", None)
    config: Any = str(cfg)
    label = "full config"
    if plan.table1_overrides:
        config = {**raw, **dict(plan.table1_overrides)}
        label = "overrides " + ", ".join(f"{k}={v}" for k, v in plan.table1_overrides)
    tiny = {**raw, "datasets": 2, "draws": 5}
    n_tasks: dict[str, int] = {}

    def once(conf: Any, jobs: int) -> None:
        with tempfile.TemporaryDirectory(prefix="dpharness-bench-") as out:
            res = _call_runner(run, conf, jobs=jobs, out=out, progress=False)
        errors = getattr(res, "errors", 0)
        if errors:
            raise RuntimeError(f"{errors} task(s) failed in the run at jobs={jobs}")
        if conf is config:
            n_tasks["n"] = int(getattr(res, "n_tasks", 1) or 1)

    impls = [Impl(f"table1[jobs={jobs}]", "floor" if i == 0 else "dpharness",
                  lambda s, jobs=jobs: once(config, jobs), 1, measured_size=1)
             for i, jobs in enumerate(plan.table1_jobs)]
    floor, others = impls[0], impls[1:]
    cold: list[str] = []
    try:
        warm_jobs = plan.table1_jobs if plan.table1_warm_each else (max(plan.table1_jobs),)
        for jobs in warm_jobs:
            cold.append(f"jobs={jobs} {timed(lambda: once(tiny, jobs)):.1f}s")
        for rep in range(plan.table1_repeats):
            gc.collect()
            t = floor.call()
            floor.times[rep] = t
            for impl in others:
                impl.floor_times.setdefault(floor.name, {})[rep] = t
                impl.times[rep] = impl.call()
    except Exception as exc:  # broad: a failing run skips this section, the other sections still report
        report.skip("table1", name, f"runner failed: {type(exc).__name__}: {exc}")
        return
    n = n_tasks.get("n", 1)
    warm = f"{label}; warm (cold first call on a 2x5 config: {', '.join(cold)})"
    report.rows.append(floor_row("table1", n, floor))
    report.rows[-1]["note"] = f"floor for the --jobs scaling; {warm}"
    for impl in others:
        speedup = statistics.median(floor.times.values()) / statistics.median(impl.times.values())
        report.rows.extend(rows_for("table1", n, impl, [floor], [],
                                    note=f"speed-up {speedup:.2f}x over jobs=1; {warm}"))
    report.measured("table1", n, [floor], others)
    report.step("table1")
