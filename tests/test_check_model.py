"""check_model: every estimator keeps the engine's contract, and a broken model is named.

The plug-in model is docs/engine.md's own (its first python block, run as
the page's reader runs it); its fit is checked against the conjugate
posterior in closed form, and each way of breaking it (a sign, a factor of
a statistic, a factor of the bound, weights ignored, rows kept) against the
check that must catch it.
"""

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from skvi import (
    GaussianGammaVB,
    SVIBayesianGaussianMixture,
    SVICorrelatedTopicModel,
    SVILatentDirichletAllocation,
    SVILinearRegression,
    SVILogisticRegression,
    SVIMatrixFactorization,
    SVIOverdispersedPoissonRegression,
    SVIPoissonRegression,
    SVISparseGPClassifier,
    SVISparseGPRegressor,
)
from skvi.engine import ContractError, RowStatistics, check_model
from skvi.networks import (
    Add,
    Bernoulli,
    Categorical,
    Dirichlet,
    Exp,
    Gamma,
    Gaussian,
    GaussianARD,
    Logistic,
    Mixture,
    Poisson,
    SumMultiply,
    SVIBayesianNetwork,
    Wishart,
)

ENGINE_PAGE = Path(__file__).resolve().parents[1] / "docs" / "engine.md"


def _plugin_namespace():
    block = re.findall(r"^```python\n(.*?)^```", ENGINE_PAGE.read_text(), flags=re.S | re.M)[0]
    namespace = {"__name__": "docs_engine_plugin"}
    exec(compile(block, "docs/engine.md, python block 1", "exec"), namespace)
    return namespace


PLUGIN = _plugin_namespace()
GroupRates = PLUGIN["GroupRates"]


def _group_counts(n=400, n_groups=5, seed=0):
    rng = np.random.RandomState(seed)
    rates = rng.gamma(2.0, 3.0, size=n_groups)
    groups = rng.randint(n_groups, size=n)
    return np.column_stack([groups, rng.poisson(rates[groups])]).astype(float)


# ------------------------------------------------------------ the plug-in
def test_plugin_fits_the_conjugate_posterior_and_keeps_the_contract():
    X = _group_counts()
    g = X[:, 0].astype(int)
    est = GroupRates(a0=2.0, b0=0.5).fit(X)
    np.testing.assert_allclose(est.rate_shape_, 2.0 + np.bincount(g, weights=X[:, 1]))
    np.testing.assert_allclose(est.rate_rate_, 0.5 + np.bincount(g))
    check_model(GroupRates(a0=2.0, b0=0.5, random_state=0), X)


def test_plugin_streams_towards_the_posterior():
    X = _group_counts(n=4000)
    g = X[:, 0].astype(int)
    stream = GroupRates(total_samples=len(X), learning_offset=1.0, random_state=0)
    for _ in range(3):
        for chunk in np.array_split(X, 20):
            stream.partial_fit(chunk)
    exact = (1.0 + np.bincount(g, weights=X[:, 1])) / (1.0 + np.bincount(g))
    np.testing.assert_allclose(stream.rate_shape_ / stream.rate_rate_, exact, rtol=0.05)


class _SignFlipped(GroupRates):
    def _expected_stats(self, name, X, local, params):
        s = super()._expected_stats(name, X, local, params)
        return RowStatistics(s.rows, (s.values[0], -s.values[1]), s.counts)


class _StatisticDoubled(GroupRates):
    def _expected_stats(self, name, X, local, params):
        s = super()._expected_stats(name, X, local, params)
        return RowStatistics(s.rows, (s.values[0], 2.0 * s.values[1]), s.counts)


class _BoundDoubled(GroupRates):
    def _local_bound(self, X, local, params):
        return 2.0 * super()._local_bound(X, local, params)


class _WeightsIgnored(GroupRates):
    def _expected_stats(self, name, X, local, params):
        return super()._expected_stats(name, PLUGIN["Rows"](X.X, None, None), local, params)


class _KeepsRows(GroupRates):
    def _on_params_updated(self):
        super()._on_params_updated()
        self.seen_ = getattr(self, "seen_", 0) + 1
        self.rows_ = self._svi_rows

    def _prepare_data(self, X, y, sample_weight, reset, **kw):
        rows = super()._prepare_data(X, y, sample_weight, reset, **kw)
        if reset:
            self._svi_rows = np.array(rows.X)
        return rows


@pytest.mark.parametrize(
    "model, says",
    [
        (_SignFlipped, r"factor 'rates'.*_expected_stats.*not a valid distribution"),
        (_StatisticDoubled, r"factor 'rates'.*derivative.*_expected_stats"),
        (_BoundDoubled, r"factor 'rates'.*derivative.*_local_bound"),
        (_WeightsIgnored, r"weighted rows.*_expected_stats"),
        (_KeepsRows, r"pickle grows in .*rows_"),
    ],
    ids=["sign", "statistic", "bound", "weights", "pickle"],
)
def test_a_broken_plugin_is_named(model, says):
    with pytest.raises(ContractError, match=says):
        check_model(model(random_state=0), _group_counts())


@pytest.mark.filterwarnings("ignore:.*did not converge")
def test_a_sign_error_is_absorbed_by_step_safety_without_check_model():
    # The failure check_model exists for: the fit runs, step safety rejects
    # its steps and warns as of a tuning problem.
    with pytest.warns(Warning, match="rejected"):
        est = _SignFlipped(learning_method="online", batch_size=50, max_iter=3).fit(_group_counts())
    assert est.n_rejected_steps_ > 0


# ------------------------------------------------------- every estimator
def _mixture_builder(n):
    alpha = Dirichlet(1e-3 * np.ones(2))
    z = Categorical(alpha, plates=(n,))
    mu = Gaussian(np.zeros(2), 1e-3 * np.identity(2), plates=(2,))
    lam = Wishart(2, 1e-2 * np.identity(2), plates=(2,))
    return Mixture(z, Gaussian, mu, lam)


def _normal_builder(n):
    mu = GaussianARD(0, 1e-3, shape=(3,))
    tau = Gamma(1e-3, 1e-3, plates=(3,))
    return GaussianARD(mu, tau, plates=(n,), shape=(3,))


def _regression_builder(X_rows):
    w = GaussianARD(0, 1e-6, shape=(X_rows.shape[1],), name="w")
    tau = Gamma(1e-3, 1e-3, name="tau")
    return GaussianARD(SumMultiply("d,d->", X_rows, w), tau, name="y")


def _logistic_builder(X_rows):
    w = GaussianARD(0, 1.0, shape=(X_rows.shape[1],), name="w")
    return Bernoulli(Logistic(SumMultiply("d,d->", X_rows, w)), name="y")


def _random_effect_builder(X_rows):
    w = GaussianARD(0, 1.0, shape=(X_rows.shape[1],), name="w")
    tau = Gamma(1.0, 1.0, name="tau")
    e = GaussianARD(0.0, tau, plates=(X_rows.shape[0],), name="e")
    return Poisson(Exp(Add(SumMultiply("d,d->", X_rows, w), e)), name="y")


def _cases():
    rng = np.random.RandomState(0)
    n = 300
    Xg = rng.normal(2.0, 1.5, size=(n, 3))
    counts = sp.csr_matrix(rng.poisson(0.4, size=(n, 25)).astype(float))
    Xl = rng.normal(size=(n, 4))
    linear = Xl @ [1.0, -1.0, 0.5, 0.0]
    yb = (linear + rng.normal(size=n) > 0).astype(int)
    ym = rng.randint(3, size=n)
    yp = rng.poisson(np.exp(0.3 * Xl[:, 0]))
    yl = linear + rng.normal(size=n)
    Xr = np.column_stack([rng.randint(30, size=n), rng.randint(20, size=n)])
    yr = 3 + rng.normal(size=n)
    Xm = np.vstack([rng.normal(size=(n // 2, 2)), rng.normal(size=(n // 2, 2)) + 5])
    # LDA's E-step to tight convergence: a weighted document's local step
    # must then equal its repeated copies' (docs of check 4).
    tight = dict(mean_change_tol=1e-10, max_doc_update_iter=5000)
    return [
        ("gaussian_gamma", GaussianGammaVB(random_state=0), Xg, None),
        (
            "lda",
            SVILatentDirichletAllocation(n_components=3, random_state=0, **tight),
            counts,
            None,
        ),
        ("ctm", SVICorrelatedTopicModel(n_components=3, random_state=0), counts, None),
        ("mf", SVIMatrixFactorization(n_components=2, random_state=0), Xr, yr),
        ("logistic", SVILogisticRegression(random_state=0), Xl, yb),
        ("multinomial", SVILogisticRegression(random_state=0), Xl, ym),
        ("poisson", SVIPoissonRegression(random_state=0), Xl, yp),
        ("overdispersed", SVIOverdispersedPoissonRegression(random_state=0), Xl, yp),
        ("linear", SVILinearRegression(random_state=0), Xl, yl),
        ("mixture", SVIBayesianGaussianMixture(n_components=2, random_state=0), Xm, None),
        ("gp_regressor", SVISparseGPRegressor(random_state=0), Xl[:100, :2], yl[:100]),
        ("gp_classifier", SVISparseGPClassifier(random_state=0), Xl[:100, :2], yb[:100]),
        ("network_mixture", SVIBayesianNetwork(model=_mixture_builder, random_state=0), Xm, None),
        ("network_normal", SVIBayesianNetwork(model=_normal_builder, random_state=0), Xg, None),
        (
            "network_inputs",
            SVIBayesianNetwork(model=_regression_builder, random_state=0),
            Xl,
            yl,
        ),
        ("network_logistic", SVIBayesianNetwork(model=_logistic_builder), Xl, yb),
        (
            "network_random_effect",
            SVIBayesianNetwork(model=_random_effect_builder, random_state=0),
            Xl,
            yp,
        ),
    ]


def _marks(name):
    if name.startswith("gp_"):
        return [pytest.mark.slow]  # the start's collapsed hyperparameter fit, several times
    return []


@pytest.mark.parametrize(
    "name, est, X, y",
    [pytest.param(*case, marks=_marks(case[0])) for case in _cases()],
    ids=[c[0] for c in _cases()],
)
def test_every_estimator_keeps_the_contract(name, est, X, y):
    check_model(est, X, y)
