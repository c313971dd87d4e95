"""scikit-learn's estimator checks over every estimator in skvi."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skvi import (
    GaussianGammaVB,
    SVILatentDirichletAllocation,
    SVILogisticRegression,
    SVIMatrixFactorization,
    SVIPoissonRegression,
)

ESTIMATORS = [
    GaussianGammaVB(),
    SVILatentDirichletAllocation(n_components=3, max_iter=5),
    SVIMatrixFactorization(n_components=2, max_iter=5),
    SVILogisticRegression(max_iter=5, random_state=0),
    SVIPoissonRegression(max_iter=30, random_state=0),
]

# SVIMatrixFactorization's X is (user, item) index pairs (or a sparse
# ratings matrix), not a feature matrix: these checks feed random float
# features of other widths, which it must reject with a ValueError.  The
# remaining checks (cloning, parameters, validation, tags...) still run.
_RATINGS_INPUT = (
    "X holds (user, item) integer index pairs, not features; random float "
    "feature matrices are rejected by design"
)
_MF_CHECKS = """
check_complex_data check_dict_unchanged check_dont_overwrite_parameters
check_dtype_object check_estimator_sparse_tag check_estimators_dtypes
check_estimators_empty_data_messages check_estimators_fit_returns_self
check_estimators_nan_inf check_estimators_overwrite_params
check_estimators_partial_fit_n_features check_estimators_pickle
check_f_contiguous_array_estimator check_fit2d_1feature check_fit2d_1sample
check_fit2d_predict1d check_fit_check_is_fitted check_fit_idempotent
check_fit_score_takes_y check_methods_sample_order_invariance
check_methods_subset_invariance check_n_features_in
check_n_features_in_after_fitting check_non_transformer_estimators_n_iter
check_pipeline_consistency check_positive_only_tag_during_fit
check_readonly_memmap_input check_regressor_data_not_an_array
check_regressors_int check_regressors_no_decision_function
check_regressors_train check_supervised_y_2d
check_transformer_data_not_an_array check_transformer_general
check_transformer_n_iter check_transformer_preserve_dtypes
""".split()
EXPECTED_FAILED_CHECKS = {
    "SVIMatrixFactorization": {name: _RATINGS_INPUT for name in _MF_CHECKS},
}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {}))
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
