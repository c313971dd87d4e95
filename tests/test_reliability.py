"""Bad and unusual input: a clear error or a finite, correct answer, never a crash."""

import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skvi import (
    SVILatentDirichletAllocation,
    SVILogisticRegression,
    SVIMatrixFactorization,
    SVIPoissonRegression,
)
from skvi.metrics import document_completion_perplexity


def _counts(n=30, d=12, seed=0):
    rng = np.random.RandomState(seed)
    return sp.csr_matrix(rng.poisson(1.0, size=(n, d)).astype(float))


def _malformed(X):
    """Structurally invalid copies of the CSR matrix X, by name."""
    out = {}
    bad = X.copy()
    bad.indptr = bad.indptr.copy()
    bad.indptr[1] = bad.nnz + 5
    out["indptr past nnz"] = bad
    bad = X.copy()
    bad.indptr = bad.indptr[:-1].copy()
    out["indptr too short"] = bad
    bad = X.copy()
    bad.indices = bad.indices.copy()
    bad.indices[0] = 2**30
    out["column 2**30"] = bad
    bad = X.copy()
    bad.data = bad.data[:-1].copy()
    out["data shorter than indices"] = bad
    bad = X.copy()
    bad.indices = bad.indices.copy()
    bad.indices[0] = -1
    out["negative column"] = bad
    bad = X.copy()
    bad.indptr = bad.indptr + 1
    out["indptr starts above 0"] = bad
    return out


def _glm_calls(cls):
    X = _counts()
    y = (np.asarray(X.sum(axis=1)).ravel() > 12).astype(int)
    fitted = cls(max_iter=2, random_state=0).fit(X, y)
    return [
        ("fit", lambda B: cls(max_iter=2).fit(B, y)),
        ("partial_fit", lambda B: cls().partial_fit(B, y, **({"classes": [0, 1]} if cls is SVILogisticRegression else {}))),
        ("predict", fitted.predict),
        ("score", lambda B: fitted.score(B, y)),
    ]


def _lda_calls():
    X = _counts()
    fitted = SVILatentDirichletAllocation(n_components=2, max_iter=2, random_state=0).fit(X)
    threaded = SVILatentDirichletAllocation(n_components=2, max_iter=2, n_jobs=2, random_state=0).fit(X)
    return [
        ("fit", lambda B: SVILatentDirichletAllocation(n_components=2, max_iter=2).fit(B)),
        ("partial_fit", lambda B: SVILatentDirichletAllocation(n_components=2).partial_fit(B)),
        ("transform", fitted.transform),
        ("transform n_jobs=2", threaded.transform),
        ("score", fitted.score),
        ("perplexity", fitted.perplexity),
        ("document_completion_perplexity", lambda B: document_completion_perplexity(fitted, B)),
    ]


def _mf_calls():
    X = _counts()
    fitted = SVIMatrixFactorization(n_components=2, max_iter=2, random_state=0).fit(X)
    return [
        ("fit", lambda B: SVIMatrixFactorization(n_components=2, max_iter=2).fit(B)),
        ("partial_fit", lambda B: SVIMatrixFactorization(n_components=2).partial_fit(B)),
        ("transform", fitted.transform),
        ("score", fitted.score),
    ]


CALLS = (
    [("SVILogisticRegression", m, f) for m, f in _glm_calls(SVILogisticRegression)]
    + [("SVIPoissonRegression", m, f) for m, f in _glm_calls(SVIPoissonRegression)]
    + [("SVILatentDirichletAllocation", m, f) for m, f in _lda_calls()]
    + [("SVIMatrixFactorization", m, f) for m, f in _mf_calls()]
)
MALFORMED = _malformed(_counts())


@pytest.mark.parametrize("kind", sorted(MALFORMED))
@pytest.mark.parametrize("estimator, method, call", CALLS, ids=[f"{e}.{m}" for e, m, _ in CALLS])
def test_structurally_invalid_sparse_input_is_a_clear_error(estimator, method, call, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="not a valid sparse matrix"):
            call(MALFORMED[kind])


def test_mf_rejects_a_dia_matrix_whose_stored_entries_are_not_ratings():
    R = sp.dia_matrix((np.array([[0.0, 4.0, 5.0]]), [0]), shape=(3, 3))
    with pytest.raises(ValueError, match="dia_matrix"):
        SVIMatrixFactorization(n_components=1).fit(R)
    # The same ratings as COO, the stored zero kept, fit.
    coo = sp.coo_matrix((np.array([0.0, 4.0, 5.0]), (np.arange(3), np.arange(3))), shape=(3, 3))
    mf = SVIMatrixFactorization(n_components=1, max_iter=2).fit(coo)
    assert mf.n_samples_seen_ == 3
