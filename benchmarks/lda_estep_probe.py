"""Design probe for SVILatentDirichletAllocation's E-step (issue 3).

Not a benchmark of a skvi estimator (there is none for LDA yet): it times a
candidate numpy E-step, vectorised over the minibatch, against scikit-learn's
own per-document E-step (``sklearn.decomposition._lda._update_doc_distribution``,
a private function) on the same documents and topics, in one process, and
reports how many fixed-point iterations per document a warm start from the
previous visit saves.

Run::

    python benchmarks/lda_estep_probe.py [CORPUS_DIR]

CORPUS_DIR holds ``train.npz`` (a scipy.sparse CSR document-term count
matrix); it defaults to ``$SKVI_DATA/20newsgroups-bydate`` with ``SKVI_DATA``
defaulting to ``../shared/data``.
"""

import os
import sys
import time

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.decomposition._lda import _update_doc_distribution

K = 20
TOL = 1e-3
MAX_ITER = 100


def exp_dirichlet_expectation(gamma):
    return np.exp(digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True)))


def vectorised_estep(X, exp_elog_beta, alpha, gamma0):
    """E-step for all rows of CSR X at once; returns gamma, sstats, iters/doc."""
    n_docs = X.shape[0]
    eb_t = np.ascontiguousarray(exp_elog_beta.T)  # (n_words, K)
    eps = np.finfo(X.dtype).eps
    gamma = gamma0.copy()
    e_theta = exp_dirichlet_expectation(gamma)

    def restrict(active):
        sub = X[active]
        rows = np.repeat(np.arange(len(active)), np.diff(sub.indptr))
        return sub, rows, eb_t[sub.indices]

    active = np.arange(n_docs)
    sub, rows, beta_at_nnz = restrict(active)
    doc_iters = 0
    for _ in range(MAX_ITER):
        e = e_theta[active]
        phinorm = np.einsum("nk,nk->n", e[rows], beta_at_nnz) + eps
        weights = sp.csr_matrix((sub.data / phinorm, sub.indices, sub.indptr), shape=sub.shape)
        new = alpha + e * (weights @ eb_t)
        change = np.abs(new - gamma[active]).mean(axis=1)
        gamma[active] = new
        e_theta[active] = exp_dirichlet_expectation(new)
        doc_iters += len(active)
        keep = change >= TOL
        if not keep.any():
            break
        if keep.sum() < 0.8 * len(active):
            active = active[keep]
            sub, rows, beta_at_nnz = restrict(active)
    rows = np.repeat(np.arange(n_docs), np.diff(X.indptr))
    phinorm = np.einsum("nk,nk->n", e_theta[rows], eb_t[X.indices]) + eps
    weights = sp.csr_matrix((X.data / phinorm, X.indices, X.indptr), shape=X.shape)
    sstats = (weights.T @ e_theta).T * exp_elog_beta
    return gamma, sstats, doc_iters / n_docs


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main(argv):
    default = os.path.join(os.environ.get("SKVI_DATA", "../shared/data"), "20newsgroups-bydate")
    folder = argv[1] if len(argv) > 1 else default
    path = os.path.join(folder, "train.npz")
    if not os.path.exists(path):
        sys.exit(f"No corpus at {path}: pass a folder holding train.npz, or set SKVI_DATA.")
    X = sp.load_npz(path).astype(np.float64).tocsr()
    alpha = 1.0 / K
    # Topics after one and two online passes over 3000 documents.
    topics = [
        LatentDirichletAllocation(K, learning_method="online", random_state=0, max_iter=p)
        .fit(X[:3000])
        .exp_dirichlet_component_
        for p in (1, 2)
    ]
    print(f"corpus {path}: {X.shape[0]} docs, K={K}, mean_change_tol={TOL}")
    print(f"{'docs':>6} {'method':<38} {'seconds':>8} {'iters/doc':>10} {'vs sklearn':>10}")
    for n_docs in (256, 2048):
        Xb = X[:n_docs]
        init = np.random.RandomState(1).gamma(100.0, 0.01, (n_docs, K))
        t_sk, (g_sk, s_sk) = timed(
            _update_doc_distribution, Xb, topics[1], alpha, MAX_ITER, TOL, True,
            np.random.RandomState(1),
        )
        s_sk = s_sk * topics[1]
        t_cold, (_, s_v, it_cold) = timed(vectorised_estep, Xb, topics[1], alpha, init)
        # Warm start: gamma from the previous visit (topics after one pass).
        g_prev, _, _ = vectorised_estep(Xb, topics[0], alpha, init)
        t_warm, (_, _, it_warm) = timed(vectorised_estep, Xb, topics[1], alpha, g_prev)
        X32 = Xb.astype(np.float32)
        t_w32, _ = timed(
            vectorised_estep, X32, topics[1].astype(np.float32), np.float32(alpha),
            g_prev.astype(np.float32),
        )
        rel = np.abs(s_sk - s_v).max() / np.abs(s_sk).max()
        print(f"{n_docs:>6} {'scikit-learn (random init)':<38} {t_sk:>8.3f} {'':>10} {1.0:>10.2f}")
        print(f"{n_docs:>6} {'vectorised, random init':<38} {t_cold:>8.3f} {it_cold:>10.1f} {t_sk / t_cold:>10.2f}")
        print(f"{n_docs:>6} {'vectorised, warm start':<38} {t_warm:>8.3f} {it_warm:>10.1f} {t_sk / t_warm:>10.2f}")
        print(f"{n_docs:>6} {'vectorised, warm start, float32':<38} {t_w32:>8.3f} {'':>10} {t_sk / t_w32:>10.2f}")
        print(f"{'':>6} sufficient statistics, vectorised vs scikit-learn: {rel:.1e} relative")


if __name__ == "__main__":
    main(sys.argv)
