"""verifiers.statistical.alpha.split_alpha: the level of each test of a family (Bonferroni)."""

import pytest

from dpharness.mechanisms import ParamError
from dpharness.verifiers.statistical.alpha import split_alpha


def test_split_alpha_is_the_family_level_over_the_tests():
    assert split_alpha(0.05, 10) == 0.05 / 10
    assert split_alpha(0.05, 2, tests=[2, 3]) == 0.05 / 5
    assert split_alpha(0.05, 0) == 0.05  # an empty family keeps the level
    # the same double as dividing by hand (what audit configs did before)
    assert split_alpha(0.0493, 29) == 0.0017 and split_alpha(0.02, 20) == 0.001


@pytest.mark.parametrize("args, field", [
    ((0.0, 3), "family_alpha"), ((1.5, 3), "family_alpha"), ((0.05, -1), "n_audits"), ((0.05, 2.5), "n_audits"),
    ((0.05, 2, [1]), "tests"), ((0.05, 1, [-1]), "tests"),
])
def test_split_alpha_refuses_bad_arguments_by_name(args, field):
    with pytest.raises(ParamError) as info:
        split_alpha(*args)
    assert info.value.field == field and str(info.value).startswith(field)
