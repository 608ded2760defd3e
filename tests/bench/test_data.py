"""bench.config.data: data specs from config entries, CSV reading, and data outside the declared range."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpharness.bench.config import ConfigError, Ctx, load_config
from dpharness.bench.config.data import GENERATORS, DataSpec, csv_column, parse_data
from dpharness.bench.experiments import median_accuracy
from dpharness.bench.run.tasks import Task, data_rng


def parse(raw, base_dir: Path | None = None) -> tuple[tuple[DataSpec, ...], list]:
    errors: list = []
    specs = parse_data(raw, Ctx("f.yaml", base_dir=base_dir, errors=errors).at("data"))
    return specs, errors


def test_generator_grid_expands_and_records_the_entry_path():
    specs, errors = parse([{"generator": "normal", "n": [10, 20], "scale": [1, 2]}, {"generator": "poisson", "n": 5}])
    assert errors == []
    assert [(s.label, s.n, s.where) for s in specs] == [
        ("normal(scale=1)", 10, "data[0]"), ("normal(scale=1)", 20, "data[0]"),
        ("normal(scale=2)", 10, "data[0]"), ("normal(scale=2)", 20, "data[0]"), ("poisson", 5, "data[1]")]
    # the entry path is not part of the identity: the same data read elsewhere draws the same datasets
    assert specs[0].data_key(3) == "normal(loc=0,scale=1)|n=10|dataset=3"


def test_every_mistake_of_the_data_is_recorded():
    specs, errors = parse([{"generator": "normal", "n": 0, "scale": -1}, {"generator": "uniformm", "n": 5},
                           {"csv": "a.csv", "dataset": "fair", "column": "x"}])
    assert specs == ()
    assert errors == [
        ("data[0].n", "must be in [1, 100000000], got 0"),
        ("data[0].scale", "must be > 0, got -1.0"),
        ("data[1].generator", "must be one of normal, uniform, laplace, student_t, cauchy, lognormal, exponential, "
                              "gamma, poisson, integers, constant, mixture; got 'uniformm' (did you mean 'uniform'?)"),
        ("data[2]", "name exactly one data source (generator, dataset, csv); got dataset, csv"),
    ]


def write_csv(tmp_path: Path, text: str | bytes, name: str = "d.csv") -> Path:
    p = tmp_path / name
    p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("text,column,path,message", [
    ("", "a", "data.csv", "d.csv is empty (a CSV file needs a header line naming its columns)"),
    ("a,b\n", "a", "data.column", "d.csv: column 'a' has no values (every row is empty or missing)"),
    ("a,b\n1,x\n2,y\n3,z\n", "b", "data.column",
     "d.csv: column 'b' is not numeric: row 1 (line 2 of the file) is 'x', and 2 more such rows"),
    ("a\n1\n-inf\n", "a", "data.column", "d.csv: column 'a' contains -inf; data must be finite"),
    ("a,b\n1,2\n", "B", "data.column", "d.csv has no column 'B' (did you mean 'b'?); columns: a, b"),
    (b"a\n1\n\xff\n", "a", "data.csv", "d.csv is not UTF-8 text; save it as UTF-8 CSV"),
], ids=["empty", "header_only", "text", "inf", "column_case", "not_utf8"])
def test_bad_csv_is_named(tmp_path, text, column, path, message):
    write_csv(tmp_path, text)
    csv_column.cache_clear()
    specs, errors = parse({"csv": "d.csv", "column": column}, tmp_path)
    assert specs == () and errors == [(path, message)]


def test_csv_directory_and_missing_file(tmp_path):
    (tmp_path / "sub").mkdir()
    assert parse({"csv": "sub", "column": "a"}, tmp_path)[1] == [("data.csv", f"{tmp_path / 'sub'} is a directory, not a CSV file")]
    assert parse({"csv": "no.csv", "column": "a"}, tmp_path)[1] == [("data.csv", f"file not found: {tmp_path / 'no.csv'}")]


def test_csv_missing_cells_are_dropped_and_values_kept_exactly(tmp_path):
    # documented: rows with a missing value are dropped; numbers are read exactly as pandas reads them
    write_csv(tmp_path, "a,b\n0.1,x\n,y\nNA,z\n1e-3,w\n")
    csv_column.cache_clear()
    specs, errors = parse({"csv": "d.csv", "column": "a"}, tmp_path)
    assert errors == [] and specs[0].size() == 2
    assert list(specs[0].generate(None)) == [0.1, 0.001]


@pytest.mark.parametrize("entry,bounds,outside", [
    ({"generator": "normal", "n": 5, "loc": 1e6}, (0, 1), False),  # unbounded support: never all outside
    ({"generator": "constant", "n": 5, "value": 3}, (0, 1), True),
    ({"generator": "constant", "n": 5, "value": 1}, (0, 1), False),  # on the bound is inside
    ({"generator": "uniform", "n": 5, "low": 2, "high": 3}, (0, 1), True),
    ({"generator": "integers", "n": 5, "low": -3, "high": 0}, (0, 1), False),
    ({"generator": "exponential", "n": 5}, (-2, -1), True),
    ({"generator": "lognormal", "n": 5}, (-2, 0.5), False),
    ({"generator": "mixture", "n": 5, "components": [{"generator": "constant", "value": 5, "weight": 1},
                                                     {"generator": "normal", "weight": 1}]}, (0, 1), False),
])
def test_outside_from_the_generators_support(entry, bounds, outside):
    (spec,), errors = parse(entry)
    assert errors == []
    msg = spec.outside(bounds)
    assert (msg is not None) == outside
    if outside:
        assert msg.startswith(f"every data point lies outside [lower, upper] = [{bounds[0]}, {bounds[1]}]: {spec.name} takes values in")


def test_outside_real_data(tmp_path):
    write_csv(tmp_path, "a\n5\n7\n")
    csv_column.cache_clear()
    (spec,), _ = parse({"csv": "d.csv", "column": "a"}, tmp_path)
    assert spec.outside((0, 4)) == ("every data point lies outside [lower, upper] = [0, 4]: d.a has values in [5, 7]; "
                                    "each would be clipped to a bound")
    assert spec.outside((0, 5)) is None  # one point on the bound


def test_every_generator_has_a_support_consistent_with_its_draws():
    # The support hull used by `outside` must contain every draw (else a valid config could be refused).
    from dpharness.bench.config.data import _SUPPORT

    rng = np.random.default_rng(0)
    for name, g in GENERATORS.items():
        p = dict(g.params)
        lo, hi = _SUPPORT[name](p) if name in _SUPPORT else (-math.inf, math.inf)
        x = g.draw(rng, 10_000, p)
        assert np.all((x >= lo) & (x <= hi)), name


BASE = {"name": "t", "seed": 3, "lower": -1, "upper": 1, "epsilon": 1, "datasets": 3, "draws": 2,
        "data": {"generator": "normal", "n": 200}, "mechanisms": [{"label": "duff", "name": "duff_median"}]}


def test_clipped_counts_the_points_outside_the_range():
    cfg = load_config(BASE)
    spec = cfg.spec
    for i, task in enumerate(median_accuracy.tasks(spec)):
        (row,) = median_accuracy.run_task(spec, task, np.random.default_rng(i))
        d = spec.data[0]
        x = d.generate(data_rng(spec.seed, d.data_key(row["dataset"])))
        assert row["clipped"] == int(np.sum(np.abs(x) > 1)) and row["clipped"] > 0  # N(0,1): ~32 % outside [-1, 1]


def test_data_entirely_outside_is_a_config_error_at_the_entry():
    with pytest.raises(ConfigError) as exc:
        load_config({**BASE, "data": [{"generator": "normal", "n": 5}, {"generator": "constant", "n": 5, "value": 9}]})
    assert exc.value.errors == [("data[1]", "every data point lies outside [lower, upper] = [-1, 1]: constant takes "
                                            "values in [9, 9]; each would be clipped to a bound (the top-level lower/upper)")]
    # the entry's own range is used when it has one
    ok = load_config({**BASE, "data": {"generator": "constant", "n": 5, "value": 9, "lower": 0, "upper": 10}})
    assert ok.spec.bounds(ok.spec.data[0]) == (0.0, 10.0)


def test_task_for_unknown_data_is_a_key_error():
    spec = load_config(BASE).spec
    with pytest.raises(KeyError):
        median_accuracy.run_task(spec, Task("k", {"data": "nope", "n": 5, "mechanism": "duff", "epsilon": 1.0,
                                                  "dataset": 0}), np.random.default_rng(0))
