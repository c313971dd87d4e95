"""Step-size schedules: formulas, validation, and grid search."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from skvi import GaussianGammaVB
from skvi.schedules import (
    AdaptiveRate,
    Constant,
    RobbinsMonro,
    WarmupRobbinsMonro,
    make_schedule,
)


def test_robbins_monro_matches_scikit_learn_lda_weights():
    # scikit-learn's LDA uses weight = (learning_offset + n_batch_iter_) **
    # -learning_decay with n_batch_iter_ = 1, 2, ... ; skvi's t is the same.
    offset, decay = 10.0, 0.7
    rm = RobbinsMonro(offset=offset, decay=decay)
    for t in range(1, 50):
        assert rm(t) == pytest.approx(np.power(offset + t, -decay), rel=1e-15)
    assert RobbinsMonro(offset=0.0, decay=0.6, scale=0.5)(4) == pytest.approx(0.5 * 4**-0.6)


def test_warmup_then_decay():
    s = WarmupRobbinsMonro(n_warmup=10, offset=1.0, decay=0.6)
    assert [s(t) for t in range(1, 11)] == [1.0] * 10
    assert s(11) == pytest.approx(2.0**-0.6)
    assert s(20) == pytest.approx(11.0**-0.6)


def test_adaptive_rate_follows_ranganath_recursion():
    rng = np.random.RandomState(0)
    grads = [rng.normal(size=3) + 0.5 for _ in range(6)]
    s = AdaptiveRate(initial=0.3, memory=4.0)
    assert s(1) == 0.3
    # Reference: Ranganath et al. (2013), eqs. for g_bar, h_bar, rho, tau.
    # The first gradient seeds the averages; rho stays at `initial`.
    tau, g_bar, h_bar = 4.0 * (1 - 0.3) + 1, grads[0].copy(), grads[0] @ grads[0]
    s.observe(float(grads[0] @ grads[0]), [grads[0]])
    assert s(2) == 0.3
    for t, g in enumerate(grads[1:], start=3):
        g_bar = (1 - 1 / tau) * g_bar + g / tau
        h_bar = (1 - 1 / tau) * h_bar + (g @ g) / tau
        rho = min(1.0, g_bar @ g_bar / h_bar)
        tau = tau * (1 - rho) + 1
        s.observe(float(g @ g), [g])
        assert s(t) == pytest.approx(rho, rel=1e-12)


def test_adaptive_rate_shrinks_on_noise():
    rng = np.random.RandomState(1)
    s = AdaptiveRate()
    for _ in range(200):
        g = rng.normal(size=50)  # zero-mean: pure noise
        s.observe(float(g @ g), [g])
    # |E g|^2 / E|g|^2 -> 0 for pure noise; the averages cover ~1/rho steps.
    assert s(201) < 0.1


@pytest.mark.parametrize(
    "schedule",
    [
        RobbinsMonro(decay=-0.1),
        RobbinsMonro(decay=1.5),
        RobbinsMonro(offset=-1.0),
        RobbinsMonro(scale=0.0),
        Constant(0.0),
        Constant(1.5),
        WarmupRobbinsMonro(n_warmup=-1),
        WarmupRobbinsMonro(n_warmup=2.5),
        AdaptiveRate(initial=2.0),
        AdaptiveRate(memory=0.5),
    ],
)
def test_invalid_schedules_raise(schedule):
    with pytest.raises(ValueError):
        schedule.validate()
    with pytest.raises(ValueError):
        GaussianGammaVB(learning_method="online", learning_rate=schedule).fit(
            np.ones((4, 1)) + np.arange(4)[:, None]
        )


def test_make_schedule_clones_and_never_mutates():
    user = AdaptiveRate()
    X = np.random.RandomState(0).normal(size=(200, 1))
    est = GaussianGammaVB(learning_method="online", learning_rate=user, batch_size=20, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X)
    assert not hasattr(user, "_state")
    assert hasattr(est._svi.schedule, "_state")
    assert isinstance(make_schedule(0.25, 10.0, 0.7), Constant)
    assert make_schedule(0.25, 10.0, 0.7)(3) == 0.25
    with pytest.raises(ValueError, match="learning_rate"):
        make_schedule("fast", 10.0, 0.7)


def test_schedules_clone_and_set_params():
    s = WarmupRobbinsMonro(n_warmup=3)
    c = clone(s).set_params(decay=0.9)
    assert c.get_params() == {"n_warmup": 3, "offset": 1.0, "decay": 0.9}
    assert s.decay == 0.7


def _grid_data():
    rng = np.random.RandomState(0)
    return rng.normal([1.0, -2.0], [1.0, 0.5], size=(300, 2))


def test_grid_search_over_learning_decay():
    X = _grid_data()
    est = GaussianGammaVB(
        learning_method="online", batch_size=30, max_iter=3, tol=0.0, random_state=0
    )
    cv = KFold(3, shuffle=True, random_state=0)
    grid = GridSearchCV(est, {"learning_decay": [0.6, 0.8, 1.0]}, cv=cv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        grid.fit(X)
        # The reference: scikit-learn's own cross_val_score on each setting.
        scores = [
            cross_val_score(clone(est).set_params(learning_decay=d), X, cv=cv).mean()
            for d in (0.6, 0.8, 1.0)
        ]
    np.testing.assert_allclose(grid.cv_results_["mean_test_score"], scores, rtol=1e-12)
    assert grid.best_params_["learning_decay"] == [0.6, 0.8, 1.0][int(np.argmax(scores))]


def test_grid_search_over_schedule_objects():
    X = _grid_data()
    est = GaussianGammaVB(
        learning_method="online", batch_size=30, max_iter=3, tol=0.0, random_state=0
    )
    schedules = [
        RobbinsMonro(decay=0.9),
        Constant(0.05),
        WarmupRobbinsMonro(n_warmup=3),
        AdaptiveRate(),
    ]
    cv = KFold(3, shuffle=True, random_state=0)
    grid = GridSearchCV(est, {"learning_rate": schedules}, cv=cv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        grid.fit(X)
        scores = [
            cross_val_score(clone(est).set_params(learning_rate=s), X, cv=cv).mean()
            for s in schedules
        ]
    np.testing.assert_allclose(grid.cv_results_["mean_test_score"], scores, rtol=1e-12)
    best = schedules[int(np.argmax(scores))]
    assert type(grid.best_estimator_.learning_rate) is type(best)
    assert grid.best_estimator_.learning_rate.get_params() == best.get_params()


def _decay_data():
    return np.random.RandomState(1).normal([1.0, -2.0], [1.0, 0.5], size=(120, 2))


@pytest.mark.parametrize("decay", [0.5, 0.3, 0.0])
def test_learning_decay_at_most_one_half_warns_at_the_callers_line(decay):
    X = _decay_data()
    est = GaussianGammaVB(
        learning_method="online",
        batch_size=30,
        max_iter=2,
        tol=0.0,
        learning_offset=4.0,
        learning_decay=decay,
        random_state=0,
    )
    with pytest.warns(ConvergenceWarning, match=r"learning_decay=.* is outside \(0\.5, 1\]") as rec:
        est.fit(X)
    assert len(rec) == 1 and rec[0].filename == __file__
    assert "Set learning_decay in (0.5, 1]" in str(rec[0].message)
    # The fit still takes the steps asked for: (t + tau) ** -kappa, t = 1..8.
    t = np.arange(1, 9)
    np.testing.assert_allclose(est.step_trace_["rho"], (t + 4.0) ** -decay, rtol=1e-15)
    # partial_fit uses the schedule whatever learning_method says.
    with pytest.warns(ConvergenceWarning, match="learning_decay"):
        GaussianGammaVB(learning_decay=decay, total_samples=120).partial_fit(X[:30])


@pytest.mark.parametrize(
    "params",
    [
        {"learning_decay": 0.7},
        {"learning_decay": 1.0},
        {"learning_decay": 0.51},
        # A schedule given explicitly is the user's choice.
        {"learning_decay": 0.3, "learning_rate": 0.2},
        {"learning_decay": 0.3, "learning_rate": RobbinsMonro(decay=0.5)},
        {"learning_decay": 0.3, "learning_rate": Constant(0.1)},
    ],
)
def test_learning_decay_in_range_or_unused_does_not_warn(params):
    X = _decay_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GaussianGammaVB(
            learning_method="online", batch_size=30, max_iter=2, tol=0.0, random_state=0, **params
        ).fit(X)
        GaussianGammaVB(total_samples=120, **params).partial_fit(X[:30])


def test_learning_decay_unused_by_batch_steps_does_not_warn():
    X = _decay_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Batch coordinate ascent takes rho = 1, and an online fit whose rows
        # fit in one minibatch takes batch steps.
        batch = GaussianGammaVB(learning_decay=0.2, tol=0.0, max_iter=3).fit(X)
        GaussianGammaVB(
            learning_method="online", batch_size=500, learning_decay=0.2, tol=0.0, max_iter=3
        ).fit(X)
    assert np.all(batch.step_trace_["rho"] == 1.0)


def test_learning_decay_above_one_is_rejected():
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=r"learning_decay.*\[0\.0, 1\.0\]"):
        GaussianGammaVB(learning_method="online", batch_size=30, learning_decay=1.2).fit(
            _decay_data()
        )


def test_learning_decay_warning_covers_every_estimator_once():
    from sklearn.feature_extraction.text import CountVectorizer

    from skvi import SVIBayesianGaussianMixture, SVILatentDirichletAllocation
    from skvi.datasets import load_topics_sample

    counts = CountVectorizer(min_df=3).fit_transform(load_topics_sample().data[:60])
    X = _decay_data()
    fits = [
        (
            SVILatentDirichletAllocation(
                n_components=3,
                learning_method="online",
                batch_size=20,
                max_iter=1,
                learning_decay=0.5,
                random_state=0,
            ),
            counts,
        ),
        (
            SVIBayesianGaussianMixture(
                n_components=2,
                learning_method="online",
                batch_size=30,
                max_iter=2,
                tol=0.0,
                learning_decay=0.5,
                random_state=0,
            ),
            X,
        ),
    ]
    for est, data in fits:
        with pytest.warns(ConvergenceWarning, match="learning_decay=0.5") as rec:
            est.fit(data)
        assert sum("learning_decay" in str(w.message) for w in rec) == 1
    # LDA's stream of unknown length takes streaming Bayes' steps,
    # |S| / (n0 + n_seen), not the schedule: no warning there.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SVILatentDirichletAllocation(
            n_components=3, total_samples="auto", learning_decay=0.5, random_state=0
        ).partial_fit(counts)
    with pytest.warns(ConvergenceWarning, match="learning_decay=0.5"):
        SVILatentDirichletAllocation(
            n_components=3, total_samples=1000, learning_decay=0.5, random_state=0
        ).partial_fit(counts)
