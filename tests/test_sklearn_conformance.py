"""scikit-learn's estimator checks over every estimator in skvi."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skvi import GaussianGammaVB, SVILatentDirichletAllocation

ESTIMATORS = [GaussianGammaVB(), SVILatentDirichletAllocation(n_components=3, max_iter=5)]

# Checks skipped for a stated reason (none yet).
EXPECTED_FAILED_CHECKS = {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {}))
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
