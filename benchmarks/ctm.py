"""Benchmark skvi's correlated topic model against tomotopy on 20 Newsgroups.

What it measures
----------------
For every number of topics K in ``--n-components`` (default 20 and 50), these
fits run on the training document-term count matrix of 20 Newsgroups (the
corpus, vocabulary and train/test split of ``benchmarks/lda.py``), one after
the other in one process, single-threaded:

``skvi-ctm-h-mc-ssvi`` / ``skvi-ctm-mc-ssvi`` / ``skvi-ctm-s-dsvi``
    ``skvi.SVICorrelatedTopicModel(n_components=K, algorithm=ALGORITHM,
    covariance=COVARIANCE, learning_method='batch', max_iter=PASSES, tol=0,
    random_state=0)`` on the optimal bound; ``skvi-ctm-simple`` and
    ``skvi-ctm-mean-field`` are H-MC-SSVI on the simple structured bound and
    on Blei and Lafferty's mean-field bound (always a diagonal ``q``); every
    other parameter at its default (10 Monte Carlo
    draws per document and step, topics started by a 5-pass batch LDA fit,
    which is part of the fit time).  The covariance of each document's
    Gaussian ``q(eta_d)`` is ``'diagonal'`` unless ``--covariance full``: at
    K = 50 a full covariance is a 49 x 49 matrix per document.
``skvi-lda``
    ``skvi.SVILatentDirichletAllocation(n_components=K,
    learning_method='batch', max_iter=PASSES, random_state=0)`` (priors
    alpha = eta = 1/K).
``tomotopy-ctm``
    ``tomotopy.CTModel(k=K, seed=0)`` trained for ``--ctm-gibbs-iter``
    iterations (default 200) with one worker and no parallel scheme, every
    other setting at tomotopy's default (``smoothing_alpha=0.1``,
    ``eta=0.01``, its defaults for ``num_beta_samples`` and
    ``num_tmn_samples``, and ``mu``, ``Sigma`` re-estimated every
    ``optim_interval`` iterations).  An iteration of CTModel samples every
    topic assignment and every document's logits (Mimno, Wallach & McCallum,
    "Gibbs sampling for logistic normal topic models with graph-based
    priors"), about ten times the cost of an LDA iteration, hence fewer
    iterations than for LDA.
``tomotopy-lda``
    ``tomotopy.LDAModel`` configured as in ``benchmarks/lda.py`` (alpha =
    eta = 1/K, hyper-parameter optimisation off, nothing dropped from the
    vocabulary), with ``k=K, seed=0``, trained for ``--gibbs-iter``
    iterations (default 500, as ``benchmarks/lda.py``).

tomotopy's documents are the column indices of the count matrix, each
repeated ``count`` times, as strings, so that its vocabulary maps back to
the matrix's columns (as in ``benchmarks/lda.py``); building them is not
timed.  The fit time is the wall time of ``fit`` (skvi) or ``train``
(tomotopy).  BLAS and OpenMP are held to one thread (environment variables
set before numpy is imported, and threadpoolctl when installed).  With
``--repeats R`` every fit runs R times, the methods taking turns, and the
median time is reported (the first fit of each method is scored).

How every model is scored
-------------------------
Document completion (Wallach, Murray, Salakhutdinov & Mimno, "Evaluation
methods for topic models"): the tokens of each test document are split in
two halves with ``skvi.metrics.split_document_tokens(X_test,
random_state=0)``; documents with fewer than 2 tokens are skipped.  With the
topics held fixed, each document's topic proportions are inferred from its
observed half, and the held-out half is scored by
``p(w | d) = sum_k E[theta_dk] beta_kw``; the perplexity is
``exp(-sum log p / number of held-out tokens)``, computed for every model by
:func:`completion_perplexity`:

* skvi CTM: ``theta = ctm.transform(X_observed)`` (a Monte Carlo mean of
  ``softmax([eta, 0])`` under the fitted ``q(eta_d)``),
  ``beta = ctm.topic_word_``;
* skvi LDA: ``skvi.metrics.document_completion_perplexity(lda, X_test,
  random_state=0)``, which is the same computation with ``E[theta]`` from
  the LDA E-step started at ``gamma = 1`` and ``beta = E[beta]``; the script
  checks that :func:`completion_perplexity` on ``lda.transform(X_observed)``
  gives the same number;
* tomotopy: ``model.infer(documents)`` on the observed halves (``--infer-iter``
  Gibbs iterations, default 100, one worker) gives each document's topic
  distribution, and ``beta`` is ``(n_kw + eta) / (n_k + V eta)`` over all
  ``V`` columns, recovered from ``get_topic_word_dist(k)`` and
  ``get_count_by_topics()`` as in ``benchmarks/lda.py`` (a column tomotopy
  never saw in training gets ``eta / (n_k + V eta)``).

Every model is also scored by the per-word test negative log-likelihood of
"Monte Carlo structured SVI for two-level non-conjugate models" (its eq.
105), ``mean_d -log p(w_d) / N_d`` over ``--nll-docs`` random test documents
(default 1,000, seed 0), with the standard error over those documents ("NLL
/ word": each document counts alike, so short documents weigh as much as
long ones), and ``-sum_d log p(w_d) / sum_d N_d`` ("NLL / token", each word
counts alike, comparable with the bound per token below):
``log p(w_d)``, the document's topic proportions integrated out, is
estimated from the model's parameters alone by importance sampling
(``--nll-samples`` draws per document, default 1,000), by the same function
for every model of a kind: ``skvi.metrics.ctm_log_evidence`` for the
correlated topic models (the proposal is the Laplace approximation of the
document's posterior of its logits, plus the identity; tomotopy's prior of K
logits is turned into skvi's K - 1 logits against the last topic, which
leaves the model unchanged), ``skvi.metrics.lda_log_evidence`` for LDA (the
proposal is the E-step's Dirichlet with half its concentration; tomotopy's
``alpha``).  Each estimate is a lower bound of ``log p(w_d)`` in expectation.

For the skvi CTM fits the table also gives the final training ELBO
(``lower_bound_``, total and per training token) and the test bound per
token on the same documents, ``-ctm.score(X_nll) / X_nll.sum()`` ("bound /
token": an upper bound on "NLL / token", lower is better).

Outputs
-------
Per K, a table of fit seconds, completion perplexity, per-word NLL and the
fit time as a multiple of tomotopy CTModel's.  Under ``--out`` (default ``/tmp/ctm_bench``):
``ctm_elbo_history.csv``, the ELBO after every pass of each skvi CTM fit
against the engine's clock (from ``ctm.history_``; its time includes the
validation and the LDA start), and, when matplotlib is installed,
``ctm_elbo_K<K>.png``, ELBO per training token against time for the three
algorithms; ``ctm_log_evidence.csv``, every model's estimate of ``log p(w_d)``
of each scored document (for paired comparisons).

How to run
----------
tomotopy (and matplotlib for the figure) are only needed here; keep them out
of the development environment, e.g.::

    python3 -m venv /path/to/venv
    /path/to/venv/bin/pip install -e . tomotopy matplotlib threadpoolctl
    /path/to/venv/bin/python benchmarks/ctm.py --quick       # a minute or two
    /path/to/venv/bin/python benchmarks/ctm.py --n-components 20 --passes 30
    /path/to/venv/bin/python benchmarks/ctm.py --max-docs 3000 --methods \\
        skvi-ctm-h-mc-ssvi,tomotopy-ctm

CORPUS_DIR (the positional argument) holds ``train.npz`` and ``test.npz``,
as for ``benchmarks/lda.py``; it defaults to
``$SKVI_DATA/20newsgroups-bydate``.  ``--max-docs`` and ``--max-test-docs``
draw a random subset (seed 0) of the training and test documents.  A
missing peer library, or a missing skvi estimator, skips its rows with a
printed reason.
"""

import os

# Single-threaded everywhere: set before numpy (or anything that loads BLAS).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import csv  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    Skipped,
    format_table,
    one_blas_thread,
    tomotopy_topic_counts,
    token_lists,
    version,
)
from lda import load_corpus  # noqa: E402

from skvi.datasets import get_data_home  # noqa: E402

SEED = 0
#: The skvi CTM fits: each algorithm on the optimal bound, and H-MC-SSVI on
#: the simple structured and on Blei and Lafferty's mean-field bound.
CTM_VARIANTS = {
    "h-mc-ssvi": dict(algorithm="h-mc-ssvi"),
    "mc-ssvi": dict(algorithm="mc-ssvi"),
    "s-dsvi": dict(algorithm="s-dsvi"),
    "simple": dict(algorithm="h-mc-ssvi", bound="simple"),
    "mean-field": dict(algorithm="h-mc-ssvi", bound="mean_field", covariance="diagonal"),
}
ALL_METHODS = tuple("skvi-ctm-" + a for a in CTM_VARIANTS) + (
    "skvi-lda",
    "tomotopy-ctm",
    "tomotopy-lda",
)
#: The row every fit time is divided by.
TIME_REFERENCE = "tomotopy-ctm"
#: Settings of --quick, used where the option is not given explicitly.
QUICK = dict(n_components="10", max_docs=2000, max_test_docs=500, passes=5, gibbs_iter=100,
             ctm_gibbs_iter=50)
DEFAULTS = dict(n_components="20,50", max_docs=None, max_test_docs=None, passes=30,
                gibbs_iter=500, ctm_gibbs_iter=200)


def parse_args(argv=None):
    default_dir = str(get_data_home() / "20newsgroups-bydate")
    parser = argparse.ArgumentParser(
        description="Fit the correlated topic model (skvi's three algorithms, tomotopy's "
        "CTModel) and LDA (skvi, tomotopy) on 20 Newsgroups, single-threaded; report fit "
        "time and document-completion perplexity."
    )
    parser.add_argument(
        "corpus_dir", nargs="?", default=default_dir,
        help="folder with train.npz and test.npz (default: %(default)s)",
    )
    parser.add_argument("--n-components", help="comma-separated numbers of topics K "
                        "(default: %s)" % DEFAULTS["n_components"])
    parser.add_argument("--max-docs", type=int,
                        help="fit on a random subset (seed 0) of this many training documents")
    parser.add_argument("--max-test-docs", type=int,
                        help="score on a random subset (seed 0) of this many test documents")
    parser.add_argument("--passes", type=int, help="batch passes (max_iter) of the skvi fits "
                        "(default: %d)" % DEFAULTS["passes"])
    parser.add_argument("--gibbs-iter", type=int, help="Gibbs iterations of tomotopy's "
                        "LDAModel (default: %d)" % DEFAULTS["gibbs_iter"])
    parser.add_argument("--ctm-gibbs-iter", type=int, help="Gibbs iterations of tomotopy's "
                        "CTModel (default: %d)" % DEFAULTS["ctm_gibbs_iter"])
    parser.add_argument("--infer-iter", type=int, default=100,
                        help="Gibbs iterations of tomotopy's infer on the observed halves "
                        "(default: %(default)s, tomotopy's default)")
    parser.add_argument("--nll-docs", type=int, default=1000,
                        help="random test documents (seed 0) scored by the importance-sampled "
                        "per-word NLL and the CTM's test bound (default: %(default)s)")
    parser.add_argument("--nll-samples", type=int, default=1000,
                        help="importance samples per document (default: %(default)s)")
    parser.add_argument("--covariance", choices=("diagonal", "full"), default="diagonal",
                        help="covariance of each document's q(eta_d) in the skvi CTM fits "
                        "(default: %(default)s)")
    parser.add_argument("--methods", default=",".join(ALL_METHODS),
                        help="comma-separated subset of: %s (default: all)"
                        % ", ".join(ALL_METHODS))
    parser.add_argument("--repeats", type=int, default=1,
                        help="fit every method this many times, the methods taking turns, and "
                        "report the median fit time (default: %(default)s)")
    parser.add_argument("--out", default="/tmp/ctm_bench",
                        help="folder for the ELBO history (CSV) and figures (default: "
                        "%(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="a quick run: %s (each unless given explicitly)"
                        % ", ".join("%s=%s" % kv for kv in QUICK.items()))
    args = parser.parse_args(argv)

    for name, default in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, QUICK[name] if args.quick else default)
    try:
        args.n_components = [int(k) for k in str(args.n_components).split(",") if k.strip()]
    except ValueError:
        parser.error("--n-components wants comma-separated integers")
    if not args.n_components or min(args.n_components) < 2:
        parser.error("every number of topics must be at least 2")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown or not methods:
        parser.error("unknown method(s) %s; choose from %s"
                     % (", ".join(unknown), ", ".join(ALL_METHODS)))
    args.methods = [m for m in ALL_METHODS if m in methods]
    for name in ("passes", "gibbs_iter", "ctm_gibbs_iter", "infer_iter", "repeats",
                 "nll_docs", "nll_samples"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    for name in ("max_docs", "max_test_docs"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    return args


def subsample(X, n, seed=SEED):
    """A random subset of ``n`` rows of X (all of them when n is None or too large)."""
    if n is None or n >= X.shape[0]:
        return X
    rows = np.sort(np.random.RandomState(seed).choice(X.shape[0], size=n, replace=False))
    return X[rows]


# ------------------------------------------------------------------ scoring
def completion_perplexity(theta, beta, X_heldout):
    """Perplexity of held-out tokens under ``p(w | d) = sum_k theta_dk beta_kw``.

    Parameters
    ----------
    theta : ndarray of shape (n_docs, K)
        Each document's expected topic proportions, inferred from its
        observed tokens only; rows sum to one.
    beta : ndarray of shape (K, n_words)
        The topics; rows sum to one.
    X_heldout : sparse matrix of shape (n_docs, n_words)
        Held-out token counts of the same documents.

    Returns
    -------
    perplexity : float
        ``exp(-sum_dw n_dw log p(w | d) / sum_dw n_dw)``.
    """
    theta = np.asarray(theta, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    X = sp.csr_matrix(X_heldout)
    if theta.shape[0] != X.shape[0] or beta.shape != (theta.shape[1], X.shape[1]):
        raise ValueError("theta %s, beta %s and X_heldout %s do not match"
                         % (theta.shape, beta.shape, X.shape))
    for name, m in (("theta", theta), ("beta", beta)):
        if not np.all(np.isfinite(m)) or m.min() < 0 or not np.allclose(m.sum(axis=1), 1.0,
                                                                        atol=1e-5):
            raise ValueError("%s must be finite, non-negative, with rows summing to one" % name)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    beta_t = np.ascontiguousarray(beta.T)
    loglik = 0.0
    chunk = 65536  # non-zeros at a time: two (chunk, K) temporaries
    for lo in range(0, X.nnz, chunk):
        hi = min(lo + chunk, X.nnz)
        p = np.einsum("nk,nk->n", theta[rows[lo:hi]], beta_t[X.indices[lo:hi]])
        loglik += float(np.dot(X.data[lo:hi], np.log(p)))
    return float(np.exp(-loglik / X.data.sum()))


def completion_split(X_test):
    """Observed and held-out halves of the test documents with at least 2 tokens."""
    from skvi.metrics import split_document_tokens

    X_observed, X_heldout = split_document_tokens(X_test, random_state=SEED)
    keep = np.flatnonzero(np.asarray(X_test.sum(axis=1)).ravel() >= 2)
    return X_observed[keep], X_heldout[keep]


def per_word_nll(log_evidence, X):
    """``mean_d -log p(w_d) / N_d``, its standard error, and ``-sum_d log p(w_d) / sum_d N_d``.

    The first is the paper's normalisation (each document counts alike);
    the last weighs documents by their words, as the bound per word does.
    """
    log_evidence = np.asarray(log_evidence)
    words = np.asarray(X.sum(axis=1)).ravel()
    values = -log_evidence / words
    return (float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size)),
            float(-log_evidence.sum() / words.sum()))


def tomotopy_ctm_prior(model):
    """tomotopy's prior of K logits as the K - 1 logits against topic K.

    ``softmax(eta) = softmax([eta_k - eta_K, 0])``, and with ``eta ~ N(m,
    S)`` the differences are ``N(A m, A S A^T)``, ``A = [I, -1]``: the same
    model in skvi's parametrisation.
    """
    mean = np.asarray(model.prior_mean, dtype=np.float64)
    cov = np.asarray(model.prior_cov, dtype=np.float64)
    A = np.hstack([np.eye(mean.size - 1), -np.ones((mean.size - 1, 1))])
    return A @ mean, A @ cov @ A.T


# --------------------------------------------------------------- tomotopy
def tomotopy_topic_word(model, n_words):
    """``(n_kw + eta) / (n_k + V eta)`` over all ``n_words`` columns of the matrix."""
    lam = tomotopy_topic_counts(model, n_words)
    return lam / lam.sum(axis=1, keepdims=True)


def fit_tomotopy(kind, X_train, K, iterations):
    try:
        import tomotopy as tp
    except ImportError as exc:
        raise Skipped("tomotopy is not installed (%s)" % exc)
    if kind == "ctm":
        model = tp.CTModel(k=K, seed=SEED, min_cf=0, min_df=0, rm_top=0)
    else:
        model = tp.LDAModel(k=K, alpha=1.0 / K, eta=1.0 / K, seed=SEED, min_cf=0, min_df=0,
                            rm_top=0)
        model.optim_interval = 0  # keep alpha at 1/K, as the skvi LDA fit
    for words in token_lists(X_train):  # not timed
        if words:  # an empty document carries no tokens for Gibbs sampling
            model.add_doc(words)
    start = time.perf_counter()
    model.train(iterations, workers=1, parallel=tp.ParallelScheme.NONE)
    return model, time.perf_counter() - start


def tomotopy_theta(model, X_observed, iterations):
    import tomotopy as tp

    docs = [model.make_doc(words) for words in token_lists(X_observed)]
    dists, _ = model.infer(docs, iterations=iterations, workers=1,
                           parallel=tp.ParallelScheme.NONE)
    theta = np.asarray([np.asarray(d, dtype=np.float64) for d in dists])
    return theta / theta.sum(axis=1, keepdims=True)  # float32 rounding


# -------------------------------------------------------------------- skvi
def fit_skvi_ctm(variant, X_train, K, args):
    try:
        from skvi import SVICorrelatedTopicModel
    except ImportError as exc:
        raise Skipped("skvi has no SVICorrelatedTopicModel (%s)" % exc)
    settings = {"covariance": args.covariance, **CTM_VARIANTS[variant]}
    model = SVICorrelatedTopicModel(
        n_components=K, learning_method="batch", max_iter=args.passes, tol=0,
        random_state=SEED, **settings,
    )
    start = time.perf_counter()
    model.fit(X_train)
    return model, time.perf_counter() - start


def fit_skvi_lda(X_train, K, args):
    try:
        from skvi import SVILatentDirichletAllocation
    except ImportError as exc:
        raise Skipped("skvi has no SVILatentDirichletAllocation (%s)" % exc)
    model = SVILatentDirichletAllocation(n_components=K, learning_method="batch",
                                         max_iter=args.passes, random_state=SEED)
    start = time.perf_counter()
    model.fit(X_train)
    return model, time.perf_counter() - start


def run_method(method, X_train, K, args):
    if method.startswith("skvi-ctm-"):
        return fit_skvi_ctm(method[len("skvi-ctm-"):], X_train, K, args)
    if method == "skvi-lda":
        return fit_skvi_lda(X_train, K, args)
    if method == "tomotopy-ctm":
        return fit_tomotopy("ctm", X_train, K, args.ctm_gibbs_iter)
    if method == "tomotopy-lda":
        return fit_tomotopy("lda", X_train, K, args.gibbs_iter)
    raise ValueError(method)


def score_method(method, model, X_test, X_observed, X_heldout, X_nll, args):
    """The row's scores: completion perplexity, per-word NLL, and the CTM fits' bounds.

    The per-word NLL comes from the model's parameters alone, by the same
    function for every model of a kind: ``skvi.metrics.ctm_log_evidence``
    (the Laplace approximation of each document's posterior as the
    proposal) for the correlated topic models, ``lda_log_evidence`` (the
    E-step's Dirichlet) for LDA.
    """
    from skvi.metrics import ctm_log_evidence, lda_log_evidence

    n_words = X_test.shape[1]
    sampling = dict(n_samples=args.nll_samples, random_state=SEED)
    out = {}
    if method.startswith("skvi-ctm-"):
        out["perplexity"] = completion_perplexity(model.transform(X_observed),
                                                  model.topic_word_, X_heldout)
        out["elbo"] = float(model.lower_bound_)
        out["test_bound_per_word"] = -model.score(X_nll) / float(X_nll.sum())
        log_p = ctm_log_evidence(X_nll, model.prior_mean_, model.prior_covariance_,
                                 model.topic_word_, **sampling)
    elif method == "skvi-lda":
        from skvi.metrics import document_completion_perplexity

        out["perplexity"] = document_completion_perplexity(model, X_test, random_state=SEED)
        lam = np.asarray(model.components_, dtype=np.float64)
        beta = lam / lam.sum(axis=1, keepdims=True)
        out["check"] = completion_perplexity(model.transform(X_observed), beta, X_heldout)
        log_p = lda_log_evidence(X_nll, model.doc_topic_prior_, beta, **sampling)
    else:
        theta = tomotopy_theta(model, X_observed, args.infer_iter)
        beta = tomotopy_topic_word(model, n_words)
        out["perplexity"] = completion_perplexity(theta, beta, X_heldout)
        out["ll_per_word"] = float(model.ll_per_word)
        if method == "tomotopy-ctm":
            mean, cov = tomotopy_ctm_prior(model)
            log_p = ctm_log_evidence(X_nll, mean, cov, beta, **sampling)
        else:
            log_p = lda_log_evidence(X_nll, np.asarray(model.alpha, dtype=np.float64), beta,
                                     **sampling)
    out["nll"], out["nll_se"], out["nll_tokens"] = per_word_nll(log_p, X_nll)
    out["log_evidence"] = log_p
    return out


# ----------------------------------------------------------------- output
def history_rows(K, method, model, args, n_tokens):
    h = model.history_
    for i in range(h.shape[0]):
        yield {
            "n_components": K,
            "method": method,
            "algorithm": method[len("skvi-ctm-"):],
            "covariance": args.covariance,
            "pass": i + 1,
            "time": float(h["time"][i]),
            "samples": float(h["samples"][i]),
            "steps": int(h["steps"][i]),
            "elbo": float(h["elbo"][i]),
            "elbo_per_token": float(h["elbo"][i]) / n_tokens,
        }


def plot_histories(rows, K, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method and np.isfinite(r["elbo_per_token"])]
        ax.plot([r["time"] for r in mine], [r["elbo_per_token"] for r in mine], marker=".",
                label=method[len("skvi-ctm-"):])
    ax.set_xlabel("seconds (fit, LDA start included)")
    ax.set_ylabel("ELBO / training token")
    ax.set_title("skvi correlated topic model, K=%d, batch" % K)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def table(rows):
    header = ("model", "fit [s]", "perplexity", "NLL / word", "NLL / token",
              "fit / %s" % TIME_REFERENCE, "final ELBO", "ELBO / token", "bound / token")
    by_name = {r["method"]: r for r in rows}
    ref = by_name.get(TIME_REFERENCE)
    body = []
    for r in rows:
        ratio = "%.2f" % (r["seconds"] / ref["seconds"]) if ref else ""
        elbo = "%.6g" % r["elbo"] if "elbo" in r else ""
        per_token = "%.4f" % (r["elbo"] / r["n_train_tokens"]) if "elbo" in r else ""
        bound = "%.4f" % r["test_bound_per_word"] if "test_bound_per_word" in r else ""
        nll = "%.4f +- %.4f" % (r["nll"], r["nll_se"])
        body.append((r["method"], "%.1f" % r["seconds"], "%.1f" % r["perplexity"], nll,
                     "%.4f" % r["nll_tokens"], ratio, elbo, per_token, bound))
    return format_table(header, body, (False,) + (True,) * 8)


# ------------------------------------------------------------------- main
def main(argv=None):
    wall_start = time.perf_counter()
    args = parse_args(argv)
    X_train, X_test = load_corpus(args.corpus_dir)
    X_train = subsample(X_train, args.max_docs)
    X_test = subsample(X_test, args.max_test_docs)
    X_observed, X_heldout = completion_split(X_test)
    X_nll = subsample(X_test[np.asarray(X_test.sum(axis=1)).ravel() > 0], args.nll_docs)
    n_train_tokens = float(X_train.sum())
    os.makedirs(args.out, exist_ok=True)

    print("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "scipy", "sklearn", "skvi", "tomotopy", "threadpoolctl",
                 "matplotlib"):
        print("  %-14s %s" % (name, version(name)))
    print("corpus: %s" % os.path.abspath(args.corpus_dir))
    print("  train %d docs x %d words, %d tokens%s" % (
        X_train.shape[0], X_train.shape[1], n_train_tokens,
        " (random subset, --max-docs)" if args.max_docs else ""))
    print("  test %d docs, %d tokens%s; completion: %d docs, %d observed and %d held-out "
          "tokens" % (X_test.shape[0], X_test.sum(),
                      " (random subset, --max-test-docs)" if args.max_test_docs else "",
                      X_observed.shape[0], X_observed.sum(), X_heldout.sum()))
    print("  per-word NLL and CTM test bound: %d random test docs, %d tokens; %d importance "
          "samples each" % (X_nll.shape[0], X_nll.sum(), args.nll_samples))
    print("K in %s; skvi: %d batch passes, covariance %s; tomotopy: %d Gibbs iterations (LDA), "
          "%d (CTM), infer %d; one thread; %d repeat(s)"
          % (args.n_components, args.passes, args.covariance, args.gibbs_iter,
             args.ctm_gibbs_iter, args.infer_iter, args.repeats))
    print()

    history, evidence = [], []
    for K in args.n_components:
        print("=== K = %d ===" % K, flush=True)
        times, models, skipped = {}, {}, set()
        with one_blas_thread():
            for turn in range(args.repeats):
                for method in args.methods:
                    if method in skipped:
                        continue
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        warnings.simplefilter("ignore", DeprecationWarning)
                        try:
                            model, seconds = run_method(method, X_train, K, args)
                        except Skipped as exc:
                            print("%-20s skipped: %s" % (method, exc), flush=True)
                            skipped.add(method)
                            continue
                    times.setdefault(method, []).append(seconds)
                    models.setdefault(method, model)  # every run is seeded alike
                    print("%-20s fit %8.1f s   (run %d of %d)"
                          % (method, seconds, turn + 1, args.repeats), flush=True)
                    for message in dict.fromkeys("%s: %s" % (w.category.__name__, w.message)
                                                 for w in caught):
                        print("    warning: %s" % message, flush=True)

            rows = []
            for method in args.methods:
                if method not in times:
                    continue
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    warnings.simplefilter("ignore", DeprecationWarning)
                    scores = score_method(method, models[method], X_test, X_observed,
                                          X_heldout, X_nll, args)
                log_p = scores.pop("log_evidence")
                evidence.append((K, method, log_p))
                row = dict(method=method, seconds=float(np.median(times[method])),
                           n_train_tokens=n_train_tokens, **scores)
                rows.append(row)
                extra = ""
                if "check" in scores:
                    extra = "   (completion_perplexity on transform: %.1f)" % scores["check"]
                if "ll_per_word" in scores:
                    extra = "   (tomotopy ll_per_word %.4f)" % scores["ll_per_word"]
                if "test_bound_per_word" in scores:
                    extra = "   (bound / token %.4f)" % scores["test_bound_per_word"]
                print("%-20s perplexity %9.1f   NLL/word %.4f +- %.4f (per token %.4f)   "
                      "scored in %.1f s%s"
                      % (method, scores["perplexity"], scores["nll"], scores["nll_se"],
                         scores["nll_tokens"], time.perf_counter() - start, extra),
                      flush=True)
                for message in dict.fromkeys("%s: %s" % (w.category.__name__, w.message)
                                             for w in caught):
                    print("    warning: %s" % message, flush=True)

        ctm_rows = []
        for method in args.methods:
            if method.startswith("skvi-ctm-") and method in models:
                ctm_rows.extend(history_rows(K, method, models[method], args, n_train_tokens))
        history.extend(ctm_rows)
        if "tomotopy-ctm" in models:
            m = models["tomotopy-ctm"]
            print("tomotopy CTModel: num_beta_samples=%d, num_tmn_samples=%d, "
                  "optim_interval=%d, eta=%g"
                  % (m.num_beta_samples, m.num_tmn_samples, m.optim_interval, float(m.eta)))
        print()
        if rows:
            print("K = %d: train %d docs, %d skvi passes, tomotopy %d (LDA) / %d (CTM) Gibbs "
                  "iterations" % (K, X_train.shape[0], args.passes, args.gibbs_iter,
                                  args.ctm_gibbs_iter))
            print(table(rows))
        else:
            print("no method ran")
        if ctm_rows:
            png = os.path.join(args.out, "ctm_elbo_K%d.png" % K)
            if plot_histories(ctm_rows, K, png):
                print("figure: %s" % png)
        print(flush=True)

    if history:
        path = os.path.join(args.out, "ctm_elbo_history.csv")
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(history[0]))
            writer.writeheader()
            writer.writerows(history)
        print("ELBO history: %s" % path)
    if evidence:
        path = os.path.join(args.out, "ctm_log_evidence.csv")
        with open(path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["n_components", "method", "document", "words", "log_evidence"])
            words = np.asarray(X_nll.sum(axis=1)).ravel()
            for K, method, log_p in evidence:
                for d, value in enumerate(log_p):
                    writer.writerow([K, method, d, int(words[d]), "%.6f" % value])
        print("per-document log evidence: %s" % path)
    print("total wall time %.1f s" % (time.perf_counter() - wall_start))


if __name__ == "__main__":
    main()
