"""scikit-learn's estimator checks over every estimator in skvi."""

import numpy as np
import pytest
import sklearn
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.fixes import parse_version

from skvi import (
    GaussianGammaVB,
    SVIBayesianGaussianMixture,
    SVICorrelatedTopicModel,
    SVIHierarchicalDirichletProcess,
    SVILatentDirichletAllocation,
    SVILinearRegression,
    SVILogisticRegression,
    SVIMatrixFactorization,
    SVIOverdispersedPoissonRegression,
    SVIPoissonRegression,
    SVISparseGPClassifier,
    SVISparseGPRegressor,
)
from skvi.networks import SVIBayesianNetwork


def _network_mixture(n_rows, n_features):
    """A two-component Gaussian mixture declared node by node, as wide as X."""
    from skvi.networks import Categorical, Dirichlet, Gaussian, Mixture, Wishart

    alpha = Dirichlet(np.ones(2), name="alpha")
    z = Categorical(alpha, plates=(n_rows,), name="z")
    mu = Gaussian(np.zeros(n_features), 1e-2 * np.eye(n_features), plates=(2,), name="mu")
    Lambda = Wishart(n_features, np.eye(n_features), plates=(2,), name="Lambda")
    return Mixture(z, Gaussian, mu, Lambda, name="y")


ESTIMATORS = [
    GaussianGammaVB(),
    SVIBayesianGaussianMixture(n_components=2, max_iter=20, random_state=0),
    # Each document's E-step iterated to its fixed point, so that weighted
    # and repeated documents (whose random starts differ) give the same fit
    # in the sample-weight equivalence checks.
    SVILatentDirichletAllocation(
        n_components=3, max_iter=5, mean_change_tol=1e-10, max_doc_update_iter=10000
    ),
    SVIMatrixFactorization(n_components=2, max_iter=5),
    # The local step starts from the documents' own words (no random draws)
    # and is iterated to its fixed point: weighted and repeated documents
    # give the same fit.
    SVIHierarchicalDirichletProcess(
        n_components=4,
        n_document_components=2,
        max_iter=5,
        mean_change_tol=1e-10,
        max_doc_update_iter=10000,
        random_state=0,
    ),
    SVICorrelatedTopicModel(n_components=3, max_iter=5, init_passes=2, random_state=0),
    # tol=0: a fixed number of passes, so that weighted and repeated rows (whose
    # sums differ in the last bits) stop at the same pass on data it fits exactly.
    # Only 10: the check's 30 features fit its 15 rows exactly, so the noise
    # precision climbs to ~1e7 and later passes amplify those last bits to
    # ~1e-7, the check's rtol (1.2e-7 at the minimum versions, 7e-8 at current ones).
    SVILinearRegression(tol=0.0, max_iter=10),
    # Quadrature expectations: deterministic, so weighted and repeated rows
    # give the same fit (scikit-learn checks sample_weight equivalence).
    SVILogisticRegression(max_iter=5, expectation="quadrature", random_state=0),
    SVIPoissonRegression(max_iter=30, expectation="quadrature", random_state=0),
    SVIOverdispersedPoissonRegression(max_iter=10, random_state=0),
    SVISparseGPRegressor(n_inducing=10, random_state=0),
    SVISparseGPClassifier(n_inducing=10, max_iter=20, optimizer=None, random_state=0),
    SVIBayesianNetwork(model=_network_mixture, max_iter=20, tol=0, random_state=0),
]

# SVIMatrixFactorization's X is two columns of (user, item) ids, of any
# kind (or, with y=None, a sparse users x items matrix of ratings).  These
# checks feed feature matrices of 1, 3, 4, 5 or 10 float columns, which it
# rejects with a ValueError naming the shape: reading a third column as part
# of an id would silently misread the common (user, item, rating) array.
_TWO_ID_COLUMNS = "X is two columns of (user, item) ids; wider feature matrices are rejected"
_MF_CHECKS = {
    name: _TWO_ID_COLUMNS
    for name in """
check_dict_unchanged check_dont_overwrite_parameters check_dtype_object
check_estimators_dtypes check_estimators_nan_inf check_estimators_pickle
check_f_contiguous_array_estimator check_fit2d_1sample check_fit2d_predict1d
check_fit_score_takes_y check_methods_sample_order_invariance
check_methods_subset_invariance check_n_features_in_after_fitting
check_non_transformer_estimators_n_iter check_pipeline_consistency
check_positive_only_tag_during_fit check_regressor_data_not_an_array
check_regressors_int check_regressors_no_decision_function
check_regressors_train check_supervised_y_2d
check_transformer_data_not_an_array check_transformer_general
check_transformer_n_iter check_transformer_preserve_dtypes
check_sample_weights_list check_sample_weight_equivalence_on_dense_data
""".split()
}
_MF_CHECKS["check_estimator_sparse_tag"] = (
    "a sparse X is the users x items ratings matrix, taken with y=None only"
)
_MF_CHECKS["check_sample_weight_equivalence_on_sparse_data"] = (
    "a sparse X is the users x items ratings matrix, taken with y=None only"
)
_MF_CHECKS["check_fit_idempotent"] = (
    "transform folds in new users from a sparse users x items matrix, not id pairs"
)
# These checks set n_components=1; a correlated topic model needs two topics
# (one is the reference of the others' logits), and says so.  The methods'
# invariance to the order and subsets of the documents is tested in
# tests/test_ctm.py.
_ONE_COMPONENT = "the check sets n_components=1; the model needs at least two topics"
_CTM_CHECKS = {
    name: _ONE_COMPONENT
    for name in """
check_dont_overwrite_parameters check_methods_sample_order_invariance
check_methods_subset_invariance check_fit2d_1sample check_fit2d_1feature
check_fit2d_predict1d
""".split()
}
# The check fits the weighted rows and the repeated rows, shuffled: the
# Monte Carlo steps draw per document (a document's copies draw other numbers
# than the weighted document) and the LDA start's E-step stops at its
# default tolerance.  tests/test_ctm.py checks that weighted documents are
# repeated ones with deterministic expectations and the same start.
for _check in ("dense", "sparse"):
    _CTM_CHECKS[f"check_sample_weight_equivalence_on_{_check}_data"] = (
        "Monte Carlo steps draw per document: the copies of a document draw other numbers"
    )
EXPECTED_FAILED_CHECKS = {
    # The start draws one random assignment per row, so repeated rows start
    # elsewhere than one weighted row; tests/test_networks.py checks that
    # weighted and repeated rows take the same steps from the same globals.
    "SVIBayesianNetwork": {
        "check_sample_weight_equivalence_on_dense_data": "the random start draws per row: repeated rows start differently",
    },
    "SVIMatrixFactorization": _MF_CHECKS,
    "SVICorrelatedTopicModel": _CTM_CHECKS,
    # scikit-learn < 1.7 binarises a binary-only classifier's y by its first
    # label, which the check shuffles for the weighted fit only: the weighted
    # and the repeated rows then get different labels (fixed in 1.7).
    "SVISparseGPClassifier": (
        {
            "check_sample_weight_equivalence_on_dense_data": "scikit-learn < 1.7 relabels y differently for the weighted and the repeated fit"
        }
        if parse_version(sklearn.__version__) < parse_version("1.7")
        else {}
    ),
    "SVIBayesianGaussianMixture": {
        "check_sample_weight_equivalence_on_dense_data": "its 15 x 30 X gives a singular default covariance_prior (the repeated rows' fit fails too) and shuffled weighted rows draw other k-means++ seeds",
    },
}


_CHECKS = parametrize_with_checks(
    ESTIMATORS,
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {}),
)


# scikit-learn 1.6 hands pytest the checks as a generator, which pytest
# deprecates; the same checks as a list are what later releases give.
@pytest.mark.parametrize(_CHECKS.args[0], list(_CHECKS.args[1]), **_CHECKS.kwargs)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
