"""Running a config: the runner and its run folders (``dpharness run``, and ``audit`` through it).

* :mod:`.runner` -- :func:`~bench.run.runner.run`, the orchestration: config -> tasks -> chunks on
  workers -> run folder;
* :mod:`.tasks` -- :class:`~bench.run.tasks.Task`, :class:`~bench.run.tasks.Summary` and the seed
  derivation that makes results independent of jobs and order (what experiment kinds build on);
* :mod:`.chunks` -- chunk sizes and dispatch order; :mod:`.execution` -- tasks and chunks in a
  worker; :mod:`.backends` -- loky / threading / dask executors; :mod:`.cpu_share` -- free
  processors; :mod:`.interrupts` -- the parent's Ctrl-C handling;
* :mod:`.folders` -- run-folder layout, atomic writes, task records, the run lock;
  :mod:`.claim` -- ``--out`` checks and claiming (resuming) a folder; :mod:`.outputs` --
  results.csv, summary, figures, manifest.json; :mod:`.result` -- what a run returns or raises.

Nothing is imported here: workers import :mod:`.tasks` and :mod:`.execution` without the rest.
"""
