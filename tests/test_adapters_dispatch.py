"""dpharness.adapters' one table of libraries (``LIBRARIES``): ``adapt`` and ``from_target`` choose
a library module through it, ``from_target``'s mistakes name the field at fault, and a new library
is one module plus one table entry (a stand-in library, no DP library needed). The harness reads
the same table (``library:`` roots) and the same import helper (peers)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from dpharness import adapters as A
from dpharness import verifiers as V
from dpharness.adapters.library import Library, Target


def test_every_library_module_declares_itself_in_the_table():
    assert A.TARGET_ROOTS[:3] == ("opendp", "diffprivlib", "pydp")  # the shipped libraries first
    for lib in A.LIBRARIES:
        assert isinstance(lib, Library) and lib.root in lib.modules
        assert lib.adapt.__name__ in A.__all__  # its adapter is importable from dpharness.adapters
    from dpharness.bench.audits import spec

    assert spec.LIBRARIES == A.TARGET_ROOTS  # `library:` configs accept exactly the table's roots


def test_from_target_refuses_what_it_cannot_build_without_importing_anything():
    with pytest.raises(A.TargetError, match="not a class or function of one of the libraries") as info:
        A.from_target("numpy.random:laplace")
    assert info.value.field == "library" and isinstance(info.value, ValueError)
    with pytest.raises(A.TargetError, match="give it once") as info:
        A.from_target("diffprivlib.mechanisms:Laplace", {"name": "a"}, {"name": "b"})
    assert info.value.field == "adapter.name"


@pytest.mark.parametrize("params,adapter,field,text", [
    ({"epsilon": 1.0, "sensitivty": 1.0}, {}, "params.sensitivty", "did you mean 'sensitivity'"),
    ({"epsilon": 1.0, "sensitivity": 1.0}, {"float_event": False}, "adapter.float_event", "accepted: name, float_events"),
    ({"epsilon": -1.0, "sensitivity": 1.0}, {}, "params", "raised ValueError"),
    ({"epsilon": 1.0}, {}, "params", "raised TypeError"),
    ({"epsilon": 1.0, "sensitivity": 1.0}, {"name": 3}, "adapter", "name must be a string"),
])
def test_from_target_names_the_field_at_fault(params, adapter, field, text):
    pytest.importorskip("diffprivlib")
    with pytest.raises(A.TargetError, match=text) as info:
        A.from_target("diffprivlib.mechanisms:Laplace", params, adapter)
    assert info.value.field == field


def test_from_target_builds_what_the_adapter_builds():
    pytest.importorskip("diffprivlib")
    from diffprivlib.mechanisms import Laplace

    m = A.from_target("diffprivlib.mechanisms:Laplace", {"epsilon": 1.0, "sensitivity": 1.0}, {"float_events": False})
    ref = A.diffprivlib_mechanism(Laplace(epsilon=1.0, sensitivity=1.0), float_events=False)
    assert m.claim == ref.claim and m.name == ref.name and not m.float_events
    np.testing.assert_array_equal(m.sample(0.5, 5, 3), ref.sample(0.5, 5, 3))  # seeded from our generator
    with pytest.raises(A.TargetError, match="did you mean 'Laplace'") as info:
        A.from_target("diffprivlib.mechanisms:Laplacian", {"epsilon": 1.0})
    assert info.value.field == "library"


# A stand-in library: one module of objects, and its adapter
class Noisy:
    """A "library object": a count plus Laplace noise of scale 1/epsilon."""

    def __init__(self, epsilon: float) -> None:
        self.epsilon = epsilon


def adapt_toy(obj: Noisy, *, name: str = "") -> V.WrappedMechanism:
    def release(data, size, rng):
        return len(data) + np.random.default_rng(rng).laplace(0.0, 1.0 / obj.epsilon, size)

    return V.wrap(release, epsilon=obj.epsilon, neighbours="add_remove", kind="real", name=name or "toy Noisy")


@pytest.fixture
def toy_library(monkeypatch):
    toylib = types.ModuleType("toylib")
    Noisy.__module__ = "toylib"
    toylib.Noisy = Noisy
    monkeypatch.setitem(sys.modules, "toylib", toylib)

    def from_target(t: Target) -> V.WrappedMechanism:
        return t.adapt(adapt_toy, t.make(**t.params), **t.adapter)

    lib = Library(dist="toylib", root="toylib", takes="a toylib object", adapt=adapt_toy, from_target=from_target,
                  modules=("toylib",))
    monkeypatch.setattr(A, "LIBRARIES", (*A.LIBRARIES, lib))  # the one line a new library adds
    yield lib
    Noisy.__module__ = __name__


def test_a_new_library_is_one_table_entry(toy_library):
    m = A.adapt(Noisy(1.0))
    assert m.name == "toy Noisy" and m.claim.epsilon == 1.0
    built = A.from_target("toylib:Noisy", {"epsilon": 0.5}, {"name": "n"})
    assert built.name == "n" and built.claim.epsilon == 0.5
    with pytest.raises(A.TargetError, match="did you mean 'epsilon'") as info:
        A.from_target("toylib:Noisy", {"epsilom": 0.5})
    assert info.value.field == "params.epsilom"
    with pytest.raises(TypeError, match="or a toylib object; got int"):
        A.adapt(3)


def test_peers_import_through_the_adapters_require(monkeypatch):
    from dpharness.bench import peers

    assert issubclass(peers.PeerUnavailable, A.MissingLibrary) and issubclass(peers.PeerUnavailable, RuntimeError)
    monkeypatch.setitem(sys.modules, "nosuchpeer", None)  # import raises ImportError
    with pytest.raises(peers.PeerUnavailable, match=r"^nosuchpeer is not installed \(") as info:
        peers.require("nosuchpeer", "nosuchpeer")
    assert info.value.dist == "nosuchpeer" and str(info.value).endswith(peers.INSTALL_HINT)
    with pytest.raises(A.MissingLibrary, match=r"nosuchpeer is needed for this adapter.*pip install") as info:
        A.require("nosuchpeer", "nosuchpeer")
    assert info.value.dist == "nosuchpeer"


def test_a_misspelt_library_module_is_the_targets_mistake_not_a_missing_extra(tmp_path):
    """diffprivlib is installed: `diffprivlib.mechanism:Laplace` names a module it does not have,
    which is a mistake of `library:` (with the closest module), not the peers extra missing."""
    pytest.importorskip("diffprivlib")
    from dpharness import adapters
    from dpharness.bench.cli import main

    with pytest.raises(adapters.TargetError, match=r"no module 'diffprivlib.mechanism' \(did you mean "
                                                   r"'diffprivlib.mechanisms'\?\)") as e:
        adapters.from_target("diffprivlib.mechanism:Laplace", {"epsilon": 1, "sensitivity": 1})
    assert e.value.field == "library" and not isinstance(e.value, adapters.MissingLibrary)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("audits:\n  - {id: a, mechanism: {library: 'diffprivlib.mechanism:Laplace', params: {epsilon: 1, "
                   "sensitivity: 1}}, pairs: [[0.0, 1.0]], samples: [1000]}\n", encoding="utf-8")
    assert main(["validate", str(cfg)]) == 2


def test_every_misspelt_library_argument_is_named_at_once():
    pytest.importorskip("diffprivlib")
    from dpharness import adapters

    with pytest.raises(adapters.TargetError) as e:
        adapters.from_target("diffprivlib.mechanisms:Laplace", {"epsilon": 1, "sensitivty": 1, "delt": 0})
    assert e.value.field == "params.sensitivty"
    assert "'sensitivity'" in str(e.value) and "params.delt" in str(e.value) and "'delta'" in str(e.value)
