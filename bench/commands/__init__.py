"""Command handlers of ``dpharness run``, ``validate`` and ``plot``: parse nothing, compute nothing.

Each handler takes the parsed arguments, calls the library function that does the work
(:func:`dpharness.bench.runner.run`, :func:`dpharness.bench.config.load_config`,
:func:`dpharness.bench.plots.rebuild_figures`), prints the result and returns the exit code.
``audit``, ``regress`` and ``bench`` keep their handlers in ``bench/audits/cli.py``,
``bench/regress/cli.py`` and ``bench/perf/cli.py``; ``bench/cli.py`` parses and dispatches.
"""
