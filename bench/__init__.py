"""dpharness experiment runner, configs, plots, regression checks and performance benchmarks."""
