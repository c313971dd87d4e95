"""dask-ml's wrappers and incremental searches drive skvi estimators.

dask-ml is not an extra of skvi; ``.ci/dask-ml`` runs this file twice: with
the newest dask and distributed that work with the newest dask-ml
(``DASK_ML_WORKS_UP_TO`` below), where everything must pass, and with the
newest releases of all three, where the searches must fail with upstream's
known error (dask-ml #1016, "Attempting to use an asynchronous Client in a
synchronous context") until upstream fixes it: the strict expected failure
then turns into a failure, and the pin and ``docs/scaling.md`` move up.
"""

import numpy as np
import pytest

dask_ml = pytest.importorskip("dask_ml")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from dask_ml.model_selection import HyperbandSearchCV, IncrementalSearchCV  # noqa: E402
from dask_ml.wrappers import Incremental  # noqa: E402
from packaging.version import Version  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from skvi import GaussianGammaVB, SVILogisticRegression  # noqa: E402

#: The newest dask and distributed with which dask-ml's searches run.
DASK_ML_WORKS_UP_TO = Version("2025.2.0")
SEARCHES_BROKEN = Version(distributed.__version__) > DASK_ML_WORKS_UP_TO
broken_upstream = pytest.mark.xfail(
    SEARCHES_BROKEN,
    raises=RuntimeError,
    strict=True,
    reason="dask-ml #1016: its searches fail on distributed > 2025.2.0",
)


def _data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(3000, 4))
    y = (X @ [1.0, -1.0, 0.5, 0.0] + rng.logistic(size=3000) > 0).astype(int)
    return X, y


def test_incremental_equals_partial_fit_on_the_blocks_in_order(client):
    # Incremental calls partial_fit once per block, in order.
    X, y = _data()
    kw = dict(random_state=0, total_samples=3000, batch_size=500)
    ref = SVILogisticRegression(**kw)
    for start in range(0, 3000, 1000):
        ref.partial_fit(X[start : start + 1000], y[start : start + 1000], classes=[0, 1])
    inc = Incremental(SVILogisticRegression(**kw), shuffle_blocks=False).fit(
        da.from_array(X, chunks=(1000, 4)), da.from_array(y, chunks=1000), classes=[0, 1]
    )
    np.testing.assert_allclose(inc.estimator_.coef_, ref.coef_, rtol=1e-12)
    proba = inc.predict_proba(da.from_array(X, chunks=(1000, 4)))
    np.testing.assert_allclose(np.asarray(proba), ref.predict_proba(X), rtol=1e-12)


def test_incremental_takes_an_unsupervised_estimator_without_y(client):
    X, _ = _data()
    ref = GaussianGammaVB(total_samples=3000)
    for start in range(0, 3000, 1000):
        ref.partial_fit(X[start : start + 1000])
    inc = Incremental(GaussianGammaVB(total_samples=3000), shuffle_blocks=False).fit(
        da.from_array(X, chunks=(1000, 4))
    )
    np.testing.assert_allclose(inc.estimator_.mean_, ref.mean_, rtol=1e-12)


@broken_upstream
@pytest.mark.parametrize("search", [IncrementalSearchCV, HyperbandSearchCV])
# dask-ml's own notices: its default decay_rate's deprecation, and a search
# of a two-point grid asked for more draws than it has.
@pytest.mark.filterwarnings("ignore:decay_rate has been deprecated:FutureWarning")
@pytest.mark.filterwarnings("ignore:The total space of parameters:UserWarning")
def test_incremental_searches_pick_the_sensible_prior(client, search):
    # A prior variance of 1e-8 pins the weights at zero: that model predicts
    # the majority class (about half right here); the other reaches
    # scikit-learn's logistic regression's accuracy.
    X, y = _data()
    est = SVILogisticRegression(random_state=0, total_samples=3000)
    fitted = search(est, {"prior_variance": [1e-8, 1.0]}, max_iter=3, random_state=0).fit(
        da.from_array(X, chunks=(500, 4)), da.from_array(y, chunks=500), classes=[0, 1]
    )
    assert fitted.best_params_ == {"prior_variance": 1.0}
    reference = LogisticRegression().fit(X, y).score(X, y)
    assert fitted.best_score_ > reference - 0.03
    assert min(fitted.cv_results_["test_score"]) < max(np.mean(y), 1 - np.mean(y)) + 0.03
