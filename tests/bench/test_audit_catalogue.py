"""Audit configs: the one ``mechanism: {name: ...}`` key of the catalogue (the older keys stay
spellings of it), the family-wise level split by the verifier (``family_alpha`` / ``family_split``),
and each config read and checked once."""

from pathlib import Path

import pytest
import yaml

from dpharness.bench.audits import build
from dpharness.bench.audits.catalogue import NAMESPACES, MechanismRef, split_name
from dpharness.bench.cli import main
from dpharness.bench.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]


def _cfg(*audits, **top):
    return {"name": "cat", "seed": 1, **top, "audits": list(audits)}


def _spec(raw):
    return load_config(raw).spec


def _error(raw) -> str:
    with pytest.raises(ConfigError) as info:
        cfg = load_config(raw)
        build.check(cfg.spec)
    return str(info.value)


@pytest.mark.parametrize("one_key, older", [
    ({"name": "zoo/rnm_laplace_value", "epsilon": 1.0}, {"zoo": "rnm_laplace_value", "epsilon": 1.0}),
    ({"name": "suite/dpsniper/NoisyHist2"}, {"suite": "dpsniper/NoisyHist2"}),
    ({"name": "peer/diffprivlib_median", "epsilon": 1.0}, {"peer": "diffprivlib_median", "epsilon": 1.0}),
    ({"name": "exponential", "example": True}, {"registry": "exponential", "example": True}),
])
def test_name_is_one_key_for_every_namespace(one_key, older):
    pairs = {"suite": "suite"}.get(next(iter(older)), "search")
    a = _spec(_cfg({"id": "a", "mechanism": one_key, "pairs": pairs, "samples": [4000]})).audits[0]
    b = _spec(_cfg({"id": "a", "mechanism": older, "pairs": pairs, "samples": [4000]})).audits[0]
    assert a == b  # the same audit, whichever spelling
    assert dict(a.mechanism) == older and a.mechanism.kind == next(iter(older))
    assert a.mechanism.key == "name" and b.mechanism.key == next(iter(older))


def test_name_all_expands_like_registry_all():
    a = _spec(_cfg({"id": "r", "mechanism": {"name": "all"}, "pairs": "search", "samples": [20000]}))
    b = _spec(_cfg({"id": "r", "mechanism": {"registry": "all"}, "pairs": "search", "samples": [20000]}))
    assert a.audits == b.audits and len(a.audits) > 10
    assert all(x.mechanism == {"registry": x.id.split(".", 1)[1], "example": True} for x in a.audits)


def test_name_mistakes_name_the_key():
    msg = _error(_cfg({"id": "a", "mechanism": {"name": "zoo/nope"}, "pairs": "witness", "samples": [100]}))
    assert "audits[0].mechanism.name: unknown zoo mechanism 'nope'" in msg and "zoo/laplace" in msg
    msg = _error(_cfg({"id": "a", "mechanism": {"name": "nowhere/x"}, "pairs": "search", "samples": [100]}))
    assert "audits[0].mechanism.name: unknown namespace 'nowhere'" in msg and "zoo/NAME" in msg
    msg = _error(_cfg({"id": "a", "mechanism": {"name": 5}, "pairs": "search", "samples": [100]}))
    assert "audits[0].mechanism.name: must be a mechanism name" in msg
    msg = _error(_cfg({"id": "a", "mechanism": {"name": "zoo/laplace", "epsilom": 1}, "pairs": "witness",
                       "samples": [100]}))
    assert "audits[0].mechanism.epsilom: unknown parameter of zoo 'laplace'" in msg
    msg = _error(_cfg({"id": "a", "mechanism": {"name": "zoo/laplace", "example": True}, "pairs": "witness",
                       "samples": [100]}))
    assert "accepted keys: name, and the parameters" in msg
    # a value the builder refuses is reported at the parameter (ParamError.field)
    msg = _error(_cfg({"id": "a", "mechanism": {"name": "duff_median", "epsilon": 1.0, "lower": 5.0, "upper": 1.0},
                       "pairs": "search", "samples": [1000]}))
    assert "audits[0].mechanism.lower: cannot build the mechanism: lower must be < upper" in msg


def test_name_beside_callable_is_its_claim_key(tmp_path):
    (tmp_path / "catmod.py").write_text("def fn(data, size, rng):\n    return rng.laplace(size=size)\n")
    raw = _cfg({"id": "a", "mechanism": {"callable": "catmod:fn", "epsilon": 1.0, "neighbours": "value",
                                         "sensitivity": 1.0, "name": "my count"}, "pairs": [[0, 1]], "samples": [100]})
    cfg = load_config(raw, base_dir=tmp_path)
    build.check(cfg.spec)
    a = cfg.spec.audits[0]
    assert a.mechanism.kind == "callable" and a.mechanism["name"] == "my count"
    assert build.build_mechanism(a.mechanism, a.import_paths)[1] == "my count"


def test_catalogue_names():
    assert split_name("suite/dpsniper/NoisyHist2") == ("suite", "dpsniper/NoisyHist2")
    assert split_name("exponential") == ("registry", "exponential")
    assert split_name("zoo/laplace") == ("zoo", "laplace")
    assert split_name("else/x") is None
    assert set(NAMESPACES) == {"zoo", "registry", "peer", "suite"}
    ref = MechanismRef({"zoo": "laplace", "epsilon": 1.0})
    assert ref.kind == "zoo" and ref.key == "zoo" and ref.name == "laplace" and ref.params == {"epsilon": 1.0}
    with pytest.raises(ValueError):
        MechanismRef({"zoo": "laplace", "suite": "dpsniper/NoisyHist2"})


def test_family_split_over_audits_keeps_one_level_in_every_tier():
    audits = [{"id": f"a{i}", "mechanism": {"name": "zoo/laplace", "epsilon": 1.0}, "pairs": "witness",
               "samples": [2000, 8000], "exact": False} for i in range(3)]
    raw = _cfg(*audits, family_alpha=0.03, family_split="audits", quick={"max_samples": 2000})
    full, quick = load_config(raw).spec, load_config(raw, quick=True).spec
    assert [a.alpha for a in full.audits] == [a.alpha for a in quick.audits] == [0.03 / 3] * 3
    assert full.family_split == "audits"
    tasks = load_config(_cfg(*audits, family_alpha=0.03, quick={"max_samples": 2000}))
    assert [a.alpha for a in tasks.spec.audits] == [0.03 / 6] * 3  # the default: over the 6 tasks


def test_family_split_mistakes():
    one = {"id": "a", "mechanism": {"name": "zoo/laplace"}, "pairs": "witness", "samples": [2000]}
    assert "family_split: must be one of tasks, audits" in _error(_cfg(one, family_alpha=0.05, family_split="pairs"))
    assert "family_split: says what family_alpha is split over" in _error(_cfg(one, family_split="audits"))


@pytest.mark.parametrize("config, each", [
    ("audit_dpsniper_suite", 0.0017), ("audit_statdp_suite", 0.0027), ("audit_library_bugs", 0.001),
    ("audit_peers", 0.005),
])
def test_configs_state_their_family_level_and_each_audit_keeps_its_former_alpha(config, each):
    # these files gave alpha per audit by hand before; the level each audit gets now is the same double
    path = ROOT / "configs" / f"{config}.yaml"
    raw = yaml.safe_load(path.read_text())
    assert "alpha" not in raw and "family_alpha" in raw
    for quick in (False, True):
        spec = load_config(path, quick=quick).spec
        assert {a.alpha for a in spec.audits} == {each}, quick  # exactly, not approximately


def test_audit_reads_and_checks_a_config_once(tmp_path, monkeypatch):
    from dpharness.bench import config as config_module

    path = tmp_path / "once.yaml"
    path.write_text(yaml.safe_dump(_cfg({"id": "a", "mechanism": {"name": "zoo/laplace", "epsilon": 1.0},
                                         "pairs": "witness", "samples": [200], "exact": False})))
    reads, checks = [], []
    read, check = config_module.read_yaml, build.check
    monkeypatch.setattr(config_module, "read_yaml", lambda p: reads.append(p) or read(p))
    monkeypatch.setattr(build, "check", lambda aset: checks.append(aset.checked) or check(aset))
    assert main(["audit", str(path), "--out", str(tmp_path / "runs")]) == 0
    assert len(reads) == 1
    assert checks == [False, True]  # `audit` checks before it prints; the runner finds the spec checked
