"""The compiled LDA E-step kernel against numpy, scipy and scikit-learn.

The kernel is optional (built only where a C compiler is available), so the
module is skipped when it is missing -- except under ``CI=true``, where a
missing kernel means a broken build and must fail.
"""

import os
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import digamma as scipy_digamma

from skvi.models.lda.estep import e_step_numpy, exp_dirichlet_expectation

try:
    from skvi.models.lda import _lda_fast
except ImportError as exc:  # pragma: no cover - depends on the build
    if os.environ.get("CI") == "true":
        raise ImportError(
            "skvi.models.lda._lda_fast is not built; CI requires the compiled kernel"
        ) from exc
    pytest.skip(
        f"compiled kernel skvi.models.lda._lda_fast not built ({exc})", allow_module_level=True
    )

# float32 tolerances.  Both implementations round every operation to float32
# (eps = 1.2e-7) but sum in different orders, and the fixed-point iteration
# carries those rounding differences from one sweep to the next, so gamma
# and sstats drift apart by up to tens of ulps of their largest entries
# (under 1e-6 of the largest entry on these data, up to 4e-6 on other random
# corpora of this size).  Small entries inherit absolute, not relative,
# errors, hence an absolute tolerance scaled by the largest entry: 1e-5 of
# it, about 80 eps.  loglik is accumulated in float64 by the kernel and in
# float32 by numpy's dot, whose error of a few 1e-8 relative 1e-6 covers.
RTOL = {np.float64: 1e-10, np.float32: 1e-5}
LOGLIK_RTOL = {np.float64: 1e-10, np.float32: 1e-6}


def make_problem(seed, dtype, index_dtype=np.int32, n_docs=40, n_words=150, n_topics=7):
    """Random counts (with empty and one-word documents), topics and gamma."""
    rng = np.random.RandomState(seed)
    X = sp.random(
        n_docs,
        n_words,
        density=0.08,
        format="lil",
        random_state=rng,
        data_rvs=lambda n: rng.randint(1, 6, n),
    )
    X[3, :] = 0
    X[17, :] = 0
    X[n_docs - 1, :] = 0  # a trailing empty document
    X[8, :] = 0
    X[8, 5] = 4  # a document with a single word
    X = sp.csr_matrix(X, dtype=dtype)
    X.sort_indices()
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    lam = rng.gamma(100.0, 0.01, (n_topics, n_words)) * rng.randint(1, 50, (n_topics, n_words))
    exp_elog_beta_t = np.ascontiguousarray(exp_dirichlet_expectation(lam).T, dtype=dtype)
    alpha = np.full(n_topics, 1.0 / n_topics, dtype=dtype)
    gamma = rng.gamma(100.0, 0.01, (n_docs, n_topics)).astype(dtype)
    return X, exp_elog_beta_t, alpha, gamma


def run_kernel(X, exp_elog_beta_t, alpha, gamma, max_iter, tol, sstats_t):
    return _lda_fast.e_step(
        X.indptr, X.indices, X.data, exp_elog_beta_t, alpha, gamma, max_iter, tol, sstats_t
    )


def assert_close(actual, desired, dtype):
    rtol = RTOL[dtype]
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=rtol * np.abs(desired).max())


@pytest.fixture(params=["baseline", "avx2", "avx512"])
def isa(request):
    """Run the test with each instruction set the CPU has, then restore."""
    before = _lda_fast.get_isa()
    chosen = _lda_fast.set_isa(request.param)
    try:
        if chosen != request.param:
            pytest.skip(f"this CPU has no {request.param}")
        yield chosen
    finally:
        _lda_fast.set_isa(before)


def reference_per_document(X, beta_t, alpha, gamma0, counts, max_iter, tol):
    """The numpy E-step document by document: (gamma, sstats, loglik, counts).

    Where ``counts`` (the kernel's iterations per document) differ from the
    reference's own by one, the document's mean change landed within
    rounding of ``tol``: the reference is rerun with the kernel's count, so
    that what is compared is the updates, not the stopping decision.
    Returns the reference's own counts and the documents rerun.
    """
    gamma, sstats = gamma0.copy(), np.zeros_like(beta_t)
    loglik, own, rerun = 0.0, [], []
    for d in range(X.shape[0]):
        rows = slice(d, d + 1)
        trial_gamma, trial_sstats = gamma0[rows].copy(), np.zeros_like(beta_t)
        n_d, ll_d = e_step_numpy(X[rows], beta_t, alpha, trial_gamma, max_iter, tol, trial_sstats)
        own.append(n_d)
        if n_d != counts[d]:
            assert abs(n_d - counts[d]) == 1, (d, n_d, counts[d])
            rerun.append(d)
            trial_gamma, trial_sstats = gamma0[rows].copy(), np.zeros_like(beta_t)
            _, ll_d = e_step_numpy(
                X[rows], beta_t, alpha, trial_gamma, counts[d], 0.0, trial_sstats
            )
        gamma[rows] = trial_gamma
        sstats += trial_sstats
        loglik += ll_d
    return gamma, sstats, loglik, np.array(own), rerun


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_e_step_matches_numpy_reference(dtype, index_dtype, isa):
    X, beta_t, alpha, gamma0 = make_problem(0, dtype, index_dtype)
    assert np.diff(X.indptr).min() == 0 and 1 in np.diff(X.indptr)

    gamma, sstats = gamma0.copy(), np.zeros_like(beta_t)
    n, loglik = run_kernel(X, beta_t, alpha, gamma, 100, 1e-3, sstats)
    # Documents are independent: one call equals a call per document.
    counts = []
    for d in range(X.shape[0]):
        gamma_d = gamma0[d : d + 1].copy()
        counts.append(run_kernel(X[d : d + 1], beta_t, alpha, gamma_d, 100, 1e-3, None)[0])
        np.testing.assert_array_equal(gamma_d, gamma[d : d + 1])
    assert sum(counts) == n

    gamma_ref, sstats_ref, loglik_ref, own, rerun = reference_per_document(
        X, beta_t, alpha, gamma0, counts, 100, 1e-3
    )
    n_ref, _ = e_step_numpy(X, beta_t, alpha, gamma0.copy(), 100, 1e-3)
    assert own.sum() == n_ref  # the reference, too, is per document
    assert n_ref > 2 * X.shape[0]  # documents really iterate
    if dtype == np.float64:
        assert rerun == []  # float64 rounding never reaches the stopping rule here
    else:
        assert len(rerun) <= 1  # float32: at most one document at the boundary
    assert gamma.dtype == sstats.dtype == dtype
    assert_close(gamma, gamma_ref, dtype)
    assert_close(sstats, sstats_ref, dtype)
    np.testing.assert_allclose(loglik, loglik_ref, rtol=LOGLIK_RTOL[dtype])

    # Without sstats: the same gamma and loglik; sstats only accumulates.
    gamma_no = gamma0.copy()
    assert run_kernel(X, beta_t, alpha, gamma_no, 100, 1e-3, None) == (n, loglik)
    np.testing.assert_array_equal(gamma_no, gamma)
    again = np.ones_like(beta_t)
    run_kernel(X, beta_t, alpha, gamma0.copy(), 100, 1e-3, again)
    assert_close(again - 1, sstats, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_e_step_long_documents_match_numpy_reference(dtype, isa):
    # About 130 distinct words per document: the kernel's main loops (four
    # vector blocks of words, four topics at a time) run, not only their tails.
    X, beta_t, alpha, gamma0 = make_problem(6, dtype, n_docs=20, n_words=1600, n_topics=9)
    X = sp.csr_matrix(
        sp.random(
            20,
            1600,
            density=0.08,
            random_state=6,
            format="csr",
            data_rvs=lambda n: np.random.RandomState(7).randint(1, 4, n),
        ),
        dtype=dtype,
    )
    assert np.diff(X.indptr).min() > 64
    gamma, sstats = gamma0.copy(), np.zeros_like(beta_t)
    n, loglik = run_kernel(X, beta_t, alpha, gamma, 100, 1e-3, sstats)
    counts = []
    for d in range(X.shape[0]):
        counts.append(
            run_kernel(X[d : d + 1], beta_t, alpha, gamma0[d : d + 1].copy(), 100, 1e-3, None)[0]
        )
    gamma_ref, sstats_ref, loglik_ref, own, rerun = reference_per_document(
        X, beta_t, alpha, gamma0, counts, 100, 1e-3
    )
    assert own.sum() > 4 * X.shape[0]
    assert len(rerun) <= (0 if dtype == np.float64 else 1)
    assert_close(gamma, gamma_ref, dtype)
    assert_close(sstats, sstats_ref, dtype)
    np.testing.assert_allclose(loglik, loglik_ref, rtol=LOGLIK_RTOL[dtype])


def test_set_isa_rejects_unknown_names():
    with pytest.raises(ValueError, match="avx512"):
        _lda_fast.set_isa("sse9")


@pytest.mark.parametrize("max_iter, tol", [(0, 1e-3), (7, 0.0), (30, 1e-6)])
def test_e_step_iteration_limits(max_iter, tol, isa):
    X, beta_t, alpha, gamma0 = make_problem(1, np.float64)
    gamma_ref, sstats_ref = gamma0.copy(), np.zeros_like(beta_t)
    n_ref, loglik_ref = e_step_numpy(X, beta_t, alpha, gamma_ref, max_iter, tol, sstats_ref)
    gamma, sstats = gamma0.copy(), np.zeros_like(beta_t)
    n, loglik = run_kernel(X, beta_t, alpha, gamma, max_iter, tol, sstats)
    assert n == n_ref
    if tol == 0.0:
        assert n == max_iter * X.shape[0]
    assert_close(gamma, gamma_ref, np.float64)
    assert_close(sstats, sstats_ref, np.float64)
    np.testing.assert_allclose(loglik, loglik_ref, rtol=1e-10)


def test_e_step_in_threads_matches_one_call():
    X, beta_t, alpha, gamma0 = make_problem(2, np.float64, n_docs=60)
    gamma, sstats = gamma0.copy(), np.zeros_like(beta_t)
    n, loglik = run_kernel(X, beta_t, alpha, gamma, 100, 1e-3, sstats)

    halves = [slice(0, 25), slice(25, 60)]
    gamma_t = gamma0.copy()
    sstats_t = [np.zeros_like(beta_t) for _ in halves]
    results = [None, None]

    def work(i):
        rows = halves[i]
        results[i] = run_kernel(X[rows], beta_t, alpha, gamma_t[rows], 100, 1e-3, sstats_t[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0][0] + results[1][0] == n
    np.testing.assert_allclose(results[0][1] + results[1][1], loglik, rtol=1e-12)
    np.testing.assert_array_equal(gamma_t, gamma)
    np.testing.assert_allclose(sstats_t[0] + sstats_t[1], sstats, rtol=1e-12, atol=1e-12)


def test_e_step_rejects_bad_input():
    X, beta_t, alpha, gamma = make_problem(3, np.float64)
    bad = X.indices.copy()
    bad[0] = beta_t.shape[0]
    with pytest.raises(ValueError, match="CSR"):
        _lda_fast.e_step(X.indptr, bad, X.data, beta_t, alpha, gamma, 10, 1e-3, None)
    with pytest.raises(ValueError, match="indptr"):
        _lda_fast.e_step(X.indptr[:-1], X.indices, X.data, beta_t, alpha, gamma, 10, 1e-3, None)
    with pytest.raises(ValueError, match="n_topics"):
        _lda_fast.e_step(X.indptr, X.indices, X.data, beta_t, alpha[:-1], gamma, 10, 1e-3, None)
    with pytest.raises(ValueError, match="sstats_t"):
        _lda_fast.e_step(
            X.indptr, X.indices, X.data, beta_t, alpha, gamma, 10, 1e-3, beta_t[:-1].copy()
        )
    with pytest.raises(ValueError):  # mixed float dtypes
        _lda_fast.e_step(
            X.indptr, X.indices, X.data, beta_t.astype(np.float32), alpha, gamma, 10, 1e-3, None
        )


@pytest.mark.parametrize("n_rows", [50, 1001])  # 1001 x 6: several chunks of 4096 values
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exp_digamma_diff_matches_scipy(dtype, n_rows, isa):
    rng = np.random.RandomState(4)
    # Variational topic-word parameters, eta = 0.05 plus expected counts.
    values = (0.05 + rng.gamma(0.3, 20.0, (n_rows, 6))).astype(dtype)
    totals = values.sum(axis=0, dtype=np.float64) + rng.uniform(0, 1e4, 6)
    out = np.empty_like(values)
    assert _lda_fast.exp_digamma_diff(values, totals, out) is out
    ref = np.exp(scipy_digamma(values.astype(np.float64)) - scipy_digamma(totals))
    # exp(psi) is summed as x * exp(series) with the series truncated at
    # the x**-12 term (relative error below 2e-12); float32 is rounded once.
    np.testing.assert_allclose(out, ref, rtol=5e-12 if dtype == np.float64 else 1e-7)


def test_exp_digamma_matches_scipy(isa):
    x = np.concatenate([np.logspace(-8, 8, 4001), np.linspace(0.01, 20.0, 4003)])
    ref = np.exp(scipy_digamma(x))
    got = _lda_fast.exp_digamma(x)
    big = ref > 1e-290  # exp(psi(x)) underflows for x below about 1e-3
    np.testing.assert_allclose(got[big], ref[big], rtol=5e-12)
    assert np.all(got[~big] < 1e-280)


def test_e_step_agrees_with_scikit_learn():
    lda = pytest.importorskip("sklearn.decomposition._lda")
    n_docs = 30
    X, beta_t, alpha, _ = make_problem(5, np.float64, n_docs=n_docs)
    # scikit-learn draws its initial gamma from the random state it is given.
    gamma = np.random.RandomState(1).gamma(100.0, 0.01, (n_docs, alpha.size))
    sstats = np.zeros_like(beta_t)
    run_kernel(X, beta_t, alpha, gamma, 100, 1e-3, sstats)
    gamma_ref = gamma.copy()
    gamma_ref[:] = np.random.RandomState(1).gamma(100.0, 0.01, (n_docs, alpha.size))
    e_step_numpy(X, beta_t, alpha, gamma_ref, 100, 1e-3)

    gamma_sk, sstats_sk = lda._update_doc_distribution(
        X, np.ascontiguousarray(beta_t.T), alpha[0], 100, 1e-3, True, np.random.RandomState(1)
    )
    # scikit-learn's psi trades accuracy for speed, so agreement is to a
    # fraction of the tolerance 1e-3, as for the numpy reference.
    np.testing.assert_allclose(gamma_sk, gamma_ref, atol=1e-5)
    np.testing.assert_allclose(gamma_sk, gamma, atol=1e-5)
    np.testing.assert_allclose(sstats_sk.T, sstats, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blend_and_add_rows_keep_column_totals(dtype):
    rng = np.random.RandomState(8)
    x = rng.gamma(0.5, 2.0, (300, 7)).astype(dtype)
    out = np.empty_like(x)
    totals = np.empty(7)
    _lda_fast.blend(out, x, 0.3, 0.05, totals)
    np.testing.assert_allclose(out, 0.3 * x.astype(np.float64) + 0.05, rtol=RTOL[dtype])
    np.testing.assert_allclose(totals, out.sum(axis=0, dtype=np.float64), rtol=1e-12)

    rows = np.array([4, 0, 299, 17], dtype=np.int64)
    values = rng.rand(4, 7).astype(dtype)
    expected = out.astype(np.float64)
    expected[rows] += 2.5 * values
    assert _lda_fast.add_rows(out, rows, values, 2.5, totals, -1.0) is True
    np.testing.assert_allclose(out, expected, rtol=RTOL[dtype])
    np.testing.assert_allclose(totals, out.sum(axis=0, dtype=np.float64), rtol=RTOL[dtype])

    # Validity: an entry pushed below the bound, or to NaN or inf, is reported.
    for bad in (-10.0, np.nan, np.inf):
        values[2, 3] = bad
        assert _lda_fast.add_rows(out.copy(), rows, values, 1.0, None, -1.0) is False
    with pytest.raises(ValueError, match="range"):
        _lda_fast.add_rows(out, np.array([300]), values[:1], 1.0)


def test_exp_digamma_diff_reads_rows_with_an_offset():
    rng = np.random.RandomState(9)
    values = rng.gamma(0.3, 5.0, (40, 5))
    rows = np.array([39, 2, 2, 11], dtype=np.int32)
    totals = values.sum(axis=0) + 40 + 3.0
    out = np.empty((4, 5))
    _lda_fast.exp_digamma_diff(values, totals, out, rows, 1.0)
    ref = np.exp(scipy_digamma(values[rows] + 1.0) - scipy_digamma(totals))
    np.testing.assert_allclose(out, ref, rtol=5e-12)
    with pytest.raises(ValueError, match="range"):
        _lda_fast.exp_digamma_diff(values, totals, out, np.array([0, 1, 2, 40], np.int32), 1.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blend_with_rows_equals_blend_then_add(dtype):
    rng = np.random.RandomState(10)
    x = rng.gamma(0.5, 2.0, (200, 6)).astype(dtype)
    rows = np.array([150, 3, 77, 0, 199], dtype=np.int32)
    values = rng.rand(5, 6).astype(dtype)
    expected = 0.7 * x.astype(np.float64) + 0.02
    expected[rows] += 3.0 * values
    out, totals = np.empty_like(x), np.empty(6)
    assert _lda_fast.blend(out, x, 0.7, 0.02, totals, rows, values, 3.0, -1.0) is True
    np.testing.assert_allclose(out, expected, rtol=RTOL[dtype])
    np.testing.assert_allclose(totals, out.sum(axis=0, dtype=np.float64), rtol=RTOL[dtype])
    # Invalid touched entries are reported; untouched ones are not checked.
    values[1, 2] = -100.0
    assert _lda_fast.blend(out, x, 0.7, 0.02, totals, rows, values, 1.0, -1.0) is False
    assert _lda_fast.blend(out, x - 50, 0.7, 0.02, totals, rows[:0], values[:0], 1.0, -1.0)
    with pytest.raises(ValueError, match="distinct"):
        _lda_fast.blend(out, x, 0.7, 0.02, totals, np.array([3, 3], np.int32), values[:2], 1.0)
