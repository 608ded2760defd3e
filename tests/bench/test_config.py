"""Config loading: every class of mistake gives a ConfigError naming the file and the dotted path."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import pytest
import yaml

from dpharness.bench.config import ConfigError, Ctx, config_hash, load_config
from dpharness.bench.cli.validate import run as cmd_validate
from dpharness.bench.run.tasks import format_value, make_key, stable_hash

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

BASE = {
    "name": "t",
    "seed": 1,
    "data": {"generator": "normal", "n": 50},
    "lower": -10,
    "upper": 10,
    "epsilon": [0.5, 1],
    "datasets": 2,
    "draws": 3,
    "mechanisms": [
        {"label": "cauchy", "name": "smooth_sensitivity_median", "noise": "cauchy"},
        {"label": "lap", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": 0.001},
        {"label": "lap9", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": 0.9},
    ],
}


def write(tmp_path: Path, raw: dict, name: str = "x.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return p


def err(tmp_path: Path, mutate, **kw) -> str:
    raw = copy.deepcopy(BASE)
    mutate(raw)
    p = write(tmp_path, raw)
    with pytest.raises(ConfigError) as exc:
        load_config(p, **kw)
    msg = str(exc.value)
    assert msg.startswith(f"{p}: "), msg  # the file comes first
    return msg[len(str(p)) + 2:]


def test_valid_base_loads_and_builds(tmp_path):
    cfg = load_config(write(tmp_path, BASE))
    assert cfg.name == "t" and cfg.seed == 1 and cfg.experiment == "median_accuracy"
    assert [m.label for m in cfg.spec.mechanisms] == ["cauchy", "lap", "lap9"]
    assert cfg.spec.epsilon == (0.5, 1.0)


def test_bad_value_from_mechanism_names_the_parameter(tmp_path):
    def m(raw):
        raw["mechanisms"][2]["delta"] = 1.5
    assert err(tmp_path, m) == "mechanisms[2].delta: must be in (0, 1), got 1.5"


def test_unknown_top_level_key(tmp_path):
    msg = err(tmp_path, lambda r: r.update(epsilonn=[1]))
    assert msg.startswith("epsilonn: unknown key (did you mean 'epsilon'?); accepted: ") and "datasets" in msg


def test_unknown_mechanism_parameter_lists_accepted(tmp_path):
    msg = err(tmp_path, lambda r: r["mechanisms"][1].update(deltaa=0.1))
    assert msg.startswith("mechanisms[1].deltaa: unknown parameter of smooth_sensitivity_median (did you mean 'delta'?); accepted: ")
    assert "noise" in msg and "delta" in msg


def test_unknown_mechanism_name(tmp_path):
    msg = err(tmp_path, lambda r: r["mechanisms"][0].update(name="no_such_mechanism"))
    assert msg.startswith("mechanisms[0].name: unknown mechanism 'no_such_mechanism'; accepted: ")
    assert "smooth_sensitivity_median" in msg


def test_wrong_type(tmp_path):
    assert err(tmp_path, lambda r: r.update(datasets="many")) == "datasets: must be an integer, got 'many'"
    assert err(tmp_path, lambda r: r.update(clip_output="yes please")) == "clip_output: must be true or false, got 'yes please'"
    assert err(tmp_path, lambda r: r.update(draws=2.5)) == "draws: must be an integer, got 2.5"


def test_grid_element_out_of_range_has_index(tmp_path):
    assert err(tmp_path, lambda r: r.update(epsilon=[0.5, -1])) == "epsilon[1]: must be > 0, got -1"
    assert err(tmp_path, lambda r: r.update(epsilon=[1, 1.0])) == "epsilon[1]: duplicate value 1.0 in the grid"


def test_missing_required_key(tmp_path):
    assert err(tmp_path, lambda r: r.pop("lower")) == "lower: is required (a number)"


def test_inconsistent_values(tmp_path):
    assert err(tmp_path, lambda r: r.update(upper=-20)) == "upper: must be > lower (-10), got -20"


def test_reserved_parameter_in_mechanism(tmp_path):
    msg = err(tmp_path, lambda r: r["mechanisms"][0].update(epsilon=1))
    assert msg == "mechanisms[0].epsilon: is not set per mechanism: it comes from the top-level epsilon grid"


def test_duplicate_labels(tmp_path):
    msg = err(tmp_path, lambda r: r["mechanisms"][1].update(label="cauchy"))
    assert msg.startswith("mechanisms[1].label: duplicate label 'cauchy'")


def test_mechanism_parameter_grid_expands_and_bad_element_has_index(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["mechanisms"] = [{"label": "SS δ={delta}", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": [0.001, 0.9]}]
    cfg = load_config(write(tmp_path, raw))
    assert [m.label for m in cfg.spec.mechanisms] == ["SS δ=0.001", "SS δ=0.9"]
    assert dict(cfg.spec.mechanisms[1].params)["delta"] == 0.9
    msg = err(tmp_path, lambda r: r.update(mechanisms=[{"name": "smooth_sensitivity_median", "noise": "laplace", "delta": [0.1, 2]}]))
    assert msg == "mechanisms[0].delta[1]: must be in (0, 1), got 2"


def test_data_errors(tmp_path):
    msg = err(tmp_path, lambda r: r.update(data={"generator": "gaussian", "n": 5}))
    assert msg.startswith("data.generator: must be one of normal, uniform, laplace")
    assert err(tmp_path, lambda r: r["data"].update(scale=-1)) == "data.scale: must be > 0, got -1.0"
    assert err(tmp_path, lambda r: r["data"].update(n=[10, 0])) == "data.n[1]: must be in [1, 100000000], got 0"
    msg = err(tmp_path, lambda r: r["data"].update(df=3))
    assert msg.startswith("data.df: unknown key; accepted: generator, label, n, loc, scale")
    msg = err(tmp_path, lambda r: r.update(data={"dataset": "fair", "column": "agee"}))
    assert msg.startswith("data.column: fair has no column 'agee' (did you mean 'age'?); columns: ") and "yrs_married" in msg
    msg = err(tmp_path, lambda r: r.update(data=[{"generator": "normal", "n": 5}, {"csv": "nope.csv", "column": "a"}]))
    assert msg.startswith("data[1].csv: file not found: ")


def test_csv_data_relative_to_config(tmp_path):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n3,4\n5,6\n", encoding="utf-8")
    raw = copy.deepcopy(BASE)
    raw["data"] = {"csv": "d.csv", "column": "b"}
    cfg = load_config(write(tmp_path, raw))
    d = cfg.spec.data[0]
    assert d.label == "d.b" and d.size() == 3
    assert list(d.generate(None)) == [2.0, 4.0, 6.0]


def test_reference_errors(tmp_path):
    ref = {"rows": [{"mechanism": "lapp", "mean": {0.5: 1.0}}]}
    msg = err(tmp_path, lambda r: r.update(reference=ref))
    assert msg == "reference.rows[0].mechanism: no mechanism labelled 'lapp' (did you mean 'lap'?); labels: cauchy, lap, lap9"
    ref = {"rows": [{"mechanism": "lap", "mean": {3: 1.0}}]}
    msg = err(tmp_path, lambda r: r.update(reference=ref))
    assert msg == "reference.rows[0].mean.3: keys are epsilon values of the grid (0.5, 1), got 3"
    ref = {"tolerance": {"abs": 0.1, "sigma": 3}, "rows": []}
    assert err(tmp_path, lambda r: r.update(reference=ref)).startswith("reference.tolerance.sigma: unknown key")


def test_quick_section_errors_point_into_quick(tmp_path):
    msg = err(tmp_path, lambda r: r.update(quick={"datasets": 0}))
    assert msg == "quick.datasets: must be >= 1, got 0"
    msg = err(tmp_path, lambda r: r.update(quick={"datasetz": 2}))
    assert msg.startswith("quick.datasetz: overrides a key the config does not set")
    raw = copy.deepcopy(BASE)
    raw["quick"] = {"datasets": 1, "epsilon": 2}
    p = write(tmp_path, raw)
    full, quick = load_config(p), load_config(p, quick=True)
    assert (full.spec.datasets, full.spec.epsilon) == (2, (0.5, 1.0))
    assert (quick.spec.datasets, quick.spec.epsilon) == (1, (2.0,))
    assert full.hash != quick.hash and "quick" not in quick.raw


def test_mechanism_level_error_without_named_field(tmp_path):
    # delta missing for Laplace noise: the mechanism's message, located at the entry.
    msg = err(tmp_path, lambda r: r["mechanisms"][1].pop("delta"))
    assert msg.startswith("mechanisms[1]: smooth_sensitivity_median: delta must be in (0, 1)")


def test_yaml_syntax_and_top_level_shape(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\nmechanisms: [a, b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml: YAML syntax error: line \d+, column \d+"):
        load_config(p)
    p.write_text("- 1\n- 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml: the top level must be a mapping"):
        load_config(p)


def test_unknown_experiment_kind(tmp_path):
    msg = err(tmp_path, lambda r: r.update(experiment="median_acc"))
    assert msg.startswith("experiment: unknown experiment kind 'median_acc' (did you mean 'median_accuracy'?); accepted: ")
    names = msg.split("accepted: ", 1)[1].split(", ")
    assert names == sorted(names) and {"median_accuracy", "private_mode", "pf_vs_em", "topk_utility"} <= set(names)


def test_ctx_helpers_messages():
    ctx = Ctx("configs/x.yaml")
    with pytest.raises(ConfigError, match=r"^configs/x\.yaml: mechanisms\[2\]\.delta: must be in \(0, 1\), got 1\.5$"):
        ctx.at("mechanisms", 2).number({"delta": 1.5}, "delta", lo=0, hi=1, lo_open=True, hi_open=True)
    with pytest.raises(ConfigError, match=r"^configs/x\.yaml: a\.b: must be one of u, v; got 'w'$"):
        ctx.at("a").choice({"b": "w"}, "b", ("u", "v"))
    # PyYAML reads 1e-3 as a string; numeric fields accept it.
    assert ctx.get({"d": "1e-3"}, "d", float) == 0.001
    assert ctx.grid({"e": 2}, "e", float) == (2.0,)
    with pytest.raises(ConfigError, match=r"^configs/x\.yaml: e: must not be an empty list$"):
        ctx.grid({"e": []}, "e", float)


def test_config_hash_is_canonical():
    a = {"name": "x", "epsilon": [1, 0.5], "data": {"n": 10, "generator": "normal"}, "description": "a"}
    b = {"data": {"generator": "normal", "n": 10.0}, "epsilon": [1.0, 0.5], "name": "x", "description": "b"}
    c = {"name": "x", "epsilon": [0.5, 1], "data": {"n": 10, "generator": "normal"}}
    assert config_hash(a) == config_hash(b) != config_hash(c)


def test_stable_hash_and_keys_are_fixed():
    # First 8 bytes of SHA-256("abc") = ba7816bf8f01cfea (FIPS 180-2 test vector): not Python's hash().
    assert stable_hash("abc") == 0xBA7816BF8F01CFEA
    assert make_key(mechanism="a|b", epsilon=1.0, dataset=3) == "mechanism=a\\|b|epsilon=1|dataset=3"
    assert format_value(0.1) == "0.1" and format_value(2.0) == "2" and format_value(True) == "True"


def test_validate_command(tmp_path, capsys):
    good = write(tmp_path, BASE, "good.yaml")
    raw = copy.deepcopy(BASE)
    raw["mechanisms"][2]["delta"] = 1.5
    bad = write(tmp_path, raw, "bad.yaml")
    assert cmd_validate(argparse.Namespace(configs=[str(good)])) == 0
    assert "ok  " in capsys.readouterr().out
    assert cmd_validate(argparse.Namespace(configs=[str(good), str(bad)])) == 2  # a config error: exit 2
    assert f"{bad}: mechanisms[2].delta: must be in (0, 1), got 1.5" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_median_configs_validate(path):
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if "audits" in raw or raw.get("experiment", "median_accuracy") != "median_accuracy":
        pytest.skip("another kind's config (validated by its owner's tests)")
    cfg = load_config(path)
    assert cfg.name == path.stem
    if "quick" in raw:
        load_config(path, quick=True)


# -- every mistake at once -------------------------------------------------------------------------


def errors_of(tmp_path: Path, raw: dict, **kw) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        load_config(write(tmp_path, raw), **kw)
    return exc.value


def test_three_independent_mistakes_are_all_listed(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["mechanisms"][2]["delta"] = 1.5
    raw["datasets"] = 0
    raw["epsilonn"] = 1
    exc = errors_of(tmp_path, raw)
    assert [p for p, _ in exc.errors] == ["epsilonn", "datasets", "mechanisms[2].delta"]
    lines = str(exc).splitlines()
    assert lines[0] == f"{tmp_path / 'x.yaml'}: 3 mistakes:"
    assert lines[1:] == ["  epsilonn: unknown key (did you mean 'epsilon'?); accepted: " + ", ".join(
        ["name", "experiment", "seed", "description", "quick", "data", "statistic", "q", "truth", "lower", "upper",
         "clip_output", "epsilon", "datasets", "draws", "metric", "scale", "title", "mechanisms", "reference"]),
        "  datasets: must be >= 1, got 0", "  mechanisms[2].delta: must be in (0, 1), got 1.5"]


def test_a_mistake_inside_a_wrong_field_is_not_repeated(tmp_path):
    # mechanisms[0] is not a mapping: its name, label, ... are not reported again
    raw = copy.deepcopy(BASE)
    raw["mechanisms"][0] = "smooth_sensitivity_median"
    raw["data"] = {"generator": "normal", "n": 0, "scale": -1}
    exc = errors_of(tmp_path, raw)
    assert exc.errors == [("data.n", "must be in [1, 100000000], got 0"), ("data.scale", "must be > 0, got -1.0"),
                          ("mechanisms[0]", "must be a mapping (key: value lines), got 'smooth_sensitivity_median'")]


def test_main_and_quick_tier_mistakes_are_reported_together(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["draws"] = 0
    raw["quick"] = {"datasets": 0, "epsilon": [1, -2]}
    exc = errors_of(tmp_path, raw)
    assert [p for p, _ in exc.errors] == ["draws", "quick.epsilon[1]", "quick.datasets"]
    # with --quick only the quick tier is read
    raw["draws"] = 3
    assert [p for p, _ in errors_of(tmp_path, raw, quick=True).errors] == ["quick.epsilon[1]", "quick.datasets"]


def test_quick_section_mistakes_point_into_quick(tmp_path):
    raw = {**copy.deepcopy(BASE), "quick": {"name": "y", "mechanisms": [{"name": "duff_median", "lowerr": 1}]}}
    exc = errors_of(tmp_path, raw)
    assert exc.errors[0] == ("quick.name", "cannot be overridden by quick:; accepted: any other top-level key")
    assert exc.errors[1][0] == "quick.mechanisms[0].lowerr"


def test_standalone_ctx_raises_at_once_and_collecting_ctx_goes_on():
    strict = Ctx("f.yaml")
    with pytest.raises(ConfigError, match=r"^f\.yaml: a: must be >= 1, got 0$"):
        strict.number({"a": 0}, "a", lo=1, integer=True)
    errors: list = []
    ctx = Ctx("f.yaml", errors=errors)
    # a wrong field gives its default, or a placeholder inside the range, and the parse goes on
    assert ctx.number({"a": 0}, "a", 5, lo=1) == 5
    assert ctx.number({"b": "x"}, "b", lo=0, hi=1, lo_open=True, hi_open=True) == 0.5
    assert ctx.grid({"e": [1, -1, 2]}, "e", float, lo=0, lo_open=True) == (1.0, 2.0)
    assert ctx.choice({"c": "lowr"}, "c", ("lower", "upper")) == "lower"
    assert ctx.at("m", 0).get({}, "name", str) == ""
    assert [p for p, _ in errors] == ["a", "b", "e[1]", "c", "m[0].name"]
    assert ctx.failed("m") and not ctx.failed("n") and ctx.at("e").failed("[1]")
    with pytest.raises(ConfigError) as exc:
        ctx.error("z", "cannot go on")
    assert len(exc.value.errors) == 6 and str(exc.value).startswith("f.yaml: 6 mistakes:\n  a: must be >= 1")


def test_non_finite_numbers_are_named_as_such(tmp_path):
    assert err(tmp_path, lambda r: r.update(upper=float("inf"))) == "upper: must be a finite number, got inf"
    assert err(tmp_path, lambda r: r.update(epsilon=[0.5, float("nan")])) == "epsilon[1]: must be a finite number, got nan"
    assert err(tmp_path, lambda r: r.update(draws=10**400)).startswith("draws: must be a finite number, got 1000")


def test_parser_crash_on_a_placeholder_reports_the_recorded_mistakes(tmp_path, monkeypatch):
    from dpharness.bench.experiments import median_accuracy

    real = median_accuracy.parse

    def fragile(raw, ctx):  # a kind that trips over the placeholder of a wrong field
        ctx.number(raw, "datasets", lo=1, integer=True)
        raise ZeroDivisionError("placeholder")

    monkeypatch.setattr(median_accuracy, "parse", fragile)
    exc = errors_of(tmp_path, {**BASE, "datasets": 0})
    assert exc.errors == [("datasets", "must be >= 1, got 0")]
    monkeypatch.setattr(median_accuracy, "parse", lambda raw, ctx: 1 / 0)
    with pytest.raises(ZeroDivisionError):  # no mistake recorded: a bug, shown as such
        load_config(write(tmp_path, BASE))
    monkeypatch.setattr(median_accuracy, "parse", real)


# -- reading the file ------------------------------------------------------------------------------


def test_duplicate_keys_name_the_key_and_both_lines(tmp_path):
    p = tmp_path / "d.yaml"
    p.write_text("name: d\nepsilon: 1\ndraws: 3\nepsilon: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_config(p)
    assert str(exc.value) == (f"{p}: line 4: duplicate key 'epsilon' (first set on line 2); YAML would keep only "
                              f"the last value silently: remove one of them")
    p.write_text("mechanisms:\n  - {name: a, noise: x,\n     noise: y}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 3: duplicate key 'noise' \(first set on line 2\)"):
        load_config(p)
    # merge keys (<<) may be overridden: not duplicates
    p.write_text("base: &b {n: 1, loc: 0}\nother: {<<: *b, loc: 2}\n", encoding="utf-8")
    from dpharness.bench.config import read_yaml

    assert read_yaml(p)["other"] == {"n": 1, "loc": 2}


def test_unreadable_files_are_one_clear_line(tmp_path):
    p = tmp_path / "latin.yaml"
    p.write_bytes(b"name: x\ntitle: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"latin\.yaml: not UTF-8 text \(byte 0xe9 on line 2\); save the config as UTF-8$"):
        load_config(p)
    (tmp_path / "a.yaml").write_text("name: a\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r": is a directory, not a config file; give one YAML file \(it holds a\.yaml"):
        load_config(tmp_path)
    with pytest.raises(ConfigError, match=r"nope\.yaml: file not found$"):
        load_config(tmp_path / "nope.yaml")
    for text in ("", "# only a comment\n", "\n\n"):
        p.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=r"latin\.yaml: the file is empty \(or only comments\)"):
            load_config(p)
    p.write_bytes(b"\xef\xbb\xbf" + yaml.safe_dump(BASE).encode())  # a UTF-8 byte-order mark is fine
    assert load_config(p).name == "t"


def test_validate_checks_the_quick_tier_with_the_kinds_check(tmp_path, capsys, monkeypatch):
    from dpharness.bench.experiments import median_accuracy

    seen = []
    monkeypatch.setattr(median_accuracy, "check", lambda spec: seen.append(spec.datasets), raising=False)
    p = write(tmp_path, {**BASE, "quick": {"datasets": 1}})
    assert cmd_validate(argparse.Namespace(configs=[str(p)])) == 0
    assert seen == [2, 1]  # the full config, then the quick tier
    assert capsys.readouterr().out.startswith(f"ok  {p}: t (median_accuracy, 12 tasks, quick: 6 tasks, hash ")

    def refuse(spec):
        from dpharness.bench.config import ConfigError as CE
        raise CE(f"{p}: mechanisms: cannot build")

    monkeypatch.setattr(median_accuracy, "check", refuse, raising=False)
    assert cmd_validate(argparse.Namespace(configs=[str(p)])) == 2
    assert capsys.readouterr().err == f"error: {p}: mechanisms: cannot build\n"
