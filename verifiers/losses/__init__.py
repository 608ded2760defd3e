"""Exact privacy losses from exact output laws: canonical forms, grids, comparisons, vector laws."""
