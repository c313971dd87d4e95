"""Property-based tests: generated valid and invalid input for every estimator.

Each property says: a clear ValueError (or TypeError), or a finite answer;
never a crash, a hang, NaN or a silently misread input.  The examples are
derandomised, so CI runs the same ones every time.
"""

import numbers
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from skvi import (  # noqa: E402
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
from skvi.validation import MAX_FEATURE_MAGNITUDE  # noqa: E402

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

scales = st.sampled_from([1e-6, 1e-2, 1.0, 1e2, 1e6])
dtypes = st.sampled_from([np.float64, np.float32])


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _finite(*values):
    for v in values:
        assert np.all(np.isfinite(np.asarray(v, dtype=np.float64))), v


def _dense(draw, min_rows=2, max_rows=40, max_cols=5):
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, max_cols))
    scale = draw(scales)
    dtype = draw(dtypes)
    seed = draw(st.integers(0, 2**16))
    rng = np.random.RandomState(seed)
    X = (rng.standard_normal((n, d)) * scale + draw(st.sampled_from([0.0, 3.0, -1e3]))).astype(
        dtype
    )
    return X, rng


# ------------------------------------------------------------- valid input
@FUZZ
@given(st.data(), st.sampled_from(["batch", "online"]))
def test_gaussian_gamma_on_any_scale_and_dtype_is_finite(data, method):
    X, _ = _dense(data.draw)
    est = _quiet(GaussianGammaVB(learning_method=method, batch_size=7, max_iter=3).fit, X)
    _finite(est.mean_, est.precision_shape_, est.precision_rate_, est.lower_bound_)
    _finite(est.transform(X), est.score_samples(X))
    assert est.transform(X).dtype == X.dtype
    # Run towards the fixed point: q(mu) is then the conjugate update given
    # E[gamma] (prior mean 0, precision 1e-3), at any scale.  The stopping
    # rule is on the ELBO, and with two rows far from the prior mean the
    # coordinate ascent still creeps when it stops (relative 3e-6): 1e-4.
    vb = _quiet(GaussianGammaVB(max_iter=500, tol=1e-13).fit, X)
    e_gamma = vb.precision_shape_ / vb.precision_rate_
    n, total = X.shape[0], X.astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(vb.mean_precision_, 1e-3 + n * e_gamma, rtol=1e-4)
    np.testing.assert_allclose(
        vb.mean_, e_gamma * total / (1e-3 + n * e_gamma), rtol=1e-4, atol=1e-9 * np.abs(X).max()
    )


@FUZZ
@given(st.data(), st.sampled_from([SVILogisticRegression, SVIPoissonRegression]), st.booleans())
def test_glms_on_any_scale_are_finite(data, cls, sparse):
    X, rng = _dense(data.draw, min_rows=6, max_rows=60)
    if cls is SVILogisticRegression:
        y = np.arange(X.shape[0]) % 2
        rng.shuffle(y)
    else:
        y = rng.poisson(2.0, size=X.shape[0])
    X = sp.csr_matrix(X) if sparse else X
    est = _quiet(cls(max_iter=3, batch_size=16, random_state=0).fit, X, y)
    _finite(est.coef_, est.intercept_, est.predict(X), est.posterior_covariance_)
    if cls is SVILogisticRegression:
        proba = est.predict_proba(X)
        _finite(proba)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@FUZZ
@given(
    st.integers(1, 30),
    st.integers(1, 25),
    st.integers(1, 4),
    st.integers(0, 2**16),
    st.sampled_from([1e-4, 0.1, 1.0]),
    st.sampled_from(["batch", "online"]),
)
def test_lda_on_any_counts_is_finite(n_docs, n_words, k, seed, prior, method):
    rng = np.random.RandomState(seed)
    X = sp.csr_matrix(rng.poisson(rng.uniform(0.01, 3.0), size=(n_docs, n_words)).astype(float))
    lda = SVILatentDirichletAllocation(
        n_components=k,
        doc_topic_prior=prior,
        max_iter=2,
        learning_method=method,
        batch_size=4,
        random_state=0,
    )
    if X.sum() == 0:
        # No words: it fits as scikit-learn's, every step aiming at the
        # prior; its perplexity is undefined.
        _quiet(lda.fit, X)
        _finite(lda.components_, lda.score(X))
        np.testing.assert_allclose(lda.transform(X), 1.0 / k, rtol=1e-12)
        assert lda.bound_ is None
        with pytest.raises(ValueError, match="no words"):
            lda.perplexity(X)
        return
    _quiet(lda.fit, X)
    theta = lda.transform(X)
    _finite(lda.components_, theta, lda.score(X))
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-10)


ids = st.one_of(
    st.integers(-(2**62), 2**62),
    st.text(min_size=1, max_size=5),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)


@FUZZ
@given(
    st.lists(st.tuples(ids, ids, st.floats(-5, 5)), min_size=2, max_size=40),
    st.sampled_from(["batch", "online"]),
)
def test_matrix_factorization_on_ids_of_any_kind_is_finite(rows, method):
    users = [r[0] for r in rows]
    items = [r[1] for r in rows]
    y = np.array([r[2] for r in rows])
    X = np.empty((len(rows), 2), dtype=object)
    X[:, 0], X[:, 1] = users, items
    mixed = {type(u) for u in users} | {type(i) for i in items}
    mf = SVIMatrixFactorization(
        n_components=1, max_iter=3, learning_method=method, batch_size=5, random_state=0
    )
    _quiet(mf.fit, X, y)
    pred, std = mf.predict(X, return_std=True)
    _finite(pred, std, mf.user_mean_, mf.item_mean_)
    assert mf.n_users_ <= len(set(map(str, users))) + (len(mixed) > 1) * len(users)


# ------------------------------------------------------------ invalid input
@FUZZ
@given(st.data(), st.sampled_from(["nan", "inf", "-inf"]))
def test_non_finite_values_are_a_clear_error_everywhere(data, bad):
    X, rng = _dense(data.draw, min_rows=4)
    i = data.draw(st.integers(0, X.shape[0] - 1))
    j = data.draw(st.integers(0, X.shape[1] - 1))
    Xb = X.astype(np.float64)
    Xb[i, j] = float(bad)
    y = np.arange(X.shape[0]) % 2
    for est, args in [
        (GaussianGammaVB(max_iter=2), (Xb,)),
        (SVILogisticRegression(max_iter=2), (Xb, y)),
        (SVIPoissonRegression(max_iter=2), (Xb, y)),
        (SVILatentDirichletAllocation(n_components=2, max_iter=2), (np.abs(Xb),)),
    ]:
        with pytest.raises(ValueError):
            _quiet(est.fit, *args)
    pairs = np.column_stack([np.arange(X.shape[0]) % 3, np.arange(X.shape[0]) % 2])
    ratings = Xb[:, j].copy()
    ratings[i] = float(bad)
    with pytest.raises(ValueError):
        SVIMatrixFactorization(n_components=1).fit(pairs, ratings)


@FUZZ
@given(
    st.integers(0, 2**16),
    st.sampled_from(["indptr", "indices", "data"]),
    st.integers(-(2**31), 2**31 - 1),
)
def test_corrupted_sparse_structure_is_a_clear_error_or_read_as_given(seed, field, value):
    # Overwrite one entry of one index array with an arbitrary value: either
    # the matrix is still a valid CSR (then it is used as it now is) or every
    # estimator says it is not valid; nothing crashes or reads past arrays.
    rng = np.random.RandomState(seed)
    X = sp.csr_matrix(rng.poisson(1.0, size=(12, 6)).astype(float))
    if X.nnz == 0:
        return
    bad = X.copy()
    arr = getattr(bad, field).copy()
    pos = rng.randint(arr.shape[0])
    arr[pos] = value if field != "data" else abs(value)
    setattr(bad, field, arr)
    try:
        bad.check_format(full_check=True)
        valid = True
    except ValueError:
        valid = False
    y = np.arange(12) % 2
    calls = [
        lambda: SVILatentDirichletAllocation(n_components=2, max_iter=1).fit(bad),
        lambda: SVILogisticRegression(max_iter=1).fit(bad, y),
        lambda: SVIPoissonRegression(max_iter=1).fit(bad, y),
    ]
    for call in calls:
        if valid:
            try:
                _quiet(call)
            except ValueError:
                pass  # e.g. a count too large to be a float32 word count
        else:
            with pytest.raises(ValueError, match="not a valid sparse matrix"):
                call()


@FUZZ
@given(st.data())
def test_wrong_feature_count_after_fit_is_a_clear_error(data):
    X, _ = _dense(data.draw, min_rows=4, max_cols=4)
    extra = np.hstack([X, X[:, :1]])
    y = np.arange(X.shape[0]) % 2
    for est, fit_args in [
        (GaussianGammaVB(max_iter=2), (X,)),
        (SVILogisticRegression(max_iter=2), (X, y)),
    ]:
        _quiet(est.fit, *fit_args)
        with pytest.raises(ValueError, match="features"):
            est.predict(extra) if hasattr(est, "predict") else est.transform(extra)


# ------------------------------------------------ every estimator, bad input
# Small, quick fits of all eleven estimators (the logistic regression binary
# and multinomial), for the properties below: huge features, degenerate
# rows and absurd hyperparameters each end in a clear ValueError or a
# finite fit whose predictions are finite.
ESTIMATORS = {
    "GaussianGammaVB": lambda: GaussianGammaVB(max_iter=3),
    "SVILinearRegression": lambda: SVILinearRegression(max_iter=3),
    "SVILogisticRegression": lambda: SVILogisticRegression(max_iter=3, random_state=0),
    "SVILogisticRegression (3 classes)": lambda: SVILogisticRegression(max_iter=3, random_state=0),
    "SVIPoissonRegression": lambda: SVIPoissonRegression(max_iter=3, random_state=0),
    "SVIOverdispersedPoissonRegression": lambda: SVIOverdispersedPoissonRegression(
        max_iter=3, random_state=0
    ),
    "SVILatentDirichletAllocation": lambda: SVILatentDirichletAllocation(
        n_components=2, max_iter=2, random_state=0
    ),
    "SVICorrelatedTopicModel": lambda: SVICorrelatedTopicModel(
        n_components=3, init="random", max_iter=2, transform_max_iter=10, random_state=0
    ),
    "SVIBayesianGaussianMixture": lambda: SVIBayesianGaussianMixture(
        n_components=2, max_iter=5, random_state=0
    ),
    "SVIMatrixFactorization": lambda: SVIMatrixFactorization(
        n_components=2, max_iter=2, random_state=0
    ),
    "SVISparseGPRegressor": lambda: SVISparseGPRegressor(n_inducing=4, max_iter=3, random_state=0),
    "SVISparseGPClassifier": lambda: SVISparseGPClassifier(
        n_inducing=4, max_iter=3, random_state=0
    ),
    "SVIHierarchicalDirichletProcess": lambda: SVIHierarchicalDirichletProcess(
        n_components=4, n_document_components=2, max_iter=2, random_state=0
    ),
}
# Models of counts (topics) and of ratings (matrix factorization): their
# "features" are the counts, their rows documents or ratings.
COUNTS = (
    "SVILatentDirichletAllocation",
    "SVICorrelatedTopicModel",
    "SVIHierarchicalDirichletProcess",
)
MF = "SVIMatrixFactorization"
# The constructor's numbers that are not hyperparameters of the model.
CONTROL = {
    "tol",
    "max_iter",
    "batch_size",
    "n_jobs",
    "verbose",
    "random_state",
    "n_components",
    "n_mc_samples",
    "total_samples",
    "n_inducing",
    "verbose_interval",
    "n_init",
    "init_passes",
    "transform_max_iter",
    "max_doc_update_iter",
    "evaluate_every",
    "children_per_node",
    "n_restarts_optimizer",
    "learning_rate",
    "mean_change_tol",
    "perp_tol",
}


def _targets(name, n, rng):
    if name == "SVILogisticRegression":
        return np.arange(n) % 2
    if name == "SVILogisticRegression (3 classes)":
        return np.arange(n) % 3
    if name == "SVISparseGPClassifier":
        return np.arange(n) % 2
    if name in ("SVIPoissonRegression", "SVIOverdispersedPoissonRegression"):
        return rng.poisson(2.0, size=n)
    if name in ("SVILinearRegression", "SVISparseGPRegressor"):
        return rng.normal(size=n)
    return None  # unsupervised


def _args(name, X, rng):
    """``fit``'s arguments for the features X (or, for MF, the ratings X[:, 0])."""
    if name == MF:
        n = X.shape[0]
        pairs = np.column_stack([np.arange(n) % 4, (np.arange(n) * 7) % 5])
        return (pairs, np.asarray(X, dtype=np.float64)[:, 0])
    y = _targets(name, X.shape[0], rng)
    return (X,) if y is None else (X, y)


def _predictions(est, args):
    """Everything the fitted estimator says about the rows it was fitted on."""
    X = args[0]
    if isinstance(est, SVIMatrixFactorization):
        out = list(est.predict(X, return_std=True))
    else:
        out = [
            getattr(est, m)(X)
            for m in ("predict", "predict_proba", "transform", "score_samples")
            if hasattr(est, m)
        ]
    if est.lower_bound_ is not None:
        out.append(est.lower_bound_)
    return out


def _fit_or_clear_error(est, args, error=None):
    """Fit; a ValueError is accepted (matching ``error`` when given), else
    every prediction must be finite.  Returns whether it fitted."""
    try:
        _quiet(est.fit, *args)
    except ValueError as exc:
        if error is not None:
            assert re.search(error, str(exc)), str(exc)
        return False
    assert error is None, f"expected a ValueError matching {error!r}"
    _finite(*_predictions(est, args))
    return True


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@settings(FUZZ, max_examples=8)
@given(st.sampled_from([10, 50, 99, 101, 150, 200, 300]), st.booleans(), st.integers(0, 2**16))
def test_huge_features_are_a_clear_error_or_finite_everywhere(name, exponent, sparse, seed):
    # Beyond 1e100 the models with Gaussian sums of squared features refuse
    # X; CTM refuses documents of more than 1e100 words, MF ratings whose
    # squares overflow; LDA fits any counts.  Below, every fit is finite.
    rng = np.random.RandomState(seed)
    if name in COUNTS:
        X = rng.poisson(1.0, size=(12, 6)).astype(np.float64)
        X[0, 0] += 1.0  # words in every corpus
    else:
        X = rng.normal(size=(12, 3))
    X = X * 10.0**exponent
    if sparse and name in COUNTS + (
        "SVILinearRegression",
        "SVILogisticRegression",
        "SVIPoissonRegression",
        "SVIOverdispersedPoissonRegression",
    ):
        X = sp.csr_matrix(X)
    largest = abs(X).max()
    if name == "SVILatentDirichletAllocation":
        error = None
    elif name == "SVICorrelatedTopicModel":
        error = "words, above" if np.asarray(X.sum(axis=1)).max() > 1e100 else None
    elif name == MF:
        error = "too large" if exponent >= 154 else None
    else:
        error = "largest feature magnitude" if largest > MAX_FEATURE_MAGNITUDE else None
    est = ESTIMATORS[name]()
    fitted = _fit_or_clear_error(est, _args(name, X, rng), error)
    assert fitted == (error is None)


def _degenerate(kind, name, rng):
    if name in COUNTS:
        return {
            "identical rows": np.tile([2.0, 1.0, 0.0, 1.0], (6, 1)),
            "one row": np.array([[3.0, 0.0, 1.0, 0.0]]),
            "two rows": rng.poisson(1.0, size=(2, 4)) + np.eye(2, 4),
            "fewer rows than features": rng.poisson(1.0, size=(3, 12)) + np.eye(3, 12),
            "constant column": np.c_[rng.poisson(1.0, size=(8, 3)), np.ones(8)],
            "all zero": np.zeros((6, 4)),
            "duplicate rows": np.repeat(rng.poisson(1.0, size=(3, 4)) + np.eye(3, 4), 3, axis=0),
        }[kind].astype(np.float64)
    return {
        "identical rows": np.tile([1.0, -2.0, 3.0], (10, 1)),
        "one row": np.array([[1.0, 2.0, 3.0]]),
        "two rows": rng.normal(size=(2, 3)),
        "fewer rows than features": rng.normal(size=(3, 8)),
        "constant column": np.c_[rng.normal(size=(10, 2)), np.ones(10)],
        "all zero": np.zeros((10, 3)),
        "duplicate rows": np.repeat(rng.normal(size=(3, 3)), 4, axis=0),
    }[kind]


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@settings(FUZZ, max_examples=8)
@given(
    st.sampled_from(
        [
            "identical rows",
            "one row",
            "two rows",
            "fewer rows than features",
            "constant column",
            "all zero",
            "duplicate rows",
        ]
    ),
    st.sampled_from(["batch", "online"]),
    st.integers(0, 2**16),
)
def test_degenerate_rows_are_a_clear_error_or_finite_everywhere(name, kind, method, seed):
    rng = np.random.RandomState(seed)
    X = _degenerate(kind, name, rng)
    est = ESTIMATORS[name]().set_params(learning_method=method)
    _fit_or_clear_error(est, _args(name, X, rng))


def _hyperparameters(name):
    """The estimator's real-valued hyperparameters and their interval constraints."""
    from sklearn.utils._param_validation import Interval

    out = {}
    for param, constraints in type(ESTIMATORS[name]())._parameter_constraints.items():
        intervals = [
            c
            for c in constraints
            if isinstance(c, Interval) and c.type in (numbers.Real, "real_not_int")
        ]
        if param not in CONTROL and intervals:
            out[param] = intervals
    return out


HYPERPARAMETERS = [
    (name, param) for name in sorted(ESTIMATORS) for param in sorted(_hyperparameters(name))
]


@pytest.mark.parametrize(
    "name, param", HYPERPARAMETERS, ids=[f"{n}.{p}" for n, p in HYPERPARAMETERS]
)
@settings(FUZZ, max_examples=5)
@given(
    st.sampled_from([-1e300, -1e100, 1e-300, 1e-100, 1e-12, 1e12, 1e100, 1e300]),
    st.sampled_from(["batch", "online"]),
)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # absurd values: what leaves fit is checked
def test_absurd_hyperparameters_are_a_clear_error_or_finite_everywhere(name, param, value, method):
    # A value outside a hyperparameter's constraints is scikit-learn's
    # InvalidParameterError (a ValueError naming it); inside, the fit is
    # finite or says clearly why it cannot be.
    from sklearn.utils._param_validation import InvalidParameterError

    params = _hyperparameters(name)
    rng = np.random.RandomState(0)
    X = (
        rng.poisson(1.0, size=(12, 6)).astype(np.float64)
        if name in COUNTS
        else rng.normal(size=(12, 3))
    )
    est = ESTIMATORS[name]().set_params(learning_method=method, **{param: value})
    if param == "covariance_prior":  # a float is the spherical type's
        est.set_params(covariance_type="spherical")
    if not any(value in interval for interval in params[param]):
        with pytest.raises(InvalidParameterError, match=param):
            _quiet(est.fit, *_args(name, X, rng))
        return
    _fit_or_clear_error(est, _args(name, X, rng))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("method", ["elbo", "compute_statistics", "apply_statistics"])
def test_the_engine_s_methods_before_fit_raise_not_fitted(name, method):
    # scikit-learn's NotFittedError, naming the class, as predict's is.
    from sklearn.exceptions import NotFittedError

    from skvi.engine import Statistics

    rng = np.random.RandomState(0)
    X = (
        rng.poisson(1.0, size=(12, 6)).astype(np.float64)
        if name in COUNTS
        else rng.normal(size=(12, 3))
    )
    est = ESTIMATORS[name]()
    args = (Statistics(12, {}),) if method == "apply_statistics" else _args(name, X, rng)
    with pytest.raises(NotFittedError, match=f"{type(est).__name__}.*{method}.*fit"):
        getattr(est, method)(*args)


STRUCTURAL_CHANGES = [
    ("SVIBayesianGaussianMixture", "covariance_type", "diag"),
    ("SVIBayesianGaussianMixture", "n_components", 3),
    ("SVIMatrixFactorization", "likelihood", "bernoulli"),
    ("SVIMatrixFactorization", "n_components", 3),
    ("SVILogisticRegression", "fit_intercept", False),
    ("SVILinearRegression", "ard", True),
    ("SVILinearRegression", "fit_intercept", False),
    ("SVILatentDirichletAllocation", "n_components", 3),
    ("SVICorrelatedTopicModel", "n_components", 2),
    ("GaussianGammaVB", "mean_prior", 3.0),
    ("SVIPoissonRegression", "prior_variance", 7.0),
]


@pytest.mark.parametrize(
    "name, param, value", STRUCTURAL_CHANGES, ids=[f"{n}.{p}" for n, p, _ in STRUCTURAL_CHANGES]
)
def test_partial_fit_after_set_params_of_the_model_names_it(name, param, value):
    # A parameter that fixed the model the stream's posterior was started
    # with cannot change under it: a ValueError names it and says to call
    # fit; set back, the stream goes on as if nothing happened.
    rng = np.random.RandomState(0)
    X = (
        rng.poisson(1.0, size=(40, 6)).astype(np.float64)
        if name in COUNTS
        else rng.normal(size=(40, 3))
    )
    args = _args(name, X, rng)
    est = _quiet(ESTIMATORS[name]().partial_fit, *args)
    before = est.get_params()[param]
    assert not np.array_equal(np.asarray(before, dtype=object), np.asarray(value, dtype=object))
    est.set_params(**{param: value})
    with pytest.raises(ValueError, match=rf"partial_fit: {param}=.*call fit"):
        est.partial_fit(*args)
    est.set_params(**{param: before})
    other = _quiet(_quiet(ESTIMATORS[name]().partial_fit, *args).partial_fit, *args)
    _quiet(est.partial_fit, *args)
    for a, b in zip(_predictions(est, args), _predictions(other, args)):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_partial_fit_after_set_params_of_the_schedule_follows_it():
    # rho_t = (t + offset)^-decay from the next step on, t counting on.
    X = np.random.RandomState(0).normal(size=(50, 2))
    est = GaussianGammaVB(batch_size=10, learning_offset=10.0, learning_decay=0.7)
    est.partial_fit(X)
    est.set_params(learning_offset=1.0, learning_decay=0.5).partial_fit(X)
    t = np.arange(1, 11)
    expected = np.where(t <= 5, (t + 10.0) ** -0.7, (t + 1.0) ** -0.5)
    np.testing.assert_allclose(est.step_trace_["rho"], expected, rtol=1e-12)


# ------------------------------------------------------------ data files
# The readers of skvi.datasets on generated files: a valid file is read as
# written (every row where it is, ids exactly); a file with one bad field,
# line or byte is a ValueError that names it (and the line, where there is
# one); never a crash, a wrapped id, a NaN or a silently shifted row.
def _named_error(path, call, line=None):
    with pytest.raises(ValueError) as info:
        call()
    where = f"{path}, line {line}" if line is not None else str(path)
    assert where in str(info.value), str(info.value)


LDAC_DAMAGE = [
    "blank line",
    "count nan",
    "count inf",
    "count -1",
    "count 1e400",
    "count text",
    "id -1",
    "id 1.5",
    f"id {2**31}",
    f"id {2**63}",
    "pair missing",
    "pair extra",
    "no colon",
]


@FUZZ
@given(
    st.lists(st.dictionaries(st.integers(0, 19), st.integers(1, 9), max_size=5), max_size=12),
    st.sampled_from([None] + LDAC_DAMAGE),
    st.data(),
)
def test_lda_c_files_are_read_row_per_line_or_refused_at_the_line(
    tmp_path_factory, docs, damage, data
):
    from skvi.datasets import read_ldac

    lines = [f"{len(d)} " + " ".join(f"{w}:{c}" for w, c in d.items()) for d in docs]
    lines = [line.strip() for line in lines]  # an empty document is the line "0"
    path = tmp_path_factory.mktemp("ldac") / "corpus.ldac"
    if damage is None:
        path.write_text("".join(line + "\n" for line in lines))
        X = read_ldac(path, n_words=20)
        dense = np.zeros((len(docs), 20))
        for i, d in enumerate(docs):
            dense[i, list(d)] = list(d.values())
        np.testing.assert_array_equal(X.toarray(), dense)
        return
    k = data.draw(st.integers(0, len(lines)))  # the line damaged (0-based)
    kind, _, value = damage.partition(" ")
    if damage == "blank line":
        lines.insert(k, "")
    else:
        lines.insert(k, "2 3:1 7:2")
        if kind == "count":
            lines[k] = f"2 3:1 7:{value}"
        elif kind == "id":
            lines[k] = f"2 3:1 {value}:2"
        elif damage == "pair missing":
            lines[k] = "2 3:1"
        elif damage == "pair extra":
            lines[k] = "2 3:1 7:2 9:1"
        else:
            lines[k] = "2 3:1 7"
    path.write_text("".join(line + "\n" for line in lines))
    _named_error(path, lambda: read_ldac(path), line=k + 1)


UCI_DAMAGE = [
    "D -1",
    f"D {10**12}",
    "D text",
    "W 1.5",
    "NNZ more",
    "NNZ less",
    "count nan",
    "count -1",
    "count 1.5",
    "id 0",
    "id past D",
    "field missing",
    "header cut",
]


@FUZZ
@given(
    st.integers(0, 6),
    st.integers(1, 6),
    st.integers(0, 2**16),
    st.sampled_from([None] + UCI_DAMAGE),
)
def test_uci_files_are_read_as_written_or_refused(tmp_path_factory, n_docs, n_words, seed, damage):
    from skvi.datasets import read_uci_bag_of_words

    rng = np.random.RandomState(seed)
    dense = rng.poisson(0.7, size=(n_docs, n_words))
    docs, words = np.nonzero(dense)
    header = [str(n_docs), str(n_words), str(docs.size)]
    body = [f"{d + 1} {w + 1} {dense[d, w]}" for d, w in zip(docs, words)]
    path = tmp_path_factory.mktemp("uci") / "docword.toy.txt"
    if damage is None:
        path.write_text("\n".join(header + body) + "\n")
        X, _ = read_uci_bag_of_words(path)
        assert X.shape == (n_docs, n_words)
        np.testing.assert_array_equal(X.toarray(), dense)
        return
    if not body and damage.split()[0] in ("count", "id", "field", "NNZ"):
        body, header[2] = ["1 1 1"], "1"
        n_docs = max(n_docs, 1)
        header[0] = str(n_docs)
    kind, _, value = damage.partition(" ")
    if kind in ("D", "W"):
        header["DW".index(kind)] = value
    elif damage == "NNZ more":
        header[2] = str(len(body) + 1)
    elif damage == "NNZ less":
        header[2] = str(len(body) - 1)
    elif kind == "count":
        body[-1] = body[-1].rsplit(" ", 1)[0] + f" {value}"
    elif damage == "id 0":
        body[0] = "0 " + body[0].split(" ", 1)[1]
    elif damage == "id past D":
        body[0] = f"{n_docs + 1} " + body[0].split(" ", 1)[1]
    elif damage == "field missing":
        body[-1] = body[-1].rsplit(" ", 1)[0]
    else:
        header, body = header[:2], []
    path.write_text("\n".join(header + body) + "\n")
    _named_error(path, lambda: read_uci_bag_of_words(path))


INT64 = st.integers(-(2**63), 2**63 - 1)
BAD_INTEGERS = ["", "nan", "inf", "1.5", "1e30", str(2**63), str(-(2**63) - 1), "x"]
BAD_RATINGS = ["", "nan", "inf", "-inf", "1e400", "x"]


@FUZZ
@given(
    st.lists(
        st.tuples(INT64, INT64, st.floats(allow_nan=False, allow_infinity=False), INT64),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["u.data", "ratings.dat", "ratings.csv"]),
    st.one_of(
        st.none(),
        st.tuples(st.sampled_from([0, 1, 3]), st.sampled_from(BAD_INTEGERS)),
        st.tuples(st.just(2), st.sampled_from(BAD_RATINGS)),
    ),
    st.data(),
)
def test_ratings_files_are_read_exactly_or_refused(tmp_path_factory, rows, layout, damage, data):
    from skvi.datasets import read_movielens

    fields = [[str(u), str(i), repr(r), str(t)] for u, i, r, t in rows]
    if damage is not None:
        k = data.draw(st.integers(0, len(rows) - 1))
        column, value = damage
        fields[k][column] = value
    sep = {"u.data": "\t", "ratings.dat": "::", "ratings.csv": ","}[layout]
    head = "userId,movieId,rating,timestamp\n" if layout == "ratings.csv" else ""
    path = tmp_path_factory.mktemp("ratings") / layout
    path.write_text(head + "".join(sep.join(f) + "\n" for f in fields))
    if damage is not None:
        _named_error(path, lambda: read_movielens(path))
        return
    X, y = read_movielens(path)
    assert X.dtype == np.int64 and X.tolist() == [[u, i] for u, i, _, _ in rows]
    np.testing.assert_array_equal(y, [r for _, _, r, _ in rows])


@FUZZ
@given(
    st.integers(1, 8),
    st.integers(0, 2**16),
    st.sampled_from(
        [None, f"index {2**31}", f"index {2**63}", "index -2", "value nan", "value inf"]
        + ["value -inf", "label nan", "label inf", "pair cut"]
    ),
)
def test_libsvm_files_are_read_as_sklearn_does_or_refused(tmp_path_factory, n, seed, damage):
    from sklearn.datasets import load_svmlight_file

    from skvi.datasets import read_libsvm

    rng = np.random.RandomState(seed)
    lines = [
        f"{rng.choice([-1, 1])} "
        + " ".join(f"{j}:{rng.randint(1, 5)}" for j in sorted(rng.choice(9, 3, False) + 1))
        for _ in range(n)
    ]
    path = tmp_path_factory.mktemp("libsvm") / "toy.svm"
    if damage is not None:
        kind, _, value = damage.partition(" ")
        k = rng.randint(n)
        label, rest = lines[k].split(" ", 1)
        lines[k] = {
            "index": f"{label} {rest} {value}:1",
            "value": f"{label} {rest} 10:{value}",
            "label": f"{value} {rest}",
            "pair": f"{label} {rest} 10",
        }[kind]
    path.write_text("\n".join(lines) + "\n")
    if damage is not None:
        _named_error(path, lambda: read_libsvm(path))
        return
    X, y = read_libsvm(path, n_features=10)
    ref_X, ref_y = load_svmlight_file(str(path), n_features=10)
    np.testing.assert_array_equal(X.toarray(), ref_X.toarray())
    np.testing.assert_array_equal(y, ref_y)


@FUZZ
@given(
    st.sampled_from(["ldac", "uci", "ratings", "libsvm"]),
    st.sampled_from(["gz", "bz2"]),
    st.sampled_from(["cut", "flip", "empty"]),
    st.data(),
)
def test_damaged_compressed_files_are_refused_or_read_unchanged(
    tmp_path_factory, reader, compress, damage, data
):
    # A truncated, empty or flipped .gz/.bz2 file: a ValueError naming it, or
    # (a flipped byte the format ignores, e.g. gzip's timestamp) the same
    # data as the intact file; CRCs catch any change of the contents.
    import bz2
    import gzip

    from skvi.datasets import read_ldac, read_libsvm, read_movielens, read_uci_bag_of_words

    read, name, text = {
        "ldac": (read_ldac, "c.ldac", "2 0:3 4:1\n0\n1 2:2\n" * 20),
        "uci": (
            read_uci_bag_of_words,
            "docword.t.txt",
            "20\n3\n20\n" + "".join(f"{d} {d % 3 + 1} {d}\n" for d in range(1, 21)),
        ),
        "ratings": (read_movielens, "u.data", "".join(f"{u}\t7\t3\t88125{u}\n" for u in range(40))),
        "libsvm": (read_libsvm, "t.svm", "+1 1:0.5 3:2\n-1 2:1\n" * 20),
    }[reader]
    packed = (gzip.compress if compress == "gz" else bz2.compress)(text.encode())
    path = tmp_path_factory.mktemp("compressed") / f"{name}.{compress}"
    path.write_bytes(packed)
    intact = read(path)
    if damage == "cut":
        path.write_bytes(packed[: data.draw(st.integers(1, len(packed) - 1))])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        at = data.draw(st.integers(0, len(packed) - 1))
        bit = data.draw(st.integers(0, 7))
        path.write_bytes(packed[:at] + bytes([packed[at] ^ (1 << bit)]) + packed[at + 1 :])
    try:
        got = read(path)
    except ValueError as exc:
        assert str(path) in str(exc), str(exc)
        return
    # Only a flip can leave a readable file, and then it reads the same.
    assert damage == "flip"
    for a, b in zip(
        intact if isinstance(intact, tuple) else (intact,),
        got if isinstance(got, tuple) else (got,),
    ):
        if sp.issparse(a):
            assert (a != b).nnz == 0 and a.shape == b.shape
        elif a is not None:
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------
# c_v coherence and top words: generated texts, bad tokens, bad sizes
# ---------------------------------------------------------------------------

C_V_VOCABULARY = ["ant", "bee", "cat", "dog", "eel", "fox"]
C_V_WEIGHTS = np.array([[6.0, 5.0, 4.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
_documents = st.lists(st.sampled_from(C_V_VOCABULARY + ["other", "words"]), max_size=15)


def _c_v(texts, **kwargs):
    from skvi.metrics import topic_coherence

    kwargs.setdefault("feature_names", C_V_VOCABULARY)
    kwargs.setdefault("top_n", 3)
    return topic_coherence(C_V_WEIGHTS, None, measure="c_v", texts=texts, **kwargs)


@FUZZ
@given(
    st.lists(_documents, min_size=1, max_size=6),
    st.integers(2, 12),
    st.sampled_from(["gensim", "boolean"]),
)
def test_c_v_of_generated_texts_is_in_range_or_names_the_absent_word(texts, window, counting):
    try:
        got = _c_v(texts, window_size=window, window_counting=counting)
    except ValueError as err:
        message = str(err)
        assert "occurs in no document of texts" in message or "no tokens" in message, message
        return
    assert got.shape == (2,)
    assert np.all((got >= -1 - 1e-12) & (got <= 1 + 1e-12)), got


@FUZZ
@given(
    st.lists(_documents.filter(len), min_size=1, max_size=5),
    st.data(),
    st.sampled_from([3, None, 1.5, b"ant", ["ant"], ("ant",)]),
)
def test_c_v_texts_with_a_token_not_a_str_are_a_type_error(texts, data, bad):
    doc = data.draw(st.integers(0, len(texts) - 1))
    at = data.draw(st.integers(0, len(texts[doc])))
    texts[doc].insert(at, bad)
    with pytest.raises(TypeError, match=rf"tokens of type str; document {doc} holds"):
        _c_v(texts)


@FUZZ
@given(
    st.lists(_documents, min_size=1, max_size=5),
    st.data(),
    st.sampled_from(["ant bee cat", 7, None, {"ant"}, b"ant bee"]),
)
def test_c_v_texts_that_are_not_lists_of_token_lists_are_a_type_error(texts, data, bad):
    doc = data.draw(st.integers(0, len(texts)))
    texts.insert(doc, bad)
    with pytest.raises(TypeError, match=rf"document {doc} is a"):
        _c_v(texts)
    for whole in ("ant bee cat", 3, b"ant"):
        with pytest.raises(TypeError, match="texts must be a list of documents"):
            _c_v(whole)


@FUZZ
@given(st.one_of(st.integers(-5, 1), st.sampled_from([2.0, 3.5, True, "110", None])))
def test_c_v_window_size_below_two_or_not_an_int_is_a_clear_error(window):
    with pytest.raises(ValueError, match="window_size must be an int of at least 2"):
        _c_v([["ant", "bee", "cat"]], window_size=window)


@FUZZ
@given(st.integers(0, 12).filter(lambda n: n != len(C_V_VOCABULARY)))
def test_c_v_feature_names_of_the_wrong_length_are_a_clear_error(n):
    names = [f"w{i}" for i in range(n)]
    with pytest.raises(ValueError, match="feature_names must hold one token per word"):
        _c_v([["ant", "bee"]], feature_names=names)


def test_c_v_empty_texts_and_bad_names_are_clear_errors():
    with pytest.raises(ValueError, match="texts is empty"):
        _c_v([])
    with pytest.raises(ValueError, match="texts is empty"):
        _c_v(iter([]))
    with pytest.raises(ValueError, match="texts hold no tokens"):
        _c_v([[], [], ()])
    with pytest.raises(ValueError, match="pass texts="):
        _c_v(None)
    with pytest.raises(ValueError, match="distinct"):
        _c_v([["ant"]], feature_names=["ant", "bee", "cat", "dog", "eel", "ant"])
    with pytest.raises(ValueError, match="type str"):
        _c_v([["ant"]], feature_names=[1, 2, 3, 4, 5, 6])
    with pytest.raises(ValueError, match="pass feature_names="):
        _c_v([["ant"]], feature_names=None)
    with pytest.raises(ValueError, match="window_counting"):
        _c_v([["ant"]], window_counting="exact")
    from skvi.metrics import topic_coherence

    with pytest.raises(ValueError, match="measure='c_v' only"):
        topic_coherence(C_V_WEIGHTS, np.ones((2, 6)), top_n=3, texts=[["ant"]])


@FUZZ
@given(
    st.one_of(st.integers(-3, 0), st.integers(7, 20), st.sampled_from([2.0, True, "3", None])),
    st.data(),
)
def test_top_words_bad_n_or_feature_names_are_clear_errors(n, data):
    lda = SVILatentDirichletAllocation(n_components=2, max_iter=2, random_state=0)
    lda.fit(np.array([[1, 2, 0, 3, 1, 0], [0, 1, 4, 0, 2, 1], [2, 0, 1, 1, 0, 3]]))
    with pytest.raises(ValueError, match=r"n must be an int in \[1, n_features=6\]"):
        lda.top_words(n)
    length = data.draw(st.integers(0, 12).filter(lambda k: k != 6))
    with pytest.raises(ValueError, match="feature_names must hold one word per column"):
        lda.top_words(2, feature_names=[f"w{i}" for i in range(length)])
    with pytest.raises(ValueError, match="type str"):
        lda.top_words(2, feature_names=list(range(6)))


# ------------------------------------- the correlated topic model's weights
CTM_COUNTS = np.random.RandomState(0).poisson(1.0, size=(12, 6))


def _small_ctm():
    return SVICorrelatedTopicModel(
        n_components=3, init="random", max_iter=2, transform_max_iter=10, random_state=0
    )


BAD_WEIGHTS = {
    "negative": (np.r_[-1.0, np.ones(11)], "Negative values"),
    "nan": (np.r_[np.nan, np.ones(11)], "NaN"),
    "inf": (np.r_[np.inf, np.ones(11)], "infinity"),
    "short": (np.ones(11), r"shape == \(11,\), expected \(12,\)"),
    # scikit-learn's message from 1.7, skvi's own before it.
    "zeros": (np.zeros(12), "at least one non-zero|sums to zero"),
    "2d": (np.ones((12, 2)), "1D array"),
    "text": (["a"] * 12, "could not convert"),
}


@FUZZ
@given(
    st.sampled_from(sorted(BAD_WEIGHTS)),
    st.sampled_from(["fit", "partial_fit", "score", "perplexity"]),
)
def test_ctm_bad_sample_weight_is_a_clear_error(kind, method):
    weight, message = BAD_WEIGHTS[kind]
    est = _small_ctm()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method in ("score", "perplexity"):
            est.fit(CTM_COUNTS)
        with pytest.raises(ValueError, match=message):
            getattr(est, method)(CTM_COUNTS, sample_weight=weight)


@FUZZ
@given(
    st.lists(
        st.sampled_from([0.0, 1e-6, 0.5, 1.0, 3.0, 1e6, 1e300]), min_size=12, max_size=12
    ).filter(lambda w: sum(w) > 0),
    st.sampled_from(["random", "lda"]),
)
def test_ctm_weights_of_any_size_fit_finite_models(weight, init):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _small_ctm().set_params(init=init).fit(CTM_COUNTS, sample_weight=weight)
    assert est.n_samples_seen_ == pytest.approx(sum(weight))
    for name in ("components_", "prior_mean_", "prior_covariance_", "document_mean_"):
        assert np.all(np.isfinite(getattr(est, name))), name
    assert est.document_mean_.shape[0] == sum(w > 0 for w in weight)
    assert np.isfinite(est.score(CTM_COUNTS, sample_weight=weight))
    assert np.isfinite(est.perplexity(CTM_COUNTS, sample_weight=weight))


@FUZZ
@given(
    st.one_of(st.integers(-3, 0), st.integers(7, 20), st.sampled_from([2.0, True, "3", None])),
    st.data(),
)
def test_ctm_top_words_bad_n_or_feature_names_are_clear_errors(n, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctm = _small_ctm().fit(CTM_COUNTS)
    with pytest.raises(ValueError, match=r"n must be an int in \[1, n_features=6\]"):
        ctm.top_words(n)
    length = data.draw(st.integers(0, 12).filter(lambda k: k != 6))
    with pytest.raises(ValueError, match="feature_names must hold one word per column"):
        ctm.top_words(2, feature_names=[f"w{i}" for i in range(length)])
    with pytest.raises(ValueError, match="type str"):
        ctm.top_words(2, feature_names=list(range(6)))


# ------------------------------------- matrix factorization's prediction options
_MF_PAIRS = np.array([(m, n) for m in range(6) for n in range(5) if (m + n) % 3])


def _mf_fitted(likelihood="gaussian"):
    y = np.arange(len(_MF_PAIRS)) % 2 if likelihood == "bernoulli" else 1.0 + _MF_PAIRS[:, 1]
    mf = SVIMatrixFactorization(n_components=1, likelihood=likelihood, max_iter=3, tol=0)
    return _quiet(mf.fit, _MF_PAIRS, y)


_NOT_BOOLS = st.sampled_from([0, 1, 1.0, "yes", None, np.array([True]), [True]])


@FUZZ
@given(
    st.sampled_from(["return_std", "include_noise", "clip"]),
    _NOT_BOOLS,
    st.sampled_from(["gaussian", "bernoulli"]),
)
def test_mf_prediction_flags_that_are_not_bools_are_a_clear_error(name, value, likelihood):
    mf = _mf_fitted(likelihood)
    with pytest.raises(ValueError, match=f"{name} must be True or False"):
        mf.predict(_MF_PAIRS, **{name: value})
    if name != "clip":
        with pytest.raises(ValueError, match=f"{name} must be True or False"):
            mf.predict_mean(_MF_PAIRS, **{name: value})


@FUZZ
@given(st.sampled_from(["gaussian", "bernoulli"]), st.booleans(), st.booleans())
def test_mf_predictions_with_every_flag_are_finite(likelihood, include_noise, clip):
    mf = _mf_fitted(likelihood)
    X = np.vstack([_MF_PAIRS, [[0, 99], [99, 0], [99, 99]]])  # unknown ids too
    if likelihood == "bernoulli":
        assert set(mf.predict(X, include_noise=include_noise, clip=clip)) <= {0, 1}
        with pytest.raises(ValueError, match="class labels"):
            mf.predict(X, return_std=True)
    else:
        mean, std = mf.predict(X, return_std=True, include_noise=include_noise, clip=clip)
        _finite(mean, std)
        if clip:
            assert np.all((mean >= 1.0) & (mean <= 5.0))
    _finite(*mf.predict_mean(X, return_std=True, include_noise=include_noise))


@FUZZ
@given(
    st.one_of(
        st.integers(-3, 0),
        st.integers(6, 40),
        st.sampled_from([2.0, True, np.True_, "3", None, [2], np.float64(2.0)]),
    ),
)
def test_mf_recommend_bad_n_is_a_clear_error(n):
    mf = _mf_fitted()
    with pytest.raises(ValueError, match=r"n must be an int in \[1, n_items_=5\]"):
        mf.recommend([0, 1], n=n, exclude_seen=False)


@FUZZ
@given(st.integers(1, 5), st.data())
def test_mf_recommend_more_items_than_a_user_has_left_names_the_user(n, data):
    mf = _mf_fitted()
    users = data.draw(st.lists(st.integers(0, 8), min_size=1, max_size=6))
    rated = np.bincount(_MF_PAIRS[:, 0], minlength=9)
    left = np.where(np.arange(9) < 6, 5 - rated, 5)  # ids 6, 7 and 8 are unknown: nothing rated
    short = [u for u in users if left[u] < n]
    if short:
        with pytest.raises(ValueError, match=rf"Users \[{short[0]}"):
            mf.recommend(users, n=n)
    else:
        items, mean, std = mf.recommend(users, n=n)
        assert items.shape == (len(users), n)
        _finite(mean, std)
        for u, row in zip(users, items):
            assert not {(u, i) for i in row} & set(map(tuple, _MF_PAIRS.tolist()))


@FUZZ
@given(
    st.sampled_from(
        [
            ("users", 3),
            ("users", [[0, 1]]),
            ("users", np.zeros((2, 2))),
            ("exclude_seen", 1),
            ("exclude_seen", "no"),
            ("exclude_seen", None),
            ("include_noise", 0),
            ("seen", np.array([0, 1])),
            ("seen", np.zeros((2, 3))),
            ("seen", np.zeros((1, 2, 2))),
            ("seen_sparse", None),
            ("seen_without_exclusion", None),
            ("seen", np.array([[0.0, np.nan]])),
        ]
    )
)
def test_mf_recommend_bad_arguments_are_clear_errors(case):
    name, value = case
    mf = _mf_fitted()
    kwargs = {"users": [0, 1], "n": 2}
    if name == "seen_sparse":
        kwargs["seen"] = sp.csr_matrix(np.ones((2, 2)))
    elif name == "seen_without_exclusion":
        kwargs.update(seen=_MF_PAIRS[:2], exclude_seen=False)
    else:
        kwargs[name] = value
    with pytest.raises(ValueError):
        mf.recommend(**kwargs)


@FUZZ
@given(st.lists(st.tuples(st.integers(-2, 9), st.integers(-2, 7)), max_size=12), st.booleans())
def test_mf_recommend_with_any_seen_pairs_leaves_them_out(pairs, strings):
    mf = _mf_fitted()
    seen = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    users = np.array([0, 3, 7])
    if strings:  # ids of another kind: no known user or item among them
        seen = seen.astype(str)
    # Items 0..4 are known; a pair of another item or user leaves nothing out.
    left = [5 - len({j for i, j in pairs if i == u and 0 <= j < 5}) for u in users]
    n_left = [5, 5, 5] if strings else left
    n = min(n_left)
    if n == 0:
        with pytest.raises(ValueError, match="unrated items"):
            mf.recommend(users, n=1, seen=seen)
        return
    items, mean, std = mf.recommend(users, n=n, seen=seen)
    _finite(mean, std)
    for u, row in zip(users, items):
        for i in row:
            assert strings or (u, i) not in set(pairs)


# --------------------------------- the sparse GP regressor's normalize_y, include_noise
def _gp_rows(n=12):
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, size=(n, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)


@FUZZ
@given(st.sampled_from(["yes", "True", 1, 0, 2.0, None, [True], np.array([True, False])]))
def test_sparse_gp_normalize_y_not_a_bool_is_a_clear_error(value):
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = _gp_rows()
    with pytest.raises(InvalidParameterError, match="normalize_y"):
        SVISparseGPRegressor(normalize_y=value, n_inducing=4, max_iter=2).fit(X, y)


@FUZZ
@given(st.sampled_from(["yes", "False", 1, 0, 0.5, None, [True], np.array([True])]))
def test_sparse_gp_include_noise_not_a_bool_is_a_clear_error(value):
    X, y = _gp_rows()
    gp = _quiet(SVISparseGPRegressor(n_inducing=4, max_iter=2, random_state=0).fit, X, y)
    for kw in ({"return_std": True}, {"return_cov": True}, {}):
        with pytest.raises(ValueError, match="include_noise must be True or False"):
            gp.predict(X, include_noise=value, **kw)


@FUZZ
@given(
    st.sampled_from([0.0, 1e-8, 1e-3, 1.0, 1e3, 1e8]),
    st.sampled_from([0.0, -7.0, 1e3, -1e6]),
    st.booleans(),
    st.integers(1, 30),
    st.integers(0, 2**16),
)
def test_sparse_gp_targets_of_any_scale_and_offset_are_finite(scale, offset, normalize, n, seed):
    # A constant target (scale 0), a single row and targets far from the
    # prior's scale: finite predictions, a noisy observation's standard
    # deviation at least the latent function's, both in y's units.
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, size=(n, 1))
    y = scale * rng.normal(size=n) + offset
    gp = _quiet(
        SVISparseGPRegressor(n_inducing=4, max_iter=3, normalize_y=normalize, random_state=0).fit,
        X,
        y,
    )
    mean, std = gp.predict(X, return_std=True)
    _, noisy = gp.predict(X, return_std=True, include_noise=True)
    _finite(mean, std, noisy, gp.noise_variance_)
    assert np.all(noisy >= std) and gp.noise_variance_ > 0
    np.testing.assert_allclose(noisy**2, std**2 + gp.noise_variance_, rtol=1e-9)
    if scale == 0.0 and normalize:  # centred only: the constant is predicted
        np.testing.assert_allclose(mean, offset, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------ network builders
def _bad_builder(defect, threshold, width):
    """A builder of a Gaussian's mean and precision per column, with one defect."""
    from skvi.networks import Gamma, GaussianARD

    shared = GaussianARD(0.0, 1e-3, plates=(width,), name="mu")

    def builder(n_rows):
        mu = shared if defect == "reuses a node" else GaussianARD(0.0, 1e-3, plates=(width,))
        mu.name = "mu"
        tau = Gamma(1e-3, 1e-3, plates=(width,), name="tau")
        if defect == "changes with the rows" and n_rows > threshold:
            if threshold % 2:  # another node
                mu = GaussianARD(GaussianARD(0.0, 1.0, name="m"), 1e-3, plates=(width,))
                mu.name = "mu"
            else:  # another prior
                tau = Gamma(2e-3, 1e-3, plates=(width,), name="tau")
        if defect == "plates beside the rows":
            return GaussianARD(mu, tau, plates=(min(n_rows, threshold + 1), n_rows, width))
        if defect == "rows not leading":
            column = GaussianARD(0.0, 1e-3, plates=(width, 1), name="mu")
            return GaussianARD(column, 1.0, plates=(width, n_rows), name="y")
        if defect == "a fixed number of rows":
            return GaussianARD(mu, tau, plates=(threshold + 2, width), name="y")
        if defect == "returns no node":
            return np.zeros((n_rows, width))
        return GaussianARD(mu, tau, plates=(n_rows, width), name="y")

    return builder


@FUZZ
@given(
    st.sampled_from(
        [
            "changes with the rows",
            "reuses a node",
            "plates beside the rows",
            "rows not leading",
            "a fixed number of rows",
            "returns no node",
        ]
    ),
    st.integers(1, 40),
    st.integers(1, 3),
    st.integers(8, 60),
    st.sampled_from(["batch", "online"]),
)
def test_network_builders_that_cannot_work_are_refused_before_fitting(
    defect, threshold, width, n, method
):
    from skvi.networks import NetworkError, SVIBayesianNetwork

    X = np.random.RandomState(threshold).normal(size=(n, width))
    est = SVIBayesianNetwork(
        model=_bad_builder(defect, threshold, width),
        learning_method=method,
        batch_size=7,
        max_iter=2,
        tol=0,
    )
    if defect == "changes with the rows" and threshold >= max(n, 7):
        # It never changes at the sizes a fit uses: a valid builder here.
        assert np.isfinite(est.fit(X).score(X))
        return
    with pytest.raises(NetworkError) as err:
        est.fit(X)
    message = str(err.value)
    if defect in ("changes with the rows", "reuses a node", "plates beside the rows"):
        assert message.startswith("model: ")
    elif defect == "returns no node":
        assert "must return the observed node" in message
    else:
        assert "leading plate must be the rows" in message
    assert not hasattr(est, "natural_params_")


@FUZZ
@given(st.integers(1, 12), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_network_inputs_of_any_chunking_give_the_batch_posterior(n_blocks, d, seed):
    """A regression on inputs: each block's inputs fed into the declared network."""
    from skvi.networks import GaussianARD, SumMultiply, SVIBayesianNetwork

    def builder(X_rows):
        w = GaussianARD(0, 1e-6, shape=(d,), name="w")
        return GaussianARD(SumMultiply("d,d->", X_rows, w), 4.0, name="y")

    rng = np.random.RandomState(seed)
    n = n_blocks + rng.randint(0, 20)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + 0.5 * rng.normal(size=n)
    exact = np.linalg.solve(4.0 * X.T @ X + 1e-6 * np.eye(d), 4.0 * X.T @ y)
    est = SVIBayesianNetwork(model=builder, max_iter=3, tol=0).fit(X, y)
    np.testing.assert_allclose(est.nodes_["w"].get_moments()[0], exact, rtol=1e-8, atol=1e-10)
    stream = SVIBayesianNetwork(model=builder, total_samples=n, learning_offset=1.0)
    for _ in range(3):
        for rows in np.array_split(np.arange(n), n_blocks):
            stream.partial_fit(X[rows], y[rows])
    assert np.all(np.isfinite(stream.predict(X)))
    assert stream.elbo(X, y) <= est.elbo(X, y) + 1e-8 * abs(est.elbo(X, y))


# ----------------------------------------------- GLMs: width, classes, names
_GLMS = [
    SVILogisticRegression,
    SVIPoissonRegression,
    SVIOverdispersedPoissonRegression,
    SVILinearRegression,
]


@FUZZ
@given(
    st.integers(0, 3),
    st.integers(11586, 10**8),
    st.sampled_from(["csr", "coo"]),
    st.booleans(),
    st.integers(2, 6),
)
def test_glm_too_wide_x_is_a_clear_error_before_allocating(which, n_features, fmt, intercept, k):
    # Any X whose weights' dense covariance passes 1 GiB (11586 weights and
    # more): a ValueError naming the estimator, the matrix and its size,
    # with little memory used on the way.
    import tracemalloc

    cls = _GLMS[which]
    rng = np.random.RandomState(0)
    X = sp.coo_matrix(
        (rng.uniform(size=50), (rng.randint(20, size=50), rng.randint(n_features, size=50))),
        shape=(20, n_features),
    ).asformat(fmt)
    y = np.arange(20) % (k if cls is SVILogisticRegression else 2)
    outputs = k if cls is SVILogisticRegression and k > 2 else 1
    d = (n_features + int(intercept)) * outputs
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            cls(fit_intercept=intercept).fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100e6
    message = str(info.value)
    assert message.startswith(f"{cls.__name__}: X has {n_features} features")
    assert f"{d} x {d} float64 matrix" in message and "Reduce the features" in message


@FUZZ
@given(
    st.lists(
        st.one_of(
            st.integers(-3, 3),
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from([np.nan, np.inf, -np.inf, 0.5]),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_partial_fit_classes_are_labels_or_a_clear_error(classes):
    # scikit-learn's test of the labels decides: a NaN, an infinity or a
    # non-integer float is never a class.
    from sklearn.utils.multiclass import unique_labels

    X = np.random.RandomState(0).normal(size=(20, 2))
    y = np.arange(20) % 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = unique_labels(classes)
    except ValueError:
        with pytest.raises(ValueError, match="are not class labels"):
            SVILogisticRegression().partial_fit(X, y, classes=classes)
        return
    est = SVILogisticRegression(max_iter=1)
    if not {0, 1} <= set(labels.tolist()):
        with pytest.raises(ValueError):
            est.partial_fit(X, y, classes=classes)
        return
    _quiet(est.partial_fit, X, y, classes=classes)
    assert est.classes_.tolist() == labels.tolist()
    _quiet(est.partial_fit, X, y, classes=classes[::-1])  # the same classes again
    with pytest.raises(ValueError, match="is not the same as on the first call"):
        est.partial_fit(X, y, classes=list(labels) + [int(labels.max()) + 1])


@FUZZ
@given(st.integers(0, 3), st.from_regex(r"[a-z][a-z_]{0,14}", fullmatch=True))
def test_glm_bad_keyword_names_the_public_class(which, keyword):
    cls = _GLMS[which]
    if keyword in cls().get_params():
        return
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\.__init__\(\) got an unexpected"):
        cls(**{keyword: 1})


def test_matrix_factorization_ids_of_another_kind_are_refused_not_unknown():
    # Integer ids asked as strings read as unknown ids (the prior's
    # prediction for every row, silently); unknown ids of the fitted kind
    # are still predicted from the prior, and recommend's seen pairs of
    # another kind still match nothing.
    rng = np.random.RandomState(0)
    pairs = np.column_stack([rng.randint(0, 6, 40), rng.randint(0, 5, 40)])
    mf = _quiet(
        SVIMatrixFactorization(n_components=2, max_iter=2, random_state=0).fit,
        pairs,
        rng.normal(size=40),
    )
    for method in (mf.predict, mf.predict_mean, mf.score):
        args = (pairs.astype(str),) + ((rng.normal(size=40),) if method == mf.score else ())
        with pytest.raises(ValueError, match="user ids asked are of kind <U"):
            method(*args)
    mixed = np.column_stack([pairs[:, 0], pairs[:, 1]]).astype(object)
    mixed[:, 1] = [f"i{v}" for v in pairs[:, 1]]
    with pytest.raises(ValueError, match="item ids asked are of kind"):
        mf.predict(mixed)
    unknown = mf.predict(np.array([[100, 200]]))
    np.testing.assert_allclose(unknown, mf.predict(np.array([[101, 201]])))


@pytest.mark.parametrize(
    "values, match",
    [
        (np.array([[1.0, np.nan]]), "finite"),
        (np.array([[np.inf, 1.0]]), "finite"),
        (np.empty((0, 3)), "nothing to draw"),
        (np.ones((2, 2, 2)), "at most two axes"),
        (np.array([["a", "b"]]), "could not convert"),
    ],
)
def test_plot_hinton_refuses_values_it_cannot_draw(values, match):
    pytest.importorskip("matplotlib").use("Agg")
    import matplotlib.pyplot as plt

    from skvi.plotting import plot_hinton

    with pytest.raises(ValueError, match=match):
        plot_hinton(values)
    # Huge values are drawn: sizes relative to the largest.
    ax = plot_hinton(np.array([[1e308, -1e307]]))
    np.testing.assert_allclose([s.get_width() ** 2 for s in ax.patches], [1.0, 0.1])
    plt.close("all")


@pytest.mark.parametrize(
    "node, x, match",
    [
        ("gaussian", np.array([0.0, np.nan]), "finite"),
        ("gaussian", np.array([np.inf]), "finite"),
        ("gaussian", np.array(["a"]), "could not convert"),
        ("categorical", None, "GaussianARD, Gaussian, Gamma or Beta"),
        ("array", None, "GaussianARD, Gaussian, Gamma or Beta"),
        ("observed_gamma", None, "observed"),
    ],
)
def test_plot_pdf_refuses_what_it_cannot_draw(node, x, match):
    pytest.importorskip("matplotlib").use("Agg")
    import matplotlib.pyplot as plt

    from skvi.networks import Categorical, Dirichlet, Gamma, GaussianARD
    from skvi.plotting import plot_pdf

    nodes = {
        "gaussian": lambda: GaussianARD(0.0, 1.0),
        "categorical": lambda: Categorical(Dirichlet(np.ones(2))),
        "array": lambda: np.ones(3),
        "observed_gamma": lambda: Gamma(1.0, 1.0).observe(2.0),
    }
    with pytest.raises(ValueError, match=match):
        plot_pdf(nodes[node](), x=x)
    # Huge and empty grids are drawn: densities of zero, or no points.
    ax = plot_pdf(GaussianARD(0.0, 1.0), x=np.array([1e300, -1e300]))
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [0.0, 0.0])
    assert plot_pdf(GaussianARD(0.0, 1.0), x=np.array([])).lines[0].get_ydata().size == 0
    plt.close("all")


# ------------------------------------- the family layer's linear algebra
_BAD_ENTRIES = [np.nan, np.inf, -np.inf]


@st.composite
def _natural_gaussians(draw):
    """Natural parameters of Gaussians, some damaged: a non-finite entry or a wrong shape."""
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    d = draw(st.integers(1, 4))
    diagonal = draw(st.booleans())
    rng = np.random.RandomState(draw(st.integers(0, 2**16)))
    scale = draw(scales)
    if diagonal:
        eta2 = -rng.uniform(0.1, 2.0, size=batch + (d,)) * scale
    else:
        A = rng.normal(size=batch + (d, d))
        eta2 = -0.5 * (A @ np.swapaxes(A, -1, -2) + np.eye(d)) * scale
    eta1 = rng.normal(size=batch + (d,)) * scale
    damage = draw(st.sampled_from(["none", "eta1", "eta2", "shape", "indefinite"]))
    if damage in ("eta1", "eta2"):
        target = eta1 if damage == "eta1" else eta2
        target.reshape(-1)[draw(st.integers(0, target.size - 1))] = draw(
            st.sampled_from(_BAD_ENTRIES)
        )
    elif damage == "shape":
        eta1 = eta1[..., :-1] if d > 1 else np.concatenate([eta1, eta1], axis=-1)
    elif damage == "indefinite":
        eta2 = -eta2
    return eta1, eta2, diagonal, damage


@FUZZ
@given(_natural_gaussians(), st.booleans())
def test_gaussian_moments_are_finite_or_a_clear_error(case, factor):
    from skvi.expfam import gaussian_moments

    eta1, eta2, diagonal, damage = case
    try:
        q = gaussian_moments(eta1, eta2, diagonal=diagonal, factor=factor)
    except np.linalg.LinAlgError:
        assert damage == "indefinite"
        return
    except ValueError as err:
        assert damage in ("eta1", "eta2", "shape")
        assert re.search(r"finite|shape|eta2", str(err)), err
        return
    assert damage == "none"
    _finite(q.mean, q.covariance, q.logdet_precision)
    if factor:
        _finite(q.factor)
    if eta1.ndim == 1 and not diagonal:  # the LAPACK route agrees
        lapack = gaussian_moments(eta1, eta2, lapack=True)
        np.testing.assert_allclose(lapack.covariance, q.covariance, rtol=1e-8, atol=1e-300)


@FUZZ
@given(_natural_gaussians())
def test_small_gaussian_moments_mark_the_invalid_and_equal_numpy_elsewhere(case):
    from skvi.expfam import small_gaussian_moments

    eta1, eta2, diagonal, damage = case
    if diagonal:  # the map takes full precisions
        eta2 = np.where(np.eye(eta2.shape[-1], dtype=bool), eta2[..., None], 0.0)
    try:
        q = small_gaussian_moments(eta1, eta2)
    except ValueError as err:
        assert damage == "shape"
        assert "shape" in str(err)
        return
    assert damage != "shape"
    valid = np.asarray(q.valid)
    if damage == "none":
        assert valid.all()
    if damage in ("eta2", "indefinite"):
        assert not valid.all()
    # Where valid, the moments are numpy's inverse of the precision; elsewhere NaN.
    for i in zip(*np.nonzero(np.ones(valid.shape, dtype=bool))) if valid.ndim else [()]:
        if valid[i]:
            cov = np.linalg.inv(-2.0 * eta2[i])
            mean = cov @ eta1[i]
            scale = np.abs(cov).max()
            np.testing.assert_allclose(q.mean[i], mean, rtol=1e-8, atol=1e-8 * np.abs(mean).max())
            np.testing.assert_allclose(
                q.second_moment[i], cov + np.outer(mean, mean), rtol=1e-7, atol=1e-8 * scale
            )
        else:
            assert np.isnan(q.mean[i]).all()


@FUZZ
@given(
    st.sampled_from(["entry", "not_square", "vector", "text", "indefinite", "none"]),
    st.integers(1, 4),
    st.integers(0, 2**16),
)
def test_psd_root_and_inverse_and_logdet_are_exact_or_a_clear_error(damage, d, seed):
    from skvi.expfam import inverse_and_logdet, psd_root

    rng = np.random.RandomState(seed)
    A = rng.normal(size=(2, d, d))
    a = A @ np.swapaxes(A, -1, -2) + np.eye(d)
    if damage == "entry":
        a[0, rng.randint(d), rng.randint(d)] = _BAD_ENTRIES[rng.randint(3)]
    elif damage == "not_square":
        a = np.concatenate([a, a], axis=-1)
    elif damage == "vector":
        a = a[0, 0]
    elif damage == "text":
        a = a.astype(str)
    elif damage == "indefinite":
        a = -a
    try:
        root = psd_root(a)
    except ValueError as err:
        assert damage in ("entry", "not_square", "vector", "text")
        assert re.search(r"finite|square|real|shape", str(err)), err
    else:
        assert damage in ("none", "indefinite")
        # Positive definite: R R^T = a; negative definite: the zero root of its PSD part.
        expected = a if damage == "none" else np.zeros_like(a)
        np.testing.assert_allclose(root @ np.swapaxes(root, -1, -2), expected, atol=1e-9 * d)
    try:
        inverse, logdet = inverse_and_logdet(a[0] if a.ndim == 3 else a)
    except ValueError as err:
        assert damage in ("not_square", "vector", "text")
        assert "square" in str(err)
        return
    if damage == "entry" and not np.all(np.isfinite(a[0])):
        assert inverse is None and logdet == -np.inf
        return
    m = a[0]
    np.testing.assert_allclose(inverse @ m, np.eye(d), atol=1e-8 * np.linalg.cond(m))
    assert logdet == pytest.approx(np.log(abs(np.linalg.det(m))), rel=1e-9, abs=1e-9)


@FUZZ
@given(
    st.sampled_from(["cholesky", "logdet", "inverse", "eigenvalues", "projection", "jitter"]),
    st.integers(1, 4),
    st.sampled_from(["none", "entry", "not_square", "vector", "indefinite"]),
    st.integers(0, 2**16),
)
def test_spd_factorisations_are_finite_or_a_clear_error(which, d, damage, seed):
    from skvi.expfam import (
        cholesky_factor,
        psd_projection,
        spd_inverse,
        spd_logdet,
        symmetric_eigenvalues,
    )

    fn = {
        "cholesky": cholesky_factor,
        "logdet": spd_logdet,
        "inverse": spd_inverse,
        "eigenvalues": symmetric_eigenvalues,
        "projection": psd_projection,
        "jitter": lambda a: cholesky_factor(a, jitter=True),
    }[which]
    rng = np.random.RandomState(seed)
    A = rng.normal(size=(2, d, d))
    a = A @ np.swapaxes(A, -1, -2) + np.eye(d)
    if damage == "entry":
        a[rng.randint(2), rng.randint(d), rng.randint(d)] = _BAD_ENTRIES[rng.randint(3)]
    elif damage == "not_square":
        a = a[..., :, : d + 1] if d == 1 else a[..., :, :-1]
        a = np.concatenate([a, a], axis=-1) if d == 1 else a
    elif damage == "vector":
        a = a[0, 0]
    elif damage == "indefinite":
        a = -a
    try:
        out = fn(a)
    except np.linalg.LinAlgError:
        assert damage == "indefinite" and which in ("cholesky", "logdet", "inverse", "jitter")
        return
    except ValueError as err:
        assert damage in ("entry", "not_square", "vector")
        assert re.search(r"finite|square", str(err)), err
        return
    assert damage == "none" or (damage == "indefinite" and which in ("eigenvalues", "projection"))
    _finite(out)


# ------------------------------------------------------------ the networks' seeded start
def _seeded_mixture(n_rows):
    from test_networks import mixture_builder  # its Dirichlet, Gaussian and Wishart priors

    return mixture_builder(n_rows)


@pytest.mark.parametrize("rows", ["one", "identical", "fewer_than_clusters", "weighted"])
@pytest.mark.parametrize("method", ["batch", "online"])
def test_a_seeded_start_on_degenerate_rows_fits_every_row_to_its_value(rows, method):
    """Fewer rows than categories, rows all alike (no row explains worse than another), weights.

    Every cluster that holds rows sits at their value: a cluster's mean is
    its rows' mean, shrunk towards the prior's 0 by a precision of 1e-3
    against the rows' precision (about 300 per row here).
    """
    from skvi.networks import SVIBayesianNetwork

    x = np.array([1.5, -2.0])
    X = {
        "one": x[None],
        "identical": np.tile(x, (10, 1)),
        "fewer_than_clusters": np.tile(x, (3, 1)),
    }
    X["weighted"] = np.tile(x, (6, 1))
    weight = np.array([0.0, 1.0, 2.0, 0.5, 0.0, 3.0]) if rows == "weighted" else None
    est = SVIBayesianNetwork(
        model=_seeded_mixture, init_params="k-means++", learning_method=method, random_state=0
    ).fit(X[rows], sample_weight=weight)
    resp = est.transform(X[rows])
    np.testing.assert_allclose(resp.sum(axis=1), 1.0, rtol=1e-12)
    occupied = np.unique(resp.argmax(axis=1))
    means = est.nodes_["mu"].get_moments()[0]
    _finite(means)
    np.testing.assert_allclose(means[occupied], np.broadcast_to(x, (occupied.size, 2)), atol=1e-2)


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1.0, 1e150, 1e300])
def test_the_seeded_starts_seeds_do_not_depend_on_the_scale_of_the_weights(scale):
    """Weights of any finite scale weigh the draws alike: scikit-learn's seeds of the unscaled weights.

    k-means++ draws rows with probabilities proportional to weight times
    squared distance, and a weighted row seeds its category as one point, so
    scaling every weight changes nothing; near 1e300 the products stay finite
    for these distances.
    """
    from sklearn.cluster import kmeans_plusplus

    from skvi.engine import Factor
    from skvi.engine.data import Rows
    from skvi.networks import SVIBayesianNetwork
    from skvi.networks._start import seed_categories

    rng = np.random.RandomState(3)
    X = rng.randn(60, 2) * 3.0
    weight = rng.uniform(0.5, 2.0, size=60)
    est = SVIBayesianNetwork(model=_seeded_mixture)
    nodes, _, _, glob = est._template()
    params = {}
    for n in glob:
        nodes[n].initialize_from_prior()
        params[n] = Factor(tuple(nodes[n].phi))
    rows = Rows(X, None, weight * scale)
    net = est._local_network(rows, params, start_locals=False)
    seeds = seed_categories(est, net, params, "z", rows, np.random.RandomState(5))
    _finite(net["z"].u[0])
    _, expected = kmeans_plusplus(X, 4, sample_weight=weight, random_state=5)
    np.testing.assert_array_equal(seeds, expected)


@pytest.mark.parametrize(
    "params",
    [{"init_params": "k-means"}, {"init_draws": 0}, {"init_draws": "many"}, {"init_draws": 1.5}],
)
def test_the_networks_start_refuses_bad_settings(params):
    from skvi.networks import SVIBayesianNetwork

    with pytest.raises(ValueError, match="init_params|init_draws"):
        SVIBayesianNetwork(model=_seeded_mixture, **params).fit(np.ones((20, 2)))


def test_k_means_plus_plus_refuses_a_network_without_a_mixture():
    from skvi.networks import Gamma, GaussianARD, SVIBayesianNetwork

    def one_mean(n_rows):
        mu = GaussianARD(0.0, 1e-3, name="mu")
        return GaussianARD(mu, Gamma(1.0, 1.0, name="tau"), plates=(n_rows,), name="y")

    with pytest.raises(ValueError, match=r"k-means\+\+' seeds the categories of a mixture"):
        SVIBayesianNetwork(model=one_mean, init_params="k-means++").fit(np.ones((5, 1)))
