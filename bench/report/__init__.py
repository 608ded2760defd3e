"""What commands write and print besides run folders' own files.

* :mod:`.verdicts` -- ``--json`` / ``--junit`` verdict files for CI (output paths checked first);
* :mod:`.provenance` -- the one provenance writer: versions, git commit, platform, command line;
* :mod:`.tables` -- the one table writer (aligned text, GitHub Markdown);
* :mod:`.plots` -- figures, and what ``dpharness plot`` redraws;
* :mod:`.progress` -- the one progress display.

Nothing is imported here (matplotlib, pandas and tqdm load only with the module that needs them).
"""
