"""Watching a fit: monitor callbacks, verbose output and log, history_, step_trace_.

Every estimator runs through the engine, so each test of the mechanism runs
on every estimator where it can; the references are independent of the
monitoring code: ``lower_bounds_``, ``n_batch_iter_``, row counts, the
schedule's formula and ``n_rejected_steps_``.
"""

import inspect
import io
import logging
import pickle
import sys
import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from skvi import (
    GaussianGammaVB,
    SVIBayesianGaussianMixture,
    SVILatentDirichletAllocation,
    SVILinearRegression,
    SVILogisticRegression,
    SVIMatrixFactorization,
    SVIOverdispersedPoissonRegression,
    SVIPoissonRegression,
    SVISparseGPClassifier,
    SVISparseGPRegressor,
)
from skvi.engine import (
    FitRecord,
    monitor,
    monitoring,
)
from skvi.schedules import Constant
from test_engine import OneGamma  # the toy Gamma model whose targets a test sets

ONLINE = dict(learning_method="online", max_iter=4, tol=0.0)


def _cases():
    """(name, estimator, X, y, batch_size): every estimator, online, on small data."""
    rng = np.random.RandomState(0)
    Xg = rng.normal(2.0, 1.5, size=(200, 3))
    counts = sp.csr_matrix(rng.poisson(0.4, size=(120, 25)).astype(float))
    Xl = rng.normal(size=(200, 4))
    yl = Xl @ [1.0, -1.0, 0.5, 0.0] + rng.normal(size=200)
    yb = (yl > 0).astype(int)
    yp = rng.poisson(np.exp(0.3 * Xl[:, 0]))
    Xr = np.column_stack([rng.randint(30, size=300), rng.randint(20, size=300)])
    yr = 3 + rng.normal(size=300)
    quad = dict(expectation="quadrature", random_state=0)
    gp = dict(n_inducing=5, optimizer=None, batch_size=50, random_state=0, **ONLINE)
    return [
        ("gaussian_gamma", GaussianGammaVB(batch_size=50, **ONLINE), Xg, None),
        (
            "mixture",
            SVIBayesianGaussianMixture(n_components=2, batch_size=50, random_state=0, **ONLINE),
            Xg,
            None,
        ),
        (
            "lda",
            SVILatentDirichletAllocation(
                n_components=3,
                batch_size=30,
                evaluate_every=1,
                random_state=0,
                learning_method="online",
                max_iter=4,
            ),
            counts,
            None,
        ),
        ("linear", SVILinearRegression(batch_size=50, **ONLINE), Xl, yl),
        ("logistic", SVILogisticRegression(batch_size=50, **quad, **ONLINE), Xl, yb),
        ("poisson", SVIPoissonRegression(batch_size=50, **quad, **ONLINE), Xl, yp),
        (
            "overdispersed",
            SVIOverdispersedPoissonRegression(batch_size=50, random_state=0, **ONLINE),
            Xl,
            yp,
        ),
        (
            "mf",
            SVIMatrixFactorization(n_components=2, batch_size=50, random_state=0, **ONLINE),
            Xr,
            yr,
        ),
        ("sparse_gp_regressor", SVISparseGPRegressor(**gp), Xl, yl),
        ("sparse_gp_classifier", SVISparseGPClassifier(**gp), Xl, yb),
    ]


CASES = _cases()
IDS = [c[0] for c in CASES]


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X) if y is None else est.fit(X, y)


def _partial_fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.partial_fit(X) if y is None else est.partial_fit(X, y)


def _n_batches(n, batch_size):
    return -(-n // batch_size)


# ------------------------------------------------------------------ monitor
@pytest.mark.parametrize("name, est, X, y", CASES, ids=IDS)
def test_callback_sees_every_step_and_the_elbos_of_lower_bounds(name, est, X, y):
    records = []
    with monitor(records.append):
        _fit(est, X, y)
    steps = [r for r in records if r.event == "step"]
    passes = [r for r in records if r.event == "pass"]
    assert len(steps) == est.n_batch_iter_ == est.max_iter * _n_batches(X.shape[0], est.batch_size)
    assert [r.t for r in steps] == list(range(1, est.n_batch_iter_ + 1))
    assert all(r.estimator is est and r.elbo is None for r in steps)
    assert [r.pass_index for r in passes] == list(range(1, est.n_iter_ + 1))
    assert [r.elbo for r in passes] == est.lower_bounds_
    # Samples processed: every pass counts the rows again.
    n = X.shape[0]
    assert [r.samples_seen for r in passes] == [n * k for k in range(1, est.n_iter_ + 1)]
    assert steps[-1].samples_seen == n * est.n_iter_
    # partial_fit: a step record per minibatch with its minibatch ELBO.
    records.clear()
    before = len(est.lower_bounds_)
    with monitor(records.append):
        _partial_fit(est, X, y)
    steps = [r.elbo for r in records if r.event == "step"]
    assert steps == est.lower_bounds_[before:]
    (end,) = [r for r in records if r.event == "partial_fit"]
    assert end.elbo == est.lower_bound_ and end.t == est.n_batch_iter_


@pytest.mark.parametrize("name, est, X, y", CASES, ids=IDS)
def test_stopping_after_k_passes_ends_the_fit_cleanly(name, est, X, y):
    k = 2

    def stop_after_k(record):
        return not (record.event == "pass" and record.pass_index >= k)

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # no "did not converge"
        with monitor(stop_after_k):
            est.fit(X) if y is None else est.fit(X, y)
    assert est.n_iter_ == k
    assert not est.converged_
    assert est.n_batch_iter_ == k * _n_batches(X.shape[0], est.batch_size)
    assert len(est.lower_bounds_) == k and est.lower_bound_ == est.lower_bounds_[-1]
    assert len(est.history_) == k
    check_is_fitted(est)
    for factor in est.natural_params_.values():
        assert all(np.all(np.isfinite(a)) for a in factor)


def test_stop_inside_a_pass_and_by_stop_iteration():
    X = np.random.RandomState(0).normal(size=(200, 2))
    est = GaussianGammaVB(batch_size=50, **ONLINE)

    def third_step_of_second_pass(record):
        if record.event == "step" and record.pass_index == 2 and record.batch == 3:
            raise StopIteration

    with monitor(third_step_of_second_pass):
        est.fit(X)
    assert (est.n_iter_, est.n_batch_iter_, len(est.lower_bounds_)) == (2, 4 + 3, 1)
    assert not est.converged_
    # The interrupted pass has its row, without an ELBO.
    np.testing.assert_array_equal(est.history_["samples"], [200, 200 + 3 * 50])
    assert np.isnan(est.history_["elbo"][1])
    # partial_fit: the call's remaining minibatches are not taken.
    est = GaussianGammaVB(batch_size=50)
    with monitor(lambda r: r.t < 2):
        est.partial_fit(X)
    assert est.n_batch_iter_ == 2 and est.n_samples_seen_ == 100
    est.partial_fit(X)  # outside the block: the whole call
    assert est.n_batch_iter_ == 6


def test_monitors_nest_and_stay_on_their_thread():
    X = np.random.RandomState(0).normal(size=(100, 2))
    outer, inner, other = [], [], []
    with monitor(outer.append):
        with monitor(inner.append):
            GaussianGammaVB(batch_size=50, **ONLINE).fit(X)
        n_inner = len(outer)
        GaussianGammaVB(batch_size=50, **ONLINE).fit(X)
        # A fit on another thread does not see this thread's monitors.
        thread = threading.Thread(
            target=lambda: other.append(GaussianGammaVB(batch_size=50, **ONLINE).fit(X))
        )
        thread.start()
        thread.join()
    GaussianGammaVB(batch_size=50, **ONLINE).fit(X)  # no monitor any more
    assert len(inner) == n_inner == 4 * 2 + 4  # 8 steps and 4 passes
    assert len(outer) == 2 * n_inner
    assert other[0].n_batch_iter_ == 8
    with pytest.raises(TypeError):
        with monitor(None):
            pass


def test_apply_statistics_is_a_monitored_and_traced_step():
    X = np.random.RandomState(0).normal(size=(100, 2))
    est = GaussianGammaVB(batch_size=50).partial_fit(X[:50])
    records = []
    with monitor(records.append):
        est.apply_statistics(est.compute_statistics(X[50:]), total_samples=100)
    (record,) = records
    assert (record.event, record.t, record.samples_seen) == ("step", 2, 100.0)
    np.testing.assert_array_equal(est.step_trace_["t"], [1, 2])
    assert isinstance(record, FitRecord) and "GaussianGammaVB" in repr(record)


# ------------------------------------------------------------------ history
def test_history_times_where_each_pass_went():
    # The phases are parts of the pass: each non-negative, together at most
    # the pass's wall time (its differences of ``time``); the serial part
    # is at most the wall time too, and with one thread it is the time
    # outside the executor's maps (the local steps run inside them).
    X = np.random.RandomState(0).normal(size=(20_000, 3))
    est = GaussianGammaVB(max_iter=4, tol=0).fit(X)
    h = est.history_
    wall = np.diff(np.concatenate([[0.0], h["time"]]))
    phases = h["local_time"] + h["global_time"] + h["bound_time"] + h["safety_time"]
    for name in (
        "local_time",
        "global_time",
        "bound_time",
        "safety_time",
        "transfer_time",
        "serial_time",
    ):
        assert np.all(h[name] >= 0), name
    assert np.all(phases <= wall + 1e-9)
    assert np.all(h["serial_time"] <= wall + 1e-9)
    assert np.all(h["local_time"][:1] > 0)  # the first pass's local step (computed once)
    assert np.all(h["transfer_time"] == 0)  # in memory: nothing moves


def test_history_is_reset_by_fit_and_continued_by_partial_fit():
    X = np.random.RandomState(0).normal(size=(200, 2))
    est = GaussianGammaVB(batch_size=50, **ONLINE).fit(X)
    h = est.history_
    assert h.dtype.names == (
        "time",
        "samples",
        "steps",
        "elbo",
        "local_time",
        "global_time",
        "bound_time",
        "safety_time",
        "transfer_time",
        "serial_time",
    )
    np.testing.assert_array_equal(h["samples"], [200, 400, 600, 800])
    np.testing.assert_array_equal(h["steps"], [4, 8, 12, 16])
    np.testing.assert_array_equal(h["elbo"], est.lower_bounds_)
    assert np.all(np.diff(h["time"]) >= 0) and h["time"][0] > 0
    est.partial_fit(X[:30])
    est.partial_fit(X[30:100])
    h = est.history_
    np.testing.assert_array_equal(h["samples"], [200, 400, 600, 800, 830, 900])
    np.testing.assert_array_equal(h["steps"][4:], [17, 19])
    assert h["elbo"][-1] == est.lower_bound_ == est.lower_bounds_[-1]
    assert np.all(np.diff(h["time"]) >= 0)
    est.fit(X[:100])
    np.testing.assert_array_equal(est.history_["samples"], [100, 200, 300, 400])
    # A stream from scratch: the samples column is the running count.
    stream = GaussianGammaVB(batch_size=50)
    for chunk in np.array_split(X, 4):
        stream.partial_fit(chunk)
    np.testing.assert_array_equal(stream.history_["samples"], [50, 100, 150, 200])
    assert stream.history_["samples"][-1] == stream.n_samples_seen_


def test_history_and_trace_keep_no_training_rows():
    # The same number of steps on 100 times more rows: the fitted
    # estimator (history and trace included) does not grow.
    rng = np.random.RandomState(0)
    small = GaussianGammaVB(batch_size=100, **ONLINE).fit(rng.normal(size=(200, 2)))
    large = GaussianGammaVB(batch_size=10_000, **ONLINE).fit(rng.normal(size=(20_000, 2)))
    assert small.n_batch_iter_ == large.n_batch_iter_
    assert abs(len(pickle.dumps(large)) - len(pickle.dumps(small))) < 200
    unfitted = GaussianGammaVB()
    assert not hasattr(unfitted, "history_") and not hasattr(unfitted, "step_trace_")


def test_sample_weight_counts_in_the_samples_column():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(100, 2))
    w = rng.uniform(0.5, 2.0, size=100)
    est = GaussianGammaVB(batch_size=25, **ONLINE).fit(X, sample_weight=w)
    np.testing.assert_allclose(est.history_["samples"], w.sum() * np.arange(1, 5))


# --------------------------------------------------------------- step trace
def test_step_trace_follows_the_schedule():
    X = np.random.RandomState(0).normal(size=(300, 2))
    est = GaussianGammaVB(batch_size=20, learning_offset=5.0, learning_decay=0.6, **ONLINE).fit(X)
    trace = est.step_trace_
    t = np.arange(1, est.n_batch_iter_ + 1)
    np.testing.assert_array_equal(trace["t"], t)
    np.testing.assert_allclose(trace["rho"], (t + 5.0) ** -0.6, rtol=1e-15)
    assert trace["rejected"].sum() == 0 and trace["accepted"].all()
    # Batch steps have rho = 1.
    batch = GaussianGammaVB(max_iter=3, tol=0).fit(X)
    np.testing.assert_array_equal(batch.step_trace_["rho"], [1.0, 1.0, 1.0])


def test_step_trace_marks_rejected_and_skipped_steps():
    est = OneGamma(learning_rate=Constant(1.0), total_samples=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # rho = 1, 1/2, 1/4 make the Gamma invalid, 1/8 is taken (test_engine.py).
        est.partial_fit(np.array([[0.0, -5.0]]))
        est.partial_fit(np.array([[0.0, 1.0]]))
        est.partial_fit(np.array([[np.nan, 1.0]]))  # no step size helps: skipped
    trace = est.step_trace_
    np.testing.assert_array_equal(trace["t"], [1, 2, 3])
    np.testing.assert_array_equal(trace["rejected"], [3, 0, 31])
    np.testing.assert_array_equal(trace["accepted"], [True, True, False])
    assert trace["rho"][0] == 1 / 8
    assert trace["rejected"].sum() == est.n_rejected_steps_


def test_step_trace_is_thinned_to_its_size(monkeypatch):
    monkeypatch.setattr(monitoring, "TRACE_SIZE", 40)
    X = np.random.RandomState(0).normal(size=(1000, 2))
    est = GaussianGammaVB(batch_size=2, learning_method="online", max_iter=1, tol=0).fit(X)
    trace = est.step_trace_
    assert est.n_batch_iter_ == 500 and len(trace) <= 40
    np.testing.assert_array_equal(trace["t"][:10], np.arange(1, 11))  # the first quarter
    assert trace["t"][-1] == 500  # and the latest
    assert np.all(np.diff(trace["t"]) > 0)
    np.testing.assert_allclose(trace["rho"], (trace["t"] + 10.0) ** -0.7, rtol=1e-15)


def test_thinned_table_keeps_flagged_rows_while_they_fit(monkeypatch):
    monkeypatch.setattr(monitoring, "TRACE_SIZE", 40)
    table = monitoring._Table(monitoring.TRACE_DTYPE)
    flagged = {37, 151, 299}
    for t in range(1, 301):
        table.append((t, 1.0, t in flagged, t not in flagged), flagged=t in flagged)
    rows = table.array()
    assert len(rows) <= 40 and rows["t"][-1] == 300
    assert flagged <= set(rows["t"].tolist())


# ------------------------------------------------------------------ verbose
def test_verbose_1_draws_a_progress_line_per_pass_on_stderr(capsys):
    X = np.random.RandomState(0).normal(size=(200, 2))
    est = GaussianGammaVB(batch_size=50, verbose=1, **ONLINE).fit(X)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.split("\n")
    assert lines[-1] == "" and len(lines) == 1 + est.n_iter_
    for k, (line, bound) in enumerate(zip(lines, est.lower_bounds_), start=1):
        shown = line.split("\r")[-1]
        assert shown.startswith(f"[GaussianGammaVB] pass {k}/4: ELBO = {bound:.10g}, ")
        assert "steps/s" in shown and "elapsed" in shown
    assert f"{est.lower_bounds_[-1]:.10g}" in err
    est.partial_fit(X[:100])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"ELBO = {est.lower_bound_:.10g}" in err


class _Terminal(io.StringIO):
    """A captured standard error that says it is a terminal."""

    def isatty(self):
        return True


def test_verbose_1_shows_minibatches_and_an_eta_within_a_pass(monkeypatch):
    monkeypatch.setattr(monitoring, "PROGRESS_INTERVAL", 0.0)  # redraw at every step
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    X = np.random.RandomState(0).normal(size=(200, 2))
    GaussianGammaVB(batch_size=50, verbose=1, **ONLINE).fit(X)
    err = terminal.getvalue()
    assert "\r[GaussianGammaVB] pass 2/4, minibatch 3/4: " in err
    assert "ETA" in err and "(pass 1)" in err  # the last pass's ELBO, while the next runs


def test_verbose_1_writes_one_line_per_pass_when_stderr_is_not_a_terminal(monkeypatch):
    # A log file or a pipe: no carriage returns and no redraws within a pass,
    # one newline-terminated line per pass and per partial_fit call, the same
    # finished lines a terminal shows.
    monkeypatch.setattr(monitoring, "PROGRESS_INTERVAL", 0.0)  # a terminal redraws every step
    X = np.random.RandomState(0).normal(size=(200, 2))
    runs = {}
    for name, stream in (("log", io.StringIO()), ("terminal", _Terminal())):
        monkeypatch.setattr(sys, "stderr", stream)
        est = GaussianGammaVB(batch_size=50, verbose=1, random_state=0, **ONLINE).fit(X)
        bounds = list(est.lower_bounds_)
        est.partial_fit(X[:100])
        est.partial_fit(X[100:])
        runs[name] = (bounds, est, stream.getvalue())
    bounds, est, log = runs["log"]
    assert "\r" not in log and log.endswith("\n")
    lines = log.splitlines()
    assert len(bounds) == 4 and len(lines) == 4 + 2
    for k, (line, bound) in enumerate(zip(lines, bounds), start=1):
        assert line.startswith(f"[GaussianGammaVB] pass {k}/4: ELBO = {bound:.10g}, ")
    assert all(line.startswith("[GaussianGammaVB] partial_fit: 2 step(s), ") for line in lines[-2:])
    assert lines[-1].startswith(
        f"[GaussianGammaVB] partial_fit: 2 step(s), ELBO = {est.lower_bound_:.10g}"
    )
    # The terminal got the same finished lines, after redraws within each pass.
    _, _, shown = runs["terminal"]
    assert shown.count("\r") > len(lines) and "minibatch 3/4" in shown
    finished = [line.split("\r")[-1] for line in shown.split("\n")[:-1]]

    def before_the_timings(line):
        return line.split(" steps/s")[0].rsplit(",", 1)[0]

    assert [before_the_timings(line) for line in finished] == [
        before_the_timings(line) for line in lines
    ]


def test_verbose_interval_keeps_every_kth_pass_line_and_the_last(capsys):
    X = np.random.RandomState(0).normal(size=(200, 2))
    est = SVIBayesianGaussianMixture(
        n_components=2, max_iter=5, tol=0.0, verbose=1, verbose_interval=2, random_state=0
    )
    _fit(est, X, None)
    finished = [line.split("\r")[-1] for line in capsys.readouterr().err.split("\n")[:-1]]
    assert [line.split(":")[0].split()[-1] for line in finished] == ["2/5", "4/5", "5/5"]


def test_verbose_2_logs_one_info_record_per_pass(caplog, capsys):
    caplog.set_level(logging.INFO, logger="skvi")
    X = np.random.RandomState(0).normal(size=(200, 2))
    est = GaussianGammaVB(batch_size=50, verbose=2, **ONLINE).fit(X)
    records = [r for r in caplog.records if r.name == "skvi"]
    assert [r.levelno for r in records] == [logging.INFO] * est.n_iter_
    assert [r.skvi.elbo for r in records] == est.lower_bounds_
    for record, bound in zip(records, est.lower_bounds_):
        assert f"ELBO = {bound:.10g}" in record.getMessage()
    assert capsys.readouterr().err == ""  # logging instead of the progress line
    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="skvi")
    est.partial_fit(X)
    levels = [r.levelno for r in caplog.records if r.name == "skvi"]
    assert levels == [logging.DEBUG] * 4 + [logging.INFO]


# ----------------------------------------------------------------- warnings
def _line():
    """The line number of the caller."""
    return inspect.currentframe().f_back.f_lineno


def test_engine_warnings_point_at_the_users_line():
    X = np.random.RandomState(0).normal(size=(200, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line() + 1  # the next line's
        SVIBayesianGaussianMixture(n_components=2, max_iter=2, n_init=2, random_state=0).fit(X)
        pipe = make_pipeline(StandardScaler(), GaussianGammaVB(max_iter=2, tol=1e-300))
        pipe_line = _line() + 1
        pipe.fit(X)
    found = [(w.filename, w.lineno) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert found == [(__file__, line)] * 2 + [(__file__, pipe_line)]


def test_rejection_warning_points_at_the_users_line():
    rng = np.random.RandomState(0)
    X = 3 * rng.normal(size=(20, 4))
    y = (X @ [1.0, -1.0, 0.5, 0.0] > 0).astype(int)
    # S-DSVI with a large AdaGrad rate and rho = 1 overshoots: step safety rejects.
    clf = SVILogisticRegression(
        learning_rate=1.0,
        algorithm="s-dsvi",
        gradient_learning_rate=10.0,
        expectation="quadrature",
        random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line() + 1
        clf.partial_fit(X, y, classes=[0, 1])
    assert clf.n_rejected_steps_ > 0
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]
    assert clf.step_trace_["rejected"].sum() == clf.n_rejected_steps_


def test_a_record_s_unused_rows_carry_nothing_into_a_pickle():
    # The history and the step trace grow in blocks; the rows not yet used
    # travel in the estimator's pickle, so they must hold zeros, never the
    # uninitialised memory where a process's freed arrays (training rows)
    # lie.  Fill the allocator's free lists with a marker first.
    from skvi.engine.monitoring import HISTORY_DTYPE, _Table

    for _ in range(20):
        marker = np.full(64 * len(HISTORY_DTYPE.names), 123456.789)
        del marker
    table = _Table(HISTORY_DTYPE)
    table.append(tuple(range(len(HISTORY_DTYPE.names))))
    unused = table.rows[table.n :]
    assert unused.size > 0
    for name in HISTORY_DTYPE.names:
        np.testing.assert_array_equal(unused[name], 0)


def test_verbose_2_logs_the_progress_within_a_long_pass(monkeypatch, caplog):
    # A record every LOG_INTERVAL seconds within a pass, plain text (a log
    # or a pipe gets lines, never carriage returns), and the pass's own
    # record; with an interval of 0, one per minibatch but the pass's last.
    import skvi.engine.monitoring as monitoring

    X = np.random.RandomState(0).normal(size=(1000, 2))
    monkeypatch.setattr(monitoring, "LOG_INTERVAL", 0.0)
    est = GaussianGammaVB(learning_method="online", batch_size=100, max_iter=2, tol=0, verbose=2)
    with caplog.at_level(logging.INFO, logger="skvi"):
        est.fit(X)
    messages = [r.getMessage() for r in caplog.records]
    within = [m for m in messages if "minibatch" in m]
    assert len(within) == 2 * 9
    assert [int(m.split("minibatch ")[1].split("/")[0]) for m in within[:9]] == list(range(1, 10))
    assert not any("\r" in m for m in messages)
    # A short pass, with the interval as shipped: no record within it.
    monkeypatch.setattr(monitoring, "LOG_INTERVAL", 3600.0)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="skvi"):
        est.fit(X)
    assert not any("minibatch" in r.getMessage() for r in caplog.records)


def test_the_progress_line_redraws_in_a_notebook(monkeypatch):
    # A notebook's standard error is the kernel's stream, no terminal, but
    # its output area honours carriage returns: the line is redrawn there;
    # into a plain file it is not.
    import skvi.engine.monitoring as monitoring

    class OutStream(io.StringIO):
        pass

    OutStream.__module__ = "ipykernel.iostream"
    assert monitoring._redraws(OutStream())
    assert not monitoring._redraws(io.StringIO())
