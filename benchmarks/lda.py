"""Benchmark skvi's LDA against scikit-learn, gensim and tomotopy on 20 Newsgroups.

What it measures
----------------
Every method fits latent Dirichlet allocation with K = 20 topics, doc-topic
prior ``alpha = 1/K`` and topic-word prior ``eta = 1/K`` on the training
document-term count matrix, single-threaded, in one process:

``sklearn-online``
    ``sklearn.decomposition.LatentDirichletAllocation(learning_method='online',
    batch_size=256, max_iter=PASSES, total_samples=n_train, random_state=0)``
    (stochastic variational inference, Hoffman et al. 2010; learning_decay 0.7,
    learning_offset 10, at most 100 E-step iterations with tolerance 1e-3).
``sklearn-batch``
    the same estimator with ``learning_method='batch'`` and ``max_iter=PASSES``.
``gensim``
    ``gensim.models.LdaModel`` (the single-process class, not LdaMulticore)
    with ``chunksize=256, passes=PASSES, update_every=1, decay=0.7, offset=10,
    iterations=100, gamma_threshold=1e-3, random_state=0`` and no evaluation
    during training, in gensim's default precision (float32; scikit-learn and
    skvi work in float64).  The corpus is the list of ``(word_id, count)``
    documents from ``gensim.matutils.Sparse2Corpus``, built before the clock
    starts.
``tomotopy``
    ``tomotopy.LDAModel(k=20, alpha=1/K, eta=1/K, seed=0)`` trained by
    collapsed Gibbs sampling for ``GIBBS_ITER`` iterations with one worker and
    no parallel scheme.  Documents are the column indices of the count matrix,
    each repeated ``count`` times, as strings (so tomotopy's vocabulary maps back
    to columns); nothing is dropped (``min_cf = min_df = rm_top = 0``), and the
    hyper-parameter optimisation tomotopy runs by default every 10 iterations is
    switched off (``optim_interval = 0``) so that alpha stays at 1/K as for the
    other methods.  Building the documents is not timed.
``skvi-online`` / ``skvi-batch``
    ``skvi.SVILatentDirichletAllocation`` with exactly the arguments of the
    matching scikit-learn row (it takes the same constructor parameters).
    Skipped with a note when skvi has no such estimator.
``skvi-online-2threads`` / ``skvi-batch-2threads``
    The same with ``n_jobs=2``: each minibatch's E-step split into two blocks of
    documents run in two threads.  Not part of the single-threaded comparison;
    it measures whether ``n_jobs`` helps on a 2-core machine.
``skvi-cvb0-online`` / ``skvi-cvb0-batch``
    ``skvi-online`` / ``skvi-batch`` with ``inference='cvb0'`` (the zero-order
    collapsed variational update of Asuncion et al. 2009; stochastic CVB0 of
    Foulds et al. 2013 online) and ``max_iter=--cvb0-passes`` (30).  Their
    speed and perplexity are compared with tomotopy's collapsed Gibbs sampler.

The fit time is the wall time (``time.perf_counter``) of the fit call alone:
``fit(X_train)`` for scikit-learn and skvi, the ``LdaModel(corpus=...)``
constructor (initialisation plus all passes) for gensim, and ``train`` for
tomotopy.  BLAS and OpenMP are limited to one thread (environment variables set
before numpy is imported, and threadpoolctl when it is installed).  With
``--repeat R`` every method is fitted R times, the methods taking turns, and the
median time is reported (the fits are seeded alike, so the first one is
scored): the speed of a shared machine drifts over minutes, and taking turns
exposes every method to the same drift.

Every fitted model is scored the same way, with
``skvi.metrics.document_completion_perplexity(model, X_test, random_state=0)``:
each test document's tokens are split in two halves, the document's topic
proportions are folded in on the first half with the topics held fixed, and
the perplexity of the second half is reported (lower is better).  The metric
reads ``components_`` (the variational Dirichlet parameters lambda of the
topics, shape ``(K, n_words)``) and ``doc_topic_prior_`` (alpha).
scikit-learn's and skvi's estimators have both attributes; for the peers a
small holder object is filled with

* gensim: ``model.state.get_lambda()``, which is ``eta + sstats``, the
  Dirichlet parameters of q(beta);
* tomotopy: the topic-word counts plus eta, recovered from
  ``get_topic_word_dist(k) * (n_k + V * eta)`` (``n_k`` from
  ``get_count_by_topics()``, ``V`` the number of used words) and put back in
  column order through ``used_vocabs``; a column tomotopy never saw gets eta.

With ``--defaults`` the script instead compares the estimators at their
defaults, only ``n_components`` (``--ks``, default 10, 20, 50 and 100) and
``random_state=0`` set: scikit-learn's ``LatentDirichletAllocation`` (batch,
10 passes), skvi's ``SVILatentDirichletAllocation`` (the same batch fit) and
skvi's with ``learning_method='online'`` (its online defaults and stopping
rule).  For every K the three take turns ``--repeat`` times; the table gives
the median fit seconds, the time of scikit-learn's over each (speed-up), the
document-completion perplexity and its ratio to scikit-learn's, the passes
made, ``converged_`` and the warnings raised during the fit.

The table gives, per method, the fit seconds, the test perplexity, for the
skvi rows the speed-up over a peer (``peer_seconds / skvi_seconds``: the
matching scikit-learn mode, tomotopy for the CVB0 rows), and the perplexity
relative to a peer (the matching scikit-learn mode for skvi; online
scikit-learn for gensim, which runs the same online algorithm; batch
scikit-learn for tomotopy, for reference; tomotopy for the CVB0 rows).

How to run
----------
gensim and tomotopy are only needed here; keep them out of the development
environment, e.g.::

    python3 -m venv /path/to/venv
    /path/to/venv/bin/pip install -e . gensim tomotopy
    /path/to/venv/bin/python benchmarks/lda.py [CORPUS_DIR]
    /path/to/venv/bin/python benchmarks/lda.py --methods sklearn-online,skvi-online
    /path/to/venv/bin/python benchmarks/lda.py --passes 2 --gibbs-iter 50   # quick run
    /path/to/venv/bin/python benchmarks/lda.py --repeat 3   # median of 3 interleaved runs
    /path/to/venv/bin/python benchmarks/lda.py --defaults --repeat 3   # the defaults
    /path/to/venv/bin/python benchmarks/lda.py --defaults --ks 20 --repeat 3

CORPUS_DIR holds ``train.npz`` and ``test.npz`` (scipy.sparse CSR int32
document-term counts, read with ``scipy.sparse.load_npz``); it defaults to
``$SKVI_DATA/20newsgroups-bydate`` with ``SKVI_DATA`` defaulting to
``skvi.datasets.get_data_home()`` (``../shared/data`` beside a checkout, else ``~/skvi_data``).  A missing peer library, or a missing skvi estimator, skips
its rows with a printed reason.  The full run takes a few minutes.
"""

import os

# Single-threaded everywhere: set before numpy (or anything that loads BLAS).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import one_blas_thread, tomotopy_topic_counts, token_lists  # noqa: E402

from skvi.datasets import get_data_home  # noqa: E402

K = 20
ALPHA = 1.0 / K
ETA = 1.0 / K
BATCH_SIZE = 256
SEED = 0

ALL_METHODS = (
    "sklearn-online",
    "sklearn-batch",
    "gensim",
    "tomotopy",
    "skvi-online",
    "skvi-batch",
    "skvi-online-2threads",
    "skvi-batch-2threads",
    "skvi-cvb0-online",
    "skvi-cvb0-batch",
)
# Which scikit-learn row each row's perplexity is compared with.
PERPLEXITY_REFERENCE = {
    "skvi-online": "sklearn-online",
    "skvi-batch": "sklearn-batch",
    "skvi-online-2threads": "sklearn-online",
    "skvi-batch-2threads": "sklearn-batch",
    "gensim": "sklearn-online",
    "tomotopy": "sklearn-batch",
    # CVB0 is held against collapsed Gibbs sampling's perplexity.
    "skvi-cvb0-online": "tomotopy",
    "skvi-cvb0-batch": "tomotopy",
}
# Which scikit-learn row each skvi row's speed is compared with.
SPEED_REFERENCE = {
    "skvi-online": "sklearn-online",
    "skvi-batch": "sklearn-batch",
    # n_jobs=2: the E-step's document blocks in two threads (not part of the
    # single-threaded comparison; shows that n_jobs helps on 2 cores).
    "skvi-online-2threads": "sklearn-online",
    "skvi-batch-2threads": "sklearn-batch",
    "skvi-cvb0-online": "tomotopy",
    "skvi-cvb0-batch": "tomotopy",
}


class Skipped(Exception):
    """A method that cannot run here; the message says why."""


class TopicPosterior:
    """The two attributes the perplexity metric reads, for a peer's model."""

    def __init__(self, components, doc_topic_prior):
        self.components_ = np.asarray(components, dtype=np.float64)
        self.doc_topic_prior_ = doc_topic_prior


def parse_args(argv=None):
    default_dir = str(get_data_home() / "20newsgroups-bydate")
    parser = argparse.ArgumentParser(
        description="Fit LDA (K=20) with scikit-learn, gensim, tomotopy and skvi on one "
        "corpus, single-threaded; report fit time and document-completion perplexity."
    )
    parser.add_argument(
        "corpus_dir",
        nargs="?",
        default=default_dir,
        help="folder with train.npz and test.npz (default: $SKVI_DATA/20newsgroups-bydate, "
        "SKVI_DATA defaulting to skvi.datasets.get_data_home(); now %(default)s)",
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=10,
        help="passes over the training set (max_iter / passes) for the variational methods",
    )
    parser.add_argument(
        "--gibbs-iter", type=int, default=500, help="Gibbs sampling iterations for tomotopy"
    )
    parser.add_argument(
        "--cvb0-passes", type=int, default=30,
        help="passes of the skvi-cvb0 rows (default: %(default)s)",
    )
    parser.add_argument(
        "--methods",
        default=",".join(ALL_METHODS),
        help="comma-separated subset of: %s (default: all)" % ", ".join(ALL_METHODS),
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="fit every method this many times, the methods taking turns (round robin), and "
        "report the median fit time: on a shared machine whose speed drifts over minutes, "
        "each method then sees the same conditions (default: 1)",
    )
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="compare the estimators at their defaults (only n_components and random_state "
        "set): scikit-learn's, skvi's and skvi's with learning_method='online'",
    )
    parser.add_argument(
        "--ks",
        default="10,20,50,100",
        help="numbers of topics of --defaults, comma-separated (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    args.ks = [int(k) for k in args.ks.split(",") if k.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown or not methods:
        parser.error(
            "unknown method(s) %s; choose from %s" % (", ".join(unknown), ", ".join(ALL_METHODS))
        )
    # Run in the canonical order, whatever order they were given in.
    args.methods = [m for m in ALL_METHODS if m in methods]
    if args.passes < 1 or args.gibbs_iter < 1 or args.repeat < 1:
        parser.error("--passes, --gibbs-iter and --repeat must be at least 1")
    return args


def load_corpus(corpus_dir):
    paths = [os.path.join(corpus_dir, name) for name in ("train.npz", "test.npz")]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        sys.exit(
            "error: %s not found.\nPass the folder that holds train.npz and test.npz "
            "(scipy.sparse CSR document-term counts) as CORPUS_DIR, e.g.\n"
            "    python benchmarks/lda.py /path/to/data/20newsgroups-bydate\n"
            "or set SKVI_DATA to the folder that contains 20newsgroups-bydate/."
            % ", ".join(missing)
        )
    X_train, X_test = (sp.load_npz(p).tocsr() for p in paths)
    if X_train.shape[1] != X_test.shape[1]:
        sys.exit(
            "error: train.npz has %d columns but test.npz has %d; they must share one vocabulary"
            % (X_train.shape[1], X_test.shape[1])
        )
    return X_train, X_test


def _version(module_name):
    try:
        module = __import__(module_name)
    except Exception as exc:  # report why, do not fail
        return "not available (%s: %s)" % (type(exc).__name__, exc)
    return getattr(module, "__version__", "unknown")


def sklearn_params(method, n_train, passes):
    online = "online" in method
    params = dict(
        n_components=K,
        doc_topic_prior=ALPHA,
        topic_word_prior=ETA,
        learning_method="online" if online else "batch",
        max_iter=passes,
        random_state=SEED,
    )
    if online:
        params.update(batch_size=BATCH_SIZE, total_samples=n_train)
    return params


def fit_sklearn(method, X_train, passes):
    from sklearn.decomposition import LatentDirichletAllocation

    model = LatentDirichletAllocation(**sklearn_params(method, X_train.shape[0], passes))
    start = time.perf_counter()
    model.fit(X_train)
    return model, time.perf_counter() - start


def fit_skvi(method, X_train, passes):
    try:
        from skvi import SVILatentDirichletAllocation
    except ImportError as exc:
        raise Skipped("skvi has no SVILatentDirichletAllocation yet (%s)" % exc)
    params = sklearn_params(method, X_train.shape[0], passes)
    if method.endswith("2threads"):
        params["n_jobs"] = 2
    if "cvb0" in method:
        params["inference"] = "cvb0"
    model = SVILatentDirichletAllocation(**params)
    start = time.perf_counter()
    model.fit(X_train)
    return model, time.perf_counter() - start


def fit_gensim(X_train, passes):
    try:
        from gensim.matutils import Sparse2Corpus
        from gensim.models import LdaModel
    except ImportError as exc:
        raise Skipped("gensim is not installed (%s)" % exc)
    n_words = X_train.shape[1]
    # Not timed: the list of (word_id, count) documents and the vocabulary map.
    corpus = list(Sparse2Corpus(X_train, documents_columns=False))
    id2word = {j: str(j) for j in range(n_words)}
    start = time.perf_counter()
    model = LdaModel(
        corpus=corpus,
        id2word=id2word,
        num_topics=K,
        alpha=[ALPHA] * K,
        eta=ETA,
        chunksize=BATCH_SIZE,
        passes=passes,
        update_every=1,
        decay=0.7,
        offset=10.0,
        iterations=100,
        gamma_threshold=1e-3,
        eval_every=None,
        random_state=SEED,
    )
    seconds = time.perf_counter() - start
    lam = model.state.get_lambda()  # eta + sstats: Dirichlet parameters of q(beta)
    if lam.shape != (K, n_words):
        raise RuntimeError("gensim's lambda has shape %s, expected %s" % (lam.shape, (K, n_words)))
    return TopicPosterior(lam, ALPHA), seconds


def fit_tomotopy(X_train, gibbs_iter):
    try:
        import tomotopy as tp
    except ImportError as exc:
        raise Skipped("tomotopy is not installed (%s)" % exc)
    # Not timed: documents as column indices (strings), each repeated count times.
    model = tp.LDAModel(k=K, alpha=ALPHA, eta=ETA, seed=SEED, min_cf=0, min_df=0, rm_top=0)
    model.optim_interval = 0  # keep alpha fixed at 1/K (tomotopy re-estimates it by default)
    for words in token_lists(X_train):
        if words:  # an empty document carries no tokens for Gibbs sampling
            model.add_doc(words)
    start = time.perf_counter()
    model.train(gibbs_iter, workers=1, parallel=tp.ParallelScheme.NONE)
    seconds = time.perf_counter() - start
    lam = tomotopy_topic_counts(model, X_train.shape[1])
    return TopicPosterior(lam, ALPHA), seconds


def run_method(method, X_train, args):
    if method in ("sklearn-online", "sklearn-batch"):
        return fit_sklearn(method, X_train, args.passes)
    if method.startswith("skvi-cvb0"):
        return fit_skvi(method, X_train, args.cvb0_passes)
    if method.startswith("skvi-"):
        return fit_skvi(method, X_train, args.passes)
    if method == "gensim":
        return fit_gensim(X_train, args.passes)
    if method == "tomotopy":
        return fit_tomotopy(X_train, args.gibbs_iter)
    raise ValueError(method)


def format_table(rows):
    header = ("method", "fit [s]", "perplexity", "speed vs peer", "perplexity vs peer")
    body = []
    by_name = {r["method"]: r for r in rows}
    for r in rows:
        speed = ""
        ref = SPEED_REFERENCE.get(r["method"])
        if ref in by_name:
            ratio = by_name[ref]["seconds"] / r["seconds"]
            speed = "%.1fx %s (%s)" % (
                ratio if ratio >= 1 else 1.0 / ratio,
                "faster" if ratio >= 1 else "slower",
                ref,
            )
        rel = ""
        ref = PERPLEXITY_REFERENCE.get(r["method"])
        if ref in by_name:
            rel = "%.3f (%s)" % (r["perplexity"] / by_name[ref]["perplexity"], ref)
        body.append((r["method"], "%.2f" % r["seconds"], "%.1f" % r["perplexity"], speed, rel))
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]
    right = (False, True, True, False, False)

    def fmt(row):
        return "  ".join(
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)
        ).rstrip()

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    lines += [fmt(row) for row in body]
    return "\n".join(lines)


DEFAULT_METHODS = ("sklearn", "skvi", "skvi-online")


def fit_default(method, k, X_train):
    """Fit one estimator at its defaults; (model, seconds, warnings raised)."""
    from sklearn.decomposition import LatentDirichletAllocation

    from skvi import SVILatentDirichletAllocation

    if method == "sklearn":
        model = LatentDirichletAllocation(n_components=k, random_state=SEED)
    elif method == "skvi":
        model = SVILatentDirichletAllocation(n_components=k, random_state=SEED)
    else:
        model = SVILatentDirichletAllocation(
            n_components=k, learning_method="online", random_state=SEED
        )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model.fit(X_train)
        seconds = time.perf_counter() - start
    caught = sorted({"%s: %s" % (w.category.__name__, str(w.message)[:70]) for w in seen})
    return model, seconds, caught


def run_defaults(args, X_train, X_test):
    """The defaults table: scikit-learn's and skvi's estimators as most users run them."""
    from skvi.metrics import document_completion_perplexity

    header = ("K", "method", "fit [s]", "speed-up", "perplexity", "vs sklearn", "passes",
              "converged_", "warnings")
    body = []
    for k in args.ks:
        times, models, caught = {}, {}, {}
        for turn in range(args.repeat):
            order = DEFAULT_METHODS if turn % 2 == 0 else DEFAULT_METHODS[::-1]
            for method in order:
                model, seconds, seen = fit_default(method, k, X_train)
                times.setdefault(method, []).append(seconds)
                models.setdefault(method, model)  # every run is seeded alike
                caught.setdefault(method, seen)
                print("K=%-3d %-12s fit %8.2f s   (run %d of %d)"
                      % (k, method, seconds, turn + 1, args.repeat), flush=True)
        seconds = {m: float(np.median(times[m])) for m in DEFAULT_METHODS}
        perplexity = {
            m: float(document_completion_perplexity(models[m], X_test, random_state=SEED))
            for m in DEFAULT_METHODS
        }
        for m in DEFAULT_METHODS:
            model = models[m]
            converged = getattr(model, "converged_", None)
            body.append((
                str(k),
                m,
                "%.2f" % seconds[m],
                "" if m == "sklearn" else "%.1fx" % (seconds["sklearn"] / seconds[m]),
                "%.1f" % perplexity[m],
                "" if m == "sklearn" else "%.3f" % (perplexity[m] / perplexity["sklearn"]),
                str(model.n_iter_),
                "-" if converged is None else str(bool(converged)),
                "; ".join(caught[m]) or "none",
            ))
    print()
    print(format_defaults(header, body))


def format_defaults(header, body):
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]

    def fmt(row):
        return "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in body])


def main(argv=None):
    wall_start = time.perf_counter()
    args = parse_args(argv)
    X_train, X_test = load_corpus(args.corpus_dir)
    if args.defaults:
        with one_blas_thread(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            run_defaults(args, X_train, X_test)
        print()
        print("total wall time %.1f s" % (time.perf_counter() - wall_start))
        return

    try:
        from skvi.metrics import document_completion_perplexity
    except ImportError as exc:
        sys.exit("error: skvi.metrics.document_completion_perplexity is needed (%s)" % exc)

    print("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "scipy", "sklearn", "skvi", "gensim", "tomotopy", "threadpoolctl"):
        print("  %-14s %s" % (name, _version(name)))
    print("corpus: %s" % os.path.abspath(args.corpus_dir))
    print(
        "  train %d docs x %d words, %d tokens; test %d docs, %d tokens"
        % (X_train.shape[0], X_train.shape[1], X_train.sum(), X_test.shape[0], X_test.sum())
    )
    print(
        "K=%d, alpha=eta=1/K=%g, batch size %d, %d passes (CVB0 rows %d), %d Gibbs iterations, "
        "one thread" % (K, ALPHA, BATCH_SIZE, args.passes, args.cvb0_passes, args.gibbs_iter)
    )
    print()

    times = {}
    models = {}
    skipped = set()
    with one_blas_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for turn in range(args.repeat):
            for method in args.methods:
                if method in skipped:
                    continue
                try:
                    model, seconds = run_method(method, X_train, args)
                except Skipped as exc:
                    print("%-15s skipped: %s" % (method, exc), flush=True)
                    skipped.add(method)
                    continue
                times.setdefault(method, []).append(seconds)
                models.setdefault(method, model)  # every run is seeded alike
                print("%-15s fit %8.2f s   (run %d of %d)" % (method, seconds, turn + 1,
                                                            args.repeat), flush=True)
        rows = []
        for method in args.methods:
            if method not in times:
                continue
            perplexity = document_completion_perplexity(models[method], X_test, random_state=SEED)
            seconds = float(np.median(times[method]))
            rows.append({"method": method, "seconds": seconds, "perplexity": float(perplexity)})
            print(
                "%-15s fit %8.2f s (median of %s)   perplexity %9.1f"
                % (method, seconds, ", ".join("%.2f" % t for t in times[method]), perplexity),
                flush=True,
            )

    print()
    if rows:
        print(format_table(rows))
    else:
        print("no method ran")
    print()
    print("total wall time %.1f s" % (time.perf_counter() - wall_start))


if __name__ == "__main__":
    main()
