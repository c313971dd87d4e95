"""The shared engine: step safety, update bookkeeping, convergence."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import validate_data

from skvi import GaussianGammaVB
from skvi.engine import ENGINE_PARAMETER_CONSTRAINTS, MAX_BACKOFF, ModelSettings, SVIEstimator
from skvi.expfam import Gamma
from skvi.schedules import Constant


class OneGamma(SVIEstimator):
    """A single Gamma factor whose natural-gradient target the test sets.

    Prior Gamma(1, 1): natural (-1, 0).  A row (u, v) of X contributes
    statistics (u, v), so the target is (-1 + N/|S| sum u, N/|S| sum v).
    """

    _parameter_constraints = dict(ENGINE_PARAMETER_CONSTRAINTS)
    _settings = ModelSettings({"g": Gamma})

    def __init__(
        self,
        learning_method="online",
        batch_size=1,
        max_iter=1,
        tol=0.0,
        learning_offset=10.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        update_order="sequential",
        step_safety=True,
        random_state=None,
        verbose=0,
    ):
        self.learning_method = learning_method
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.learning_rate = learning_rate
        self.total_samples = total_samples
        self.update_order = update_order
        self.step_safety = step_safety
        self.random_state = random_state
        self.verbose = verbose

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        return validate_data(self, X, reset=reset, ensure_all_finite=False)

    def _initialize_globals(self, X, random_state, summary):
        return self._prior_natural()

    def _prior_natural(self):
        return {"g": (np.array([-1.0]), np.array([0.0]))}

    def _local_step(self, X, params):
        return None

    def _expected_stats(self, name, X, local, params):
        return X[:, :1].sum(0), X[:, 1:].sum(0)

    def _local_bound(self, X, local, params):
        return 0.0

    def _global_bound(self, params):
        return 0.0


def test_invalid_step_is_rejected_and_rho_halved():
    # Target natural (-1, -5) is shape -4: invalid.  From (-1, 0) a blend
    # with rho is valid iff -5 rho > -1, i.e. rho < 0.2: rho = 1, 1/2, 1/4
    # are rejected and 1/8 is taken.
    est = OneGamma(learning_rate=Constant(1.0), total_samples=1)
    with pytest.warns(ConvergenceWarning, match="rejected.*step size is now scaled by 0.125"):
        est.partial_fit(np.array([[0.0, -5.0]]))
    assert est.n_rejected_steps_ == 3
    np.testing.assert_allclose(est.natural_params_["g"][1], [-5.0 / 8])
    # Later steps keep the reduced size: rho = 1/8 gives -1.171875 (invalid),
    # 1/16 gives 15/16 * -5/8 - 5/16 (valid).  The warning is given once.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.partial_fit(np.array([[0.0, -5.0]]))
    assert est.n_rejected_steps_ == 4
    np.testing.assert_allclose(est.natural_params_["g"][1], [15 / 16 * -5 / 8 - 5 / 16])
    assert est.n_batch_iter_ == 2
    assert np.all(Gamma.valid_natural(*est.natural_params_["g"]))


def test_hopeless_step_is_skipped_and_step_size_kept():
    est = OneGamma(learning_rate=Constant(0.5))
    est.partial_fit(np.array([[0.0, 1.0]]))  # valid: shape-1 -> 0.5
    before = est.natural_params_["g"]
    with pytest.warns(ConvergenceWarning, match="step size is back to its schedule"):
        est.partial_fit(np.array([[np.nan, 1.0]]))
    assert est.n_rejected_steps_ == MAX_BACKOFF + 1
    np.testing.assert_array_equal(est.natural_params_["g"][0], before[0])
    assert est._svi.safety.backoff == 1.0
    est.partial_fit(np.array([[0.0, 1.0]]))
    # total_samples='auto': N = 3 rows seen, |S| = 1, so the target is 3;
    # the data part of the current value (0.5 after one row) grows with the
    # count, 1 -> 3 rows (the skipped row counted), before the blend.
    np.testing.assert_allclose(est.natural_params_["g"][1], [0.5 * (3 * 0.5) + 0.5 * 3.0])


def test_step_safety_off_accepts_invalid_step():
    est = OneGamma(learning_rate=Constant(1.0), step_safety=False)
    est.partial_fit(np.array([[0.0, -5.0]]))
    assert est.n_rejected_steps_ == 0
    assert not np.all(Gamma.valid_natural(*est.natural_params_["g"]))


def test_total_samples_fixed_scales_statistics():
    est = OneGamma(learning_rate=Constant(1.0), total_samples=10, batch_size=2)
    est.partial_fit(np.array([[-0.5, 1.0], [-0.5, 2.0]]))
    # N / |S| = 10 / 2; target = prior + 5 * sums.
    np.testing.assert_allclose(est.natural_params_["g"][0], [-1.0 - 5 * 1.0])
    np.testing.assert_allclose(est.natural_params_["g"][1], [5 * 3.0])
    assert est.n_samples_seen_ == 2


class StreamingBayesGamma(OneGamma):
    """OneGamma whose 'auto' streams take streaming variational Bayes' steps."""

    _settings = ModelSettings({"g": Gamma}, stream={"steps": "bayes"})
    initial = (0.0, 0.0)  # what the initial globals add to the prior

    def _initialize_globals(self, X, random_state, summary):
        return {"g": tuple(p + i for p, i in zip(self._prior_natural()["g"], self.initial))}


@pytest.mark.parametrize("initial", [(0.0, 0.0), (-3.0, 4.0)])
def test_streaming_bayes_adds_each_minibatch_to_the_posterior(initial):
    # Streaming variational Bayes (Broderick et al.): the posterior after a
    # stream is prior + every row's statistics, each minibatch weighing the
    # same, plus what remains of an initial part that is not data: it
    # counts as n0 = |S_1| (1 / rho_1 - 1) rows and fades as n0 / (n0 + n).
    rng = np.random.RandomState(0)
    X = np.column_stack([-rng.uniform(0, 1, 70), rng.uniform(0, 1, 70)])
    est = StreamingBayesGamma(batch_size=4, learning_offset=3.0, learning_decay=0.8)
    est.initial = initial
    for chunk in np.array_split(X, 5):  # chunks of 14: steps of 4, 4, 3, 3 rows
        est.partial_fit(chunk)
    n0 = 4 * (1.0 / (3.0 + 1.0) ** -0.8 - 1.0) if any(initial) else 0.0
    remains = n0 / (n0 + 70)
    expected = (-1.0 + X[:, 0].sum() + remains * initial[0], X[:, 1].sum() + remains * initial[1])
    np.testing.assert_allclose(est.natural_params_["g"][0], [expected[0]], rtol=1e-12)
    np.testing.assert_allclose(est.natural_params_["g"][1], [expected[1]], rtol=1e-12)
    assert est.n_batch_iter_ == 20


def test_default_schedule_is_robbins_monro_from_offset_and_decay():
    est = OneGamma(learning_offset=3.0, learning_decay=0.8)
    est.partial_fit(np.array([[0.0, 2.0]]))
    rho1 = (1 + 3.0) ** -0.8
    np.testing.assert_allclose(est.natural_params_["g"][1], [rho1 * 2.0])
    est.partial_fit(np.array([[0.0, 2.0]]))
    rho2 = (2 + 3.0) ** -0.8
    # second target: N = 2 rows seen, |S| = 1 -> 4.0; the data part of the
    # current value (prior 0) doubles with the count before the blend.
    np.testing.assert_allclose(
        est.natural_params_["g"][1], [(1 - rho2) * 2 * rho1 * 2.0 + rho2 * 4.0]
    )


def test_fit_whose_steps_are_all_rejected_does_not_report_convergence():
    # An unchanged ELBO after a pass in which every step was rejected is
    # not convergence: the parameters never moved.
    class Refusing(GaussianGammaVB):
        def _update_factor(self, name, current, stats, ctx):
            return super()._update_factor(name, current, stats, ctx)[0], False

    X = np.random.RandomState(0).normal(size=(200, 2))
    est = Refusing(learning_method="online", batch_size=50, max_iter=4, tol=1e-3)
    with pytest.warns(ConvergenceWarning):
        est.fit(X)
    assert not est.converged_
    assert est.n_iter_ == 4
    assert est.n_rejected_steps_ > 0
    accepted = GaussianGammaVB(learning_method="online", batch_size=50, max_iter=50, tol=1e-3)
    assert accepted.fit(X).converged_


class RefusesFirstSteps(GaussianGammaVB):
    """Rejects the first two step attempts of each fit: early overshoots, by construction."""

    def _update_factor(self, name, current, stats, ctx):
        new, valid = super()._update_factor(name, current, stats, ctx)
        self.attempts_ = getattr(self, "attempts_", 0) + 1
        return new, valid and self.attempts_ > 2


def test_early_rejections_of_a_fit_that_converged_with_its_schedule_back_raise_no_warning():
    # Two rejections halve the step size twice; RECOVERY_STEPS accepted
    # steps double it back, twice, well before this online fit converges.
    # Nothing is left for the user to change: no warning, the count kept.
    X = np.random.RandomState(0).normal(size=(400, 2))
    est = RefusesFirstSteps(
        learning_method="online", batch_size=10, max_iter=50, tol=1e-3, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(X)
    assert est.converged_ and est._svi.safety.backoff == 1.0
    assert est.n_rejected_steps_ == 2 and est.step_trace_["rejected"].sum() == 2
    # The same rejections in a fit that stops before converging are reported.
    short = RefusesFirstSteps(
        learning_method="online", batch_size=10, max_iter=1, tol=1e-3, random_state=0
    )
    with pytest.warns(ConvergenceWarning, match="2 step.*rejected by step safety"):
        short.fit(X)
    assert not short.converged_


def test_even_batches_cover_every_row_once_in_near_equal_sizes():
    from skvi.engine import even_batches

    for n, size in [(0, 3), (1, 1), (5, 10), (10, 4), (23, 4), (32561, 2000), (4000, 2000)]:
        batches = even_batches(n, size)
        rows = np.concatenate([np.arange(n)[b] for b in batches]) if batches else np.array([])
        np.testing.assert_array_equal(rows, np.arange(n))  # every row once, in order
        assert len(batches) == -(-n // size)  # as many as gen_batches makes
        sizes = [b.stop - b.start for b in batches]
        if sizes:
            assert max(sizes) <= size and max(sizes) - min(sizes) <= 1


def test_sparse_online_batches_are_the_shuffled_minibatches(monkeypatch):
    # Sparse X is gathered a block of minibatches at a time; the minibatches
    # must be exactly X[order[batch]] of the plain (dense) scheme.
    import scipy.sparse as sp

    from skvi import SVILatentDirichletAllocation
    from skvi.engine import executor as engine

    monkeypatch.setattr(engine, "SPARSE_GATHER_ROWS", 10)  # blocks of 2 minibatches
    X = sp.random(22, 6, density=0.5, format="csr", random_state=0)
    model = SVILatentDirichletAllocation(batch_size=4)
    got = list(engine.SerialExecutor().minibatches(model, X, np.random.RandomState(3), 4))
    order = np.random.RandomState(3).permutation(22)
    # 22 rows in ceil(22 / 4) = 6 minibatches: four of 4 and two of 3, not
    # five of 4 and a last one of 2.
    bounds = [0, 4, 8, 12, 16, 19, 22]
    expected = [X[order[a:b]] for a, b in zip(bounds[:-1], bounds[1:])]
    assert len(got) == len(expected) == 6
    for (Xb, scale), ref in zip(got, expected):
        np.testing.assert_array_equal(Xb.toarray(), ref.toarray())
        assert scale == 22 / ref.shape[0]
    dense = list(
        engine.SerialExecutor().minibatches(model, X.toarray(), np.random.RandomState(3), 4)
    )
    for (Xb, _), (Db, _) in zip(got, dense):
        np.testing.assert_array_equal(Xb.toarray(), Db)


# ------------------------------------------------------------ reliability
def test_step_size_recovers_after_a_run_of_accepted_steps_without_oscillating():
    # Target shape -4 (invalid) from the prior: a blend rho is valid iff the
    # running second parameter stays above -1.  With the target (-1, -5) and
    # Constant(1.0): rho = 1/8 is the largest accepted size at first.
    from skvi.engine.safety import RECOVERY_STEPS

    est = OneGamma(learning_rate=Constant(1.0), total_samples=1, batch_size=1)
    with pytest.warns(ConvergenceWarning):
        est.partial_fit(np.array([[0.0, -5.0]]))
    assert est._svi.safety.backoff == 1 / 8
    # Valid targets from here on: after RECOVERY_STEPS accepted steps the
    # size doubles, and again after as many more, back to the schedule's.
    rows = np.tile([[-0.5, 3.0]], (3 * RECOVERY_STEPS, 1))
    est.partial_fit(rows)
    assert est._svi.safety.backoff == 1.0
    rejected = est.n_rejected_steps_
    assert rejected == 3


def test_recovery_that_fails_waits_longer_so_rejections_stay_rare():
    # Every step above rho = 1/8 is refused: each recovery to 1/4 is
    # rejected, and the wait before the next attempt doubles, so the
    # rejections grow like log(steps), not like steps: no oscillation.
    from skvi.engine.safety import RECOVERY_STEPS

    steps = 40 * RECOVERY_STEPS
    est = RefusesLargeSteps(learning_rate=Constant(1.0), total_samples=1, batch_size=1)
    with pytest.warns(ConvergenceWarning):
        est.partial_fit(np.zeros((steps, 2)))
    # 3 rejections to reach 1/8, then one per recovery; the k-th recovery
    # waits RECOVERY_STEPS * 2**k steps.
    expected = 3 + int(np.log2(steps / RECOVERY_STEPS + 1))
    assert est.n_rejected_steps_ <= expected
    assert est.n_batch_iter_ == steps and est._svi.safety.backoff == 1 / 8


class RefusesLargeSteps(OneGamma):
    """Rejects every step with rho above 1/8 (a model-specific overshoot test)."""

    def _update_factor(self, name, current, stats, ctx):
        new, valid = super()._update_factor(name, current, stats, ctx)
        return new, valid and ctx.rho <= 1 / 8


def test_without_step_safety_a_non_finite_step_is_skipped_never_kept():
    est = OneGamma(learning_rate=Constant(0.5), step_safety=False, batch_size=1)
    est.partial_fit(np.array([[0.0, 1.0]]))
    before = tuple(a.copy() for a in est.natural_params_["g"])
    est.partial_fit(np.array([[np.nan, 1.0]]))
    np.testing.assert_array_equal(est.natural_params_["g"][0], before[0])
    assert est.n_rejected_steps_ == 1
    # An invalid but finite step is still taken (Paquet's divergence).
    est.partial_fit(np.array([[0.0, -50.0]]))
    assert not np.all(Gamma.valid_natural(*est.natural_params_["g"]))


def test_poisson_glm_without_step_safety_never_returns_nan():
    from skvi import SVIPoissonRegression

    rng = np.random.RandomState(0)
    X = rng.normal(scale=3.0, size=(500, 5))
    y = rng.poisson(np.exp(np.clip(X @ [0.5, -0.4, 0.3, 0.0, 0.2], -5, 5)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SVIPoissonRegression(
            step_safety=False, learning_rate=1.0, batch_size=50, max_iter=5, random_state=0
        ).fit(X, y)
    for value in est.natural_params_.values():
        assert all(np.all(np.isfinite(a)) for a in value)
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.predict(X)))


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_fitted_estimators_keep_no_training_rows(method):
    import pickle

    from skvi import SVILogisticRegression

    rng = np.random.RandomState(0)
    X = rng.normal(size=(4000, 100))
    y = (X[:, 0] + rng.normal(size=4000) > 0).astype(int)
    est = SVILogisticRegression(expectation="quadrature", max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        getattr(est, method)(X, y)
    # The posterior of 101 weights (a few 101 x 101 matrices of 80 kB: the
    # natural parameters, the covariance, a stream's initial value) and the
    # engine's counters; the probe rows (2000 x 100 floats, 1.6 MB) are
    # dropped.
    probe_bytes = 2000 * X.shape[1] * X.itemsize
    assert len(pickle.dumps(est)) < 0.5 * probe_bytes
    assert est._svi.safety.probe is None and est._svi.safety.last_batch is None


def test_a_row_group_row_the_minibatch_misses_keeps_its_value_and_counter():
    # Paquet's Alg. 1 updates a node from its sampled children only: a row
    # with C_i = 0 takes no step and keeps its counter; one with N_i = 0 (no
    # data yet) follows its prior; the others scale by N_i / C_i and step by
    # rho(t_i + 1) (RobbinsMonro: (t + 1) ** -1 here).
    from skvi.engine import StepContext
    from skvi.engine.rows import RowGroup
    from skvi.schedules import RobbinsMonro

    group = RowGroup(3)
    group.totals = np.array([10.0, 4.0, 0.0])
    group.steps = np.array([3.0, 1.0, 0.0])
    ctx = StepContext(online=True, t=9, rho=0.5, backoff=1.0, scale=7.0, prior={})
    rows = np.arange(3)
    group.prepare(
        rows, np.array([2.0, 0.0, 0.0]), ctx, RobbinsMonro(offset=1.0, decay=1.0), scheduled=False
    )
    np.testing.assert_allclose(ctx.row_scale, [5.0, 0.0, 0.0])
    np.testing.assert_allclose(ctx.row_rho, [1 / 5, 0.0, 1 / 2])
    group.commit()
    np.testing.assert_array_equal(group.steps, [4.0, 1.0, 0.0])


def test_many_blocks_statistics_sum_at_once_to_the_pairwise_sum():
    # The executor adds its blocks' statistics in one merge; the reference is
    # adding them in turn (add_statistics), which gives the same numbers
    # bit for bit (the same additions in the same order per row).
    from skvi.engine import RowStatistics, Statistics, add_statistics
    from skvi.engine.statistics import sum_statistics

    rng = np.random.RandomState(0)
    parts = []
    for _ in range(7):
        rows = np.unique(rng.randint(50, size=30))
        parts.append(
            Statistics(
                len(rows),
                {
                    "rows": RowStatistics(
                        rows, (rng.rand(rows.size, 3), rng.rand(rows.size)), rng.rand(rows.size)
                    ),
                    "dense": (rng.rand(4), rng.rand(2, 2)),
                },
                hyper={"h": (rng.rand(3),)},
            )
        )
    ref = None
    for part in parts:
        ref = add_statistics(ref, part)
    got = sum_statistics(parts)
    assert got.n_samples == ref.n_samples
    np.testing.assert_array_equal(got.factors["rows"].rows, ref.factors["rows"].rows)
    for a, b in zip(
        got.factors["rows"].values + (got.factors["rows"].counts,),
        ref.factors["rows"].values + (ref.factors["rows"].counts,),
    ):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(got.factors["dense"] + got.hyper["h"], ref.factors["dense"] + ref.hyper["h"]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method, passes", [("batch", 10), ("online", 50)])
def test_max_iter_none_runs_the_learning_methods_default_passes(method, passes):
    # tol=0 runs every pass: max_iter=None caps them at 10 batch or 50 online
    # passes, and the parameter reads back as given.
    X = np.random.RandomState(0).normal(size=(200, 2))
    est = GaussianGammaVB(learning_method=method, batch_size=50, max_iter=None, tol=0).fit(X)
    assert est.n_iter_ == passes
    assert est.get_params()["max_iter"] is None


class ToldGaussianGamma(GaussianGammaVB):
    """GaussianGammaVB that records the FitContext its start and steps are told."""

    def _initialize_globals(self, X, random_state, summary, ctx=None):
        self.told_ = ctx
        return super()._initialize_globals(X, random_state, summary)

    def _update_hyperparameters(self, hyper, ctx):
        self.step_told_ = ctx.fit
        return False


@pytest.mark.parametrize(
    "params, n, partial, only_batch",
    [
        (dict(learning_method="batch"), 50, False, True),
        (dict(learning_method="online", batch_size=64), 50, False, True),  # one minibatch
        (dict(learning_method="online", batch_size=16), 50, False, False),
        (dict(learning_method="batch", batch_size=16), 50, True, False),  # partial_fit
    ],
)
def test_the_start_and_the_steps_are_told_the_engines_decisions(params, n, partial, only_batch):
    X = np.random.RandomState(0).normal(size=(n, 2))
    est = ToldGaussianGamma(max_iter=2, **params)
    est.partial_fit(X) if partial else est.fit(X)
    ctx = est.told_
    assert (ctx.partial, ctx.only_batch_steps, ctx.on_cluster, ctx.warm) == (
        partial,
        only_batch,
        False,
        None,
    )
    assert est.step_told_ is ctx
    # A pickle keeps the context without a warm start's globals.
    assert pickle.loads(pickle.dumps(est))._svi.context.warm is None


def test_a_warm_start_is_told_the_previous_globals():
    from skvi import SVIBayesianGaussianMixture

    class Told(SVIBayesianGaussianMixture):
        def _initialize_globals(self, X, random_state, summary, ctx=None):
            self.told_ = ctx
            return super()._initialize_globals(X, random_state, summary, ctx)

    X = np.random.RandomState(0).normal(size=(60, 2))
    est = Told(n_components=2, warm_start=True, max_iter=3, random_state=0).fit(X)
    assert est.told_.warm is None
    before = {k: tuple(np.array(a) for a in f) for k, f in est.natural_params_.items()}
    est.fit(X)
    for name, arrays in before.items():
        for a, b in zip(est.told_.warm[name], arrays):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(stream={"steps": "sometimes"}), r"stream\['steps'\] must be one of"),
        (dict(stream={"order": "even"}), "stream takes the keys"),
        (dict(tolerance={"bound": 1e-3}), "tolerance takes the keys"),
    ],
)
def test_model_settings_refuse_unknown_choices(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ModelSettings({"g": Gamma}, **kwargs)


def test_model_settings_fill_in_the_defaults_of_their_choices():
    s = ModelSettings({"g": Gamma}, stream={"start": "data"}, tolerance={"elbo": 1e-12})
    assert (s.stream_choice("start"), s.stream_choice("steps"), s.stream_choice("batches")) == (
        "data",
        "schedule",
        "even",
    )
    assert (s.elbo_tolerance, s.probe_growth) == (1e-12, 1.0)


@pytest.mark.parametrize("max_iter, tol", [(1, 1e-4), (3, 0.0), (40, 1e-4)])
def test_online_checks_that_cannot_stop_the_fit_are_left_out(monkeypatch, max_iter, tol):
    # 20,000 rows in minibatches of 100: checks every few minibatches.  A
    # one-pass fit (fewer checks left than a stop needs) and a tol=0 fit
    # make only each pass's last check; a long fit every one.  Leaving them
    # out changes no parameter, no pass's ELBO and no stop.
    import skvi.engine.convergence as convergence

    X = np.random.RandomState(0).normal(1.0, 2.0, size=(20_000, 1))
    calls = []
    check = convergence.Convergence.check

    def counted(self):
        calls.append(self.est.n_batch_iter_)
        return check(self)

    monkeypatch.setattr(convergence.Convergence, "check", counted)
    kw = dict(learning_method="online", batch_size=100, max_iter=max_iter, tol=tol)
    got = GaussianGammaVB(random_state=0, **kw).fit(X)
    made = list(calls)
    monkeypatch.setattr(convergence.Convergence, "can_stop", lambda self, batch: True)
    calls.clear()
    ref = GaussianGammaVB(random_state=0, **kw).fit(X)
    for name in ref.natural_params_:
        for a, b in zip(got.natural_params_[name], ref.natural_params_[name]):
            np.testing.assert_array_equal(a, b)
    assert got.lower_bounds_ == ref.lower_bounds_
    assert got.n_iter_ == ref.n_iter_ and got.converged_ == ref.converged_
    if max_iter == 40:
        assert made == calls and got.converged_
    else:
        assert len(made) == got.n_iter_ < len(calls)
