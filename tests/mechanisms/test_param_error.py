"""ParamError: a ValueError that names the parameter it concerns (the message is unchanged)."""

import pickle

import pytest

from dpharness import mechanisms
from dpharness.mechanisms.base import (ParamError, as_rng, check_bounds, check_choice, check_data, check_delta,
                                       check_epsilon, check_positive, check_scores, check_size)


@pytest.mark.parametrize("call, field, message", [
    (lambda: check_epsilon(0), "epsilon", "epsilon must be a finite number > 0, got 0"),
    (lambda: check_epsilon(-1, "eps2"), "eps2", "eps2 must be a finite number > 0, got -1"),
    (lambda: check_delta(1.0), "delta", "delta must be in [0, 1), got 1.0"),
    (lambda: check_positive(0, "scale"), "scale", "scale must be a finite number > 0, got 0"),
    (lambda: check_bounds(5.0, 1.0), "lower", "lower must be < upper, got lower=5.0, upper=1.0"),
    (lambda: check_bounds(0.0, float("inf")), "upper", "upper must be a finite number, got inf"),
    (lambda: check_choice("x", "noise", ("laplace",)), "noise", "noise must be one of 'laplace'; got 'x'"),
    (lambda: check_data(None), "data", "data is missing (got None); pass a 1-D array of real numbers"),
    (lambda: check_scores([float("-inf")]), "scores", "scores: every score is -inf, no candidate can be selected"),
    (lambda: check_size(-1), "size", "size must be None, an int >= 0 or a tuple of them, got -1"),
    (lambda: as_rng(-1), "rng", None),
])
def test_checks_name_the_parameter(call, field, message):
    with pytest.raises(ValueError) as info:  # still a ValueError: callers that catch ValueError are unchanged
        call()
    assert isinstance(info.value, ParamError) and info.value.field == field
    if message is not None:
        assert str(info.value) == message


def test_mechanism_constructors_name_the_parameter():
    with pytest.raises(ParamError) as info:
        mechanisms.make("duff_median", epsilon=1.0, lower=5.0, upper=1.0)
    assert info.value.field == "lower"
    with pytest.raises(ParamError) as info:
        mechanisms.make("exponential", epsilon=float("nan"))
    assert info.value.field == "epsilon"


def test_detail_and_pickling():
    exc = ParamError("epsilon", "epsilon must be a finite number > 0, got 0")
    assert exc.detail == "must be a finite number > 0, got 0"
    assert ParamError("scores", "scores: every score is -inf").detail == "scores: every score is -inf"
    back = pickle.loads(pickle.dumps(exc))  # task errors travel from worker processes
    assert type(back) is ParamError and back.field == "epsilon" and str(back) == str(exc)
