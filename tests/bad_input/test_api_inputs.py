"""Bad input to the Python API: mechanisms, their samplers and the verifier.

Every case calls the API in-process with one mistake and asserts a ``ValueError``/``TypeError``
whose message names the argument at fault (and, where it matters, what would be accepted),
never numpy's bare message, a ``MemoryError``, an ``AttributeError`` or a warning (the suite runs
with ``filterwarnings = error``).
"""

from __future__ import annotations

import re
import numpy as np
import pytest

from dpharness import mechanisms, verifiers
from dpharness.mechanisms.finite import ExponentialMechanism
from dpharness.mechanisms.smooth_sensitivity import median_smooth_sensitivity
from dpharness.verifiers.controls import zoo
from dpharness.verifiers.events import Event

SCORES = np.array([0.0, 1.0, 2.0])
RECORDS = np.array([1.0, 2.0, 3.0, 4.0, 5.0])


def em(**kw):
    return mechanisms.make("exponential", **{"epsilon": 1.0, **kw})


def duff(**kw):
    return mechanisms.make("duff_median", **{"epsilon": 1.0, "lower": 0.0, "upper": 10.0, **kw})


def ssm(**kw):
    return mechanisms.make("smooth_sensitivity_median", **{"epsilon": 1.0, "lower": 0.0, "upper": 10.0, **kw})


def lap_value():
    return verifiers.wrap(lambda d, n, r: float(d) + r.laplace(size=n), epsilon=1.0, neighbours="value",
                          name="lapfn")


# (id, call, exception type, regex that must be in the message)
MECHANISM_CASES = [
    # -- constructor parameters
    ("epsilon-zero", lambda: em(epsilon=0), ValueError, "epsilon"),
    ("epsilon-nan", lambda: em(epsilon=float("nan")), ValueError, "epsilon"),
    ("epsilon-string", lambda: em(epsilon="1"), ValueError, "epsilon"),
    ("epsilon-bool", lambda: em(epsilon=True), ValueError, "epsilon"),
    ("sensitivity-negative", lambda: em(sensitivity=-1.0), ValueError, "sensitivity"),
    ("monotone-string", lambda: em(monotone="yes"), ValueError, "monotone"),
    ("utility-unknown", lambda: em(utility="sum"), ValueError, "utility"),
    ("candidates-missing-for-count", lambda: em(utility="count"), ValueError, "candidates"),
    ("candidates-empty", lambda: em(candidates=()), ValueError, "candidates"),
    ("candidates-duplicate", lambda: em(candidates=(1, 1, 2)), ValueError, "candidates"),
    ("noise-unknown", lambda: mechanisms.make("report_noisy_max", epsilon=1.0, noise="normal"), ValueError, "noise"),
    ("sampler-unknown", lambda: mechanisms.make("permute_and_flip", epsilon=1.0, sampler="fast"), ValueError,
     "sampler"),
    ("make-unknown-name", lambda: mechanisms.make("exponentail", epsilon=1.0), ValueError, "exponentail.*accepted"),
    ("make-unknown-parameter", lambda: mechanisms.make("exponential", epsilon=1.0, epsilonn=2), ValueError,
     "epsilonn"),
    ("make-missing-parameter", lambda: mechanisms.make("duff_median", epsilon=1.0), ValueError, "lower"),
    ("bounds-reversed", lambda: duff(lower=10.0, upper=0.0), ValueError, "lower"),
    ("bounds-nan", lambda: duff(lower=float("nan")), ValueError, "lower"),
    ("bounds-infinite", lambda: duff(upper=float("inf")), ValueError, "upper"),
    ("definition-unknown", lambda: duff(definition="middle"), ValueError, "definition"),
    ("domain-unknown", lambda: duff(domain="rational"), ValueError, "domain"),
    ("step-missing-for-grid", lambda: duff(domain="grid"), ValueError, "step"),
    ("step-negative", lambda: duff(domain="grid", step=-0.5), ValueError, "step"),
    ("step-on-continuous", lambda: duff(step=1.0), ValueError, "step"),
    ("bound-off-integer-grid", lambda: duff(domain="integers", lower=0.5), ValueError, "lower"),
    ("grid-too-large", lambda: duff(domain="grid", step=1e-10, lower=0.0, upper=1e8), ValueError, "2\\^53"),
    ("q-above-one", lambda: mechanisms.make("duff_quantile", epsilon=1.0, lower=0.0, upper=1.0, q=1.5), ValueError,
     "q"),
    ("q-zero", lambda: mechanisms.make("duff_quantile", epsilon=1.0, lower=0.0, upper=1.0, q=0.0), ValueError, "q"),
    ("delta-missing-for-laplace", lambda: ssm(noise="laplace"), ValueError, "delta"),
    ("delta-above-one", lambda: ssm(noise="laplace", delta=1.5), ValueError, "delta"),
    ("delta-with-cauchy", lambda: ssm(noise="cauchy", delta=0.1), ValueError, "delta"),
    ("ss-relation-unknown", lambda: ssm(sensitivity="swap"), ValueError, "sensitivity"),
    ("clip-output-string", lambda: ssm(clip_output="no"), ValueError, "clip_output"),
    ("beta-zero", lambda: median_smooth_sensitivity(RECORDS, 0.0, 0.0, 10.0), ValueError, "beta"),
    ("breakpoints-unsorted", lambda: mechanisms.make("continuous_exponential", epsilon=1.0, breakpoints=(1.0, 0.0)),
     ValueError, "breakpoints"),
    ("continuous-utility-unknown", lambda: mechanisms.make("continuous_exponential", epsilon=1.0,
                                                            breakpoints=(0.0, 1.0), utility="quadratic"),
     ValueError, "utility"),
    ("r-min-negative", lambda: mechanisms.make("revenue_price", epsilon=1.0, r_min=-1.0, r_max=2.0), ValueError,
     "r_min"),
    ("laplace-em-one-bound", lambda: mechanisms.make("laplace_via_exponential", epsilon=1.0, lower=0.0), ValueError,
     "lower"),
    # -- data
    ("data-none-scores", lambda: em().sample(None), ValueError, "data is missing"),
    ("data-none-records", lambda: duff().sample(None), ValueError, "data is missing"),
    ("data-none-ss", lambda: ssm().sample(None), ValueError, "data is missing"),
    ("data-none-global", lambda: mechanisms.make("laplace_median_global", epsilon=1.0, lower=0.0, upper=1.0)
     .sample(None), ValueError, "data is missing"),
    ("data-none-bit", lambda: mechanisms.make("randomized_response", epsilon=1.0).sample(None), ValueError,
     "data is missing"),
    ("data-none-value", lambda: mechanisms.make("laplace_via_exponential", epsilon=1.0).sample(None), ValueError,
     "data.*missing"),
    ("data-none-utility", lambda: mechanisms.make("continuous_exponential", epsilon=1.0, breakpoints=(0.0, 1.0))
     .sample(None), ValueError, "data.*missing"),
    ("data-none-bids", lambda: mechanisms.make("revenue_price", epsilon=1.0, r_min=0.0, r_max=1.0).sample(None),
     ValueError, "data.*missing"),
    ("data-empty-scores", lambda: em().sample([]), ValueError, "data"),
    ("data-2d-scores", lambda: em().sample([[1.0, 2.0]]), ValueError, "data"),
    ("data-nan-scores", lambda: em().sample([0.0, float("nan")]), ValueError, "data"),
    ("data-plus-inf-scores", lambda: em().sample([0.0, float("inf")]), ValueError, "data"),
    ("data-strings-scores", lambda: em().sample(["a", "b"]), ValueError, "data"),
    ("data-empty-records", lambda: duff().sample([]), ValueError, "data"),
    ("data-inf-records", lambda: duff().sample([1.0, float("inf")]), ValueError, "data"),
    ("data-not-a-bit", lambda: mechanisms.make("randomized_response", epsilon=1.0).sample(2), ValueError, "data"),
    ("data-wrong-count", lambda: em(candidates=("a", "b")).sample([1.0, 2.0, 3.0]), ValueError, "data"),
    ("data-utility-shape", lambda: mechanisms.make("continuous_exponential", epsilon=1.0, breakpoints=(0.0, 1.0))
     .sample([1.0, 2.0]), ValueError, "data"),
    ("data-negative-bid", lambda: mechanisms.make("revenue_price", epsilon=1.0, r_min=0.0, r_max=1.0)
     .sample([-1.0]), ValueError, "data"),
    # -- size and rng
    ("size-negative", lambda: em().sample(SCORES, size=-1), ValueError, "size"),
    ("size-float", lambda: em().sample(SCORES, size=1.5), ValueError, "size"),
    ("size-string", lambda: em().sample(SCORES, size="10"), ValueError, "size"),
    ("size-huge-finite", lambda: em().sample(SCORES, size=10**12), ValueError, "size.*TiB"),
    ("size-huge-tuple", lambda: duff().sample(RECORDS, size=(10**6, 10**6)), ValueError, "size.*TiB"),
    ("size-huge-pf", lambda: mechanisms.make("permute_and_flip", epsilon=1.0).sample(SCORES, size=2**40), ValueError,
     "size.*memory"),
    ("size-huge-law", lambda: ssm().sample(RECORDS, size=10**10), ValueError, "size.*GiB"),
    ("rng-negative", lambda: em().sample(SCORES, rng=-1), ValueError, "rng must be.*non-negative"),
    ("rng-string", lambda: duff().sample(RECORDS, rng="seed"), ValueError, "rng"),
    ("rng-float", lambda: ssm().sample(RECORDS, rng=1.5), ValueError, "rng"),
    ("rng-bool", lambda: em().sample(SCORES, rng=True), ValueError, "rng"),
    ("rng-negative-in-sequence", lambda: em().sample(SCORES, rng=[1, -1]), ValueError, "rng"),
]

VERIFIER_CASES = [
    ("audit-mechanism-int", lambda: verifiers.audit(42, 0.0, 1.0, samples=100), TypeError, "mechanism.*wrap"),
    ("audit-mechanism-class", lambda: verifiers.audit(ExponentialMechanism, SCORES, SCORES + 1, samples=100),
     TypeError, "mechanism.*class"),
    ("audit-mechanism-function", lambda: verifiers.audit(lambda d, n, r: np.zeros(n), 0.0, 1.0, samples=100),
     TypeError, "mechanism.*wrap"),
    ("audit-direction-sideways", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, direction="sideways"),
     ValueError, "direction.*d1>d2.*d2>d1"),
    ("audit-samples-one", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=1), ValueError, "samples"),
    ("audit-samples-float", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100.5), ValueError, "samples"),
    ("audit-alpha-zero", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, alpha=0), ValueError, "alpha"),
    ("audit-alpha-above-one", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, alpha=1.5), ValueError,
     "alpha"),
    ("audit-events-unknown", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, events="some"), ValueError,
     "events"),
    ("audit-selection-above-one", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, selection=1.5),
     ValueError, "selection"),
    ("audit-selection-string", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, selection="half"),
     ValueError, "selection"),
    ("audit-rng-negative", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, rng=-1), ValueError, "rng"),
    ("audit-rng-string", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, rng="x"), ValueError, "rng"),
    ("audit-not-neighbours", lambda: verifiers.audit(lap_value(), 0.0, 5.0, samples=100), ValueError, "neighbours"),
    ("audit-event-string", lambda: verifiers.audit(lap_value(), 0.0, 1.0, samples=100, event="le"), TypeError,
     "event"),
    ("wrapped-returns-strings", lambda: verifiers.audit(
        verifiers.wrap(lambda d, n, r: np.array(["x"] * n), epsilon=1.0, neighbours="value", name="strfn"),
        0.0, 1.0, samples=100, rng=1), TypeError, "strfn.*kind='real'"),
    ("wrapped-returns-wrong-count", lambda: verifiers.audit(
        verifiers.wrap(lambda d, n, r: np.zeros(n + 1), epsilon=1.0, neighbours="value", name="countfn"),
        0.0, 1.0, samples=100, rng=1), ValueError, "countfn.*must return"),
    ("wrap-fn-not-callable", lambda: verifiers.wrap(3, epsilon=1.0), TypeError, "fn must be callable"),
    ("wrap-epsilon-negative", lambda: verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=-1.0), ValueError,
     "epsilon"),
    ("wrap-delta-above-one", lambda: verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, delta=2.0),
     ValueError, "delta"),
    ("wrap-kind-unknown", lambda: verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, kind="integer"),
     ValueError, "kind"),
    ("wrap-neighbours-unknown", lambda: verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0,
                                                        neighbours="friends"), ValueError, "neighbours"),
    ("search-mechanism-none", lambda: verifiers.search(None, budget=1000), TypeError, "mechanism"),
    ("search-budget-small", lambda: verifiers.search(lap_value(), budget=3), ValueError, "budget"),
    ("search-generator-unknown", lambda: verifiers.search(lap_value(), budget=1000, generator="bogus"), ValueError,
     "generator"),
    ("exact-mechanism-string", lambda: verifiers.exact("exponential", SCORES, SCORES + 1), TypeError, "mechanism"),
    ("exact-no-law", lambda: verifiers.exact(lap_value(), 0.0, 1.0), ValueError, "exact law"),
    ("zoo-unknown-name", lambda: zoo.make("laplase"), ValueError, "laplase.*accepted"),
    ("zoo-unknown-parameter", lambda: zoo.make("laplace", scale=2.0), ValueError, "scale"),
    ("zoo-k-zero", lambda: zoo.make("rnm_laplace_value", k=0), ValueError, "k must be an integer >= 1"),
    ("zoo-epsilon-negative", lambda: zoo.make("em", epsilon=-1.0), ValueError, "epsilon"),
    ("zoo-data-none", lambda: zoo.make("em").sample(None), ValueError, "data is missing"),
    ("event-kind-unknown", lambda: Event("between"), ValueError, "kind"),
    ("cp-k-above-n", lambda: verifiers.cp_lower(5, 3, 0.05), ValueError, "k"),
    ("cp-n-zero", lambda: verifiers.cp_upper(0, 0, 0.05), ValueError, "n must"),
    ("cp-alpha-above-one", lambda: verifiers.cp_upper(1, 10, 2.0), ValueError, "alpha"),
    ("pairs-generator-unknown", lambda: verifiers.pairs_for(em(), "bogus"), ValueError, "generator"),
    ("check-neighbours-shape", lambda: verifiers.check_neighbours(SCORES, SCORES[:2], em().claim), ValueError,
     "neighbours"),
    # -- records as rows, input domains, local DP
    ("check-neighbours-rows-vs-scalars", lambda: verifiers.check_neighbours(
        np.zeros((3, 2)), RECORDS[:2], mechanisms.PrivacyClaim(1.0)), ValueError, "rows of 2 but records of d2 are scalars"),
    ("check-neighbours-3d-records", lambda: verifiers.check_neighbours(
        np.zeros((2, 2, 2)), np.zeros((1, 2, 2)), mechanisms.PrivacyClaim(1.0)), ValueError,
     r"1-D array of records, a 2-D array.*DataFrame"),
    ("wrap-input-domain-unknown-spec", lambda: verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0,
                                                               input_domain="abc"), ValueError,
     r"input_domain must be one of.*\{'bits': n\}"),
    ("wrap-input-domain-bits-zero", lambda: verifiers.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0,
                                                            input_domain={"bits": 0}), ValueError, "length"),
    ("wrap-input-domain-interval-reversed", lambda: verifiers.wrap(
        lambda d, n, r: np.zeros(n), epsilon=1.0, input_domain={"interval": [1, 0]}), ValueError, "lo < hi"),
    ("wrap-input-domain-given-twice", lambda: verifiers.wrap(
        lambda d, n, r: np.zeros(n), epsilon=1.0, input_domain=[0, 1], attributes={"input_domain": [0, 1]}),
     ValueError, "input_domain.*once"),
    ("claim-input-domain-not-a-domain", lambda: mechanisms.PrivacyClaim(1.0, neighbours="local", input_domain=[0, 1]),
     TypeError, "input_domain must be an input domain"),
    ("local-pair-outside-the-domain", lambda: verifiers.check_neighbours("a", "z", verifiers.wrap(
        lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="local", input_domain=["a", "b"]).claim), ValueError,
     "d2='z' is not in the input domain"),
    ("pairs-local-without-domain", lambda: verifiers.pairs_for(verifiers.wrap(
        lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="local")), ValueError, "needs an input domain"),
]

CASES = MECHANISM_CASES + VERIFIER_CASES


@pytest.mark.parametrize("call, exc, match", [pytest.param(c, e, m, id=i) for i, c, e, m in CASES])
def test_bad_api_input_names_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_corpus_size():
    # at least 40 in-process cases across mechanisms and the verifier API
    assert len(MECHANISM_CASES) >= 40 and len(VERIFIER_CASES) >= 20


def test_smooth_sensitivity_extreme_epsilon_has_a_law_without_overflow():
    """All data at ``lower``, epsilon = 1e6: the floored smooth bound gives a scale ~1e-308, and
    (x - loc) / scale overflows; the law must treat that as the point mass it is, silently."""
    mech = ssm(noise="laplace", delta=1e-3, epsilon=1e6, lower=-5.0, upper=10.0)
    law = mech.distribution(np.full(7, -5.0))
    x = np.array([-6.0, -5.0, -4.0, 0.0, 10.0, 11.0])
    np.testing.assert_array_equal(law.cdf(x), [0.0, 0.5, 1.0, 1.0, 1.0, 1.0])
    assert np.all(np.isneginf(law.log_pdf(x)))
    lo, hi = law.atom_log_mass()
    assert lo == pytest.approx(np.log(0.5)) and np.isneginf(hi)


def test_a_defaulted_relation_is_named_in_the_pair_error():
    # wrap without neighbours= audits under add_remove: a pair that is not add_remove neighbours now
    # says the relation was the default, not the user's choice
    from dpharness import verifiers
    from dpharness.testing import assert_dp

    m = verifiers.wrap(lambda x, n, rng: x + rng.laplace(0, 1, n), epsilon=1.0)
    assert m.neighbours_defaulted
    with pytest.raises(ValueError, match="default relation of wrap: no neighbours= was given"):
        verifiers.audit(m, 0.0, 1.0, samples=100)
    with pytest.raises(ValueError, match="default relation of wrap"):
        assert_dp(lambda x, n, rng: x + rng.laplace(0, 1, n), 0.0, 1.0, epsilon=1.0, budget=200, rng=0)
    explicit = verifiers.wrap(lambda x, n, rng: x + rng.laplace(0, 1, n), epsilon=1.0, neighbours="add_remove")
    with pytest.raises(ValueError) as info:
        verifiers.audit(explicit, 0.0, 1.0, samples=100)
    assert "default relation" not in str(info.value)


@pytest.mark.parametrize("name, says", [("topk_gumbel", "no support(data)/log_prob(data)"),
                                        ("topk_peeling_em", "releases rows")])
def test_audit_power_refuses_what_it_cannot_enumerate_with_a_value_error(name, says):
    # top-k mechanisms release index tuples: audit_power said AttributeError or a numpy matmul error
    from dpharness.verifiers import power
    from dpharness.verifiers.controls import zoo

    m = zoo.make(name)
    with pytest.raises(ValueError, match=f"audit_power .*{re.escape(says)}"):
        power.audit_power(m, m.witness(), samples=4000)
