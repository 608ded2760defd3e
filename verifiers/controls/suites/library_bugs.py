"""Privacy bugs of released DP libraries as audit targets (suite ``"library_bugs"`` of
:mod:`verifiers.suites.base`).

Each bug documented publicly for a released library (paper, security advisory, GitHub issue) is
re-implemented here from its public description, in numpy, beside its **fixed twin** (a separate
entry with ``broken=False``): the same computation with the fix the library adopted or the
reporter proposed. Every entry carries the pair(s) that expose the bug, the true privacy loss
(``math.inf`` when it is unbounded or a support bug; derived in the factory's docstring and the
entry's ``note`` when finite), the ``source`` (library, versions, where it was reported) and a
bug class (``mechanism.attributes["bug_class"]``; also ``"library"`` and ``"twin"``).

These are re-implementations of the *descriptions*, not the libraries' code: where the description
leaves a detail open (a version range, which code path used a formula), the note says so.

The bugs (broken entry / fixed twin):

* ``float_sum_rounding`` -- a bounded sum of known size whose sequential float rounding makes one
  record move the sum by 16 when the stated sensitivity is U - L = 1 (Casacuberta, Shoemate, Vadhan,
  Wagaman, CCS 2022); twin: OpenDP's rounding relaxation of the sensitivity.
* ``float_laplace`` -- textbook ``x + rng.laplace(0, 1/eps)``: its low-order bits tell 0 from 1
  (Mironov, CCS 2012; Haney et al., TPDP 2022; Jin et al., S&P 2022); twin: integer data and
  two-sided geometric noise. Audited with float events (``float_events=True``).
* ``rr_bool`` -- OpenDP's boolean randomized response drew its "lie" from Bernoulli(p), so it
  could repeat the truth (opendp#480); twin: the lie is the negation.
* ``gaussian_replace_one`` -- a Gaussian-noised clipped sum accounted with L2 sensitivity C under
  replace-one, where it is 2C (google/differential-privacy#378, dp_accounting); twin: noise for 2C.
* ``covariance_no_clip`` -- SmartNoise Synth's DP covariance clipped a copy of the data and then
  computed on the unclipped data (smartnoise-sdk#622); twin: computes on the clipped copy.
* ``mean_noise_from_n`` -- a mean under add/remove whose Laplace scale (U - L)/(n epsilon) uses
  the dataset's own n (SmartNoise Core sensitivity whitepaper, smartnoise-core#355/#356); twin:
  noisy sum and noisy count.
* ``linreg_diag_sensitivity`` -- diffprivlib's LinearRegression took max(|L|, |L|)^2 as the
  sensitivity of sum x_i^2 (diffprivlib#104/#105, present in 0.6.6); twin: max(|L|, |U|)^2.
* ``privbayes_count_noise`` -- DataSynthesizer's PrivBayes added noise of scale 2/(n epsilon),
  meant for probabilities, to counts (DataSynthesizer#34, 0.1.4); twin: scale 2/epsilon.
* ``geometric_unclamped`` -- SmartNoise Core's geometric mechanism censored its noise at the
  caller's (max - min) without clamping, so min == max meant no noise (smartnoise-core#318/#319);
  twin: input and output clamped to [min, max].

The entries live in one module per bug family, imported below in the suite's table order (importing
a module registers its entries, so this order is the order of :func:`entries`):
``library_bugs_float`` (1, 2), ``library_bugs_randomized_response`` (3), ``library_bugs_sensitivity``
(4-8) and ``library_bugs_truncation`` (9 and the thresholded count); ``library_bugs_common`` holds
:data:`SOURCES` and the entry builder.
"""

from __future__ import annotations

from dpharness.verifiers.controls.suites.library_bugs_common import SOURCES
from dpharness.verifiers.controls.suites.library_bugs_float import (
    float_laplace, float_laplace_fixed, float_sum_rounding, float_sum_rounding_fixed, float_sum_worst_case,
)
from dpharness.verifiers.controls.suites.library_bugs_randomized_response import (
    rr_bool, rr_bool_fixed, rr_bool_true_epsilon,
)
from dpharness.verifiers.controls.suites.library_bugs_sensitivity import (
    covariance_no_clip, covariance_no_clip_fixed, gaussian_exact_delta, gaussian_exact_epsilon, gaussian_replace_one,
    gaussian_replace_one_fixed, linreg_diag_sensitivity, linreg_diag_sensitivity_fixed, mean_noise_from_n,
    mean_noise_from_n_fixed, privbayes_count_noise, privbayes_count_noise_fixed, rdp_gaussian_epsilon,
)
from dpharness.verifiers.controls.suites.library_bugs_truncation import (
    count_threshold_truncation, count_threshold_truncation_fixed, geometric_unclamped, geometric_unclamped_fixed,
    threshold_delta,
)

__all__ = [
    "SOURCES", "float_sum_worst_case", "rdp_gaussian_epsilon", "gaussian_exact_epsilon", "gaussian_exact_delta",
    "rr_bool_true_epsilon",
    "float_sum_rounding", "float_sum_rounding_fixed", "float_laplace", "float_laplace_fixed",
    "rr_bool", "rr_bool_fixed", "gaussian_replace_one", "gaussian_replace_one_fixed",
    "covariance_no_clip", "covariance_no_clip_fixed", "mean_noise_from_n", "mean_noise_from_n_fixed",
    "linreg_diag_sensitivity", "linreg_diag_sensitivity_fixed", "privbayes_count_noise",
    "privbayes_count_noise_fixed", "geometric_unclamped", "geometric_unclamped_fixed", "count_threshold_truncation",
    "count_threshold_truncation_fixed", "threshold_delta",
]
