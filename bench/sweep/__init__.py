"""``dpharness sweep``: audit every ε-claiming function of an installed library release from a
catalogue (:mod:`~dpharness.bench.sweep.catalogue`; docs/sweep.md)."""
