"""Benchmark skvi's online HDP against LDA at several K and gensim's HdpModel on 20 Newsgroups.

What it measures
----------------
Every method fits a topic model on the training document-term count matrix,
single-threaded, in one process:

``skvi-hdp``
    ``skvi.SVIHierarchicalDirichletProcess(random_state=0)`` at its defaults
    (corpus truncation T = 150, document truncation K = 15, online steps on
    minibatches of 512 documents, ``max_iter='auto'``: as many passes as
    make 10,000 documents, one on this corpus).
``skvi-hdp-1pass``
    The same with ``max_iter=1``: one pass over the corpus, as gensim's
    default makes.
``skvi-hdp-rule``
    The same with ``max_iter=10``: passes until the engine's online rule
    stops the fit (``tol=1e-4``), ten at most.  Not run unless asked for
    with ``--methods``.
``skvi-lda-K``
    ``skvi.SVILatentDirichletAllocation(n_components=K, random_state=0)`` at
    its defaults (scikit-learn's: batch coordinate ascent, 10 passes,
    ``alpha = eta = 1/K``) for K in 10, 20, 50, 100.
``gensim-hdp``
    ``gensim.models.HdpModel(corpus, id2word, random_state=0)`` at gensim's
    defaults (T = 150, K = 15, alpha = gamma = 1, eta = 0.01, chunks of 256
    documents, ``kappa = 1``, ``tau = 64``: one pass over the corpus).  The
    corpus is the list of ``(word_id, count)`` documents from
    ``gensim.matutils.Sparse2Corpus``, built before the clock starts.
    Skipped with a note when gensim is not installed.

The fit time is the wall time (``time.perf_counter``) of the fit call alone,
and its CPU time (``time.process_time``, this process's): on a machine shared
with other work the CPU time is the fairer comparison.  BLAS and OpenMP are
limited to one thread.  "passes" is ``n_iter_`` for skvi
(gensim's default makes one).

Every model is scored by
``skvi.metrics.document_completion_perplexity(model, X_test, random_state=0)``:
each test document's tokens are split in halves, the document's topic
proportions are fitted to the first half with the topics fixed, and the
perplexity of the second half is reported.  skvi's HDP folds documents in by
its own local step (``heldout_word_probabilities``), LDA by its E-step.
gensim's HdpModel has no fold-in that the metric can call; it is scored as
the LDA that gensim's own ``hdp_to_lda()`` makes of it (``alpha`` the corpus
stick weights, the topics ``lambda + eta``), folded in by the LDA E-step:
an approximation of its HDP fold-in, said so in the table.

``--hdp KEY=VALUE`` sets a parameter of both skvi HDP fits (for trying
other settings).  ``--repeats R`` runs every fit R times, the methods taking turns within
each round (so that a change in the machine's load falls on all of them),
and reports the median wall and CPU seconds with their range; the fits are
deterministic, so each method's first fit is scored.

"topics used" is the number of topics holding at least 1% of the training
tokens' expected assignments (``(lambda_t - eta).sum() / sum over topics``).

How to run
----------
::

    pip install -e . gensim
    python benchmarks/hdp.py [CORPUS_DIR]
    python benchmarks/hdp.py --methods skvi-hdp,skvi-hdp-1pass,gensim-hdp
    python benchmarks/hdp.py --methods skvi-hdp,gensim-hdp --repeats 5

CORPUS_DIR holds ``train.npz`` and ``test.npz`` (scipy.sparse CSR
document-term counts); it defaults to ``$SKVI_DATA/20newsgroups-bydate`` with
``SKVI_DATA`` defaulting to ``skvi.datasets.get_data_home()``.
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
from _common import Skipped, format_table, key_value, one_blas_thread, version  # noqa: E402

from skvi.datasets import get_data_home  # noqa: E402

SEED = 0
LDA_KS = (10, 20, 50, 100)
ALL_METHODS = (
    ["skvi-hdp", "skvi-hdp-1pass", "skvi-hdp-rule"]
    + ["skvi-lda-%d" % k for k in LDA_KS]
    + ["gensim-hdp"]
)
DEFAULT_METHODS = [m for m in ALL_METHODS if m != "skvi-hdp-rule"]
USED_SHARE = 0.01


class _Topics:
    """What document_completion_perplexity reads of an LDA: the topics and alpha."""

    def __init__(self, components, doc_topic_prior):
        self.components_ = np.asarray(components, dtype=np.float64)
        self.doc_topic_prior_ = np.asarray(doc_topic_prior, dtype=np.float64)


def parse_args(argv=None):
    default_dir = str(get_data_home() / "20newsgroups-bydate")
    parser = argparse.ArgumentParser(
        description="Fit skvi's HDP, skvi's LDA at K = 10, 20, 50, 100 and gensim's HdpModel; "
        "report fit time, passes, document-completion perplexity and topics used."
    )
    parser.add_argument(
        "corpus_dir",
        nargs="?",
        default=default_dir,
        help="folder with train.npz and test.npz (default: %(default)s)",
    )
    parser.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help="comma-separated subset of: %s (default: all but skvi-hdp-rule)"
        % ", ".join(ALL_METHODS),
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="rounds of fits, the methods taking turns; medians reported (default: %(default)s)",
    )
    parser.add_argument(
        "--hdp",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter of skvi's HDP fits (repeatable), e.g. --hdp batch_size=512",
    )
    args = parser.parse_args(argv)
    args.hdp = dict(args.hdp)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown or not methods:
        parser.error("unknown method(s) %s" % ", ".join(unknown))
    args.methods = [m for m in ALL_METHODS if m in methods]
    return args


def load_corpus(corpus_dir):
    paths = [os.path.join(corpus_dir, name) for name in ("train.npz", "test.npz")]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        sys.exit(
            "error: %s not found; pass the folder holding train.npz and test.npz as CORPUS_DIR "
            "or set SKVI_DATA" % ", ".join(missing)
        )
    X_train, X_test = (sp.load_npz(p).tocsr().astype(np.float64) for p in paths)
    return X_train, X_test


def topics_used(lam, eta):
    """Topics holding at least USED_SHARE of the expected token assignments."""
    mass = np.maximum(np.asarray(lam, dtype=np.float64) - eta, 0.0).sum(axis=1)
    return int(np.sum(mass >= USED_SHARE * mass.sum()))


def fit_skvi_hdp(X_train, **kw):
    from skvi import SVIHierarchicalDirichletProcess

    model = SVIHierarchicalDirichletProcess(random_state=SEED, **kw)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(X_train)
    seconds = (time.perf_counter() - start, time.process_time() - cpu)
    used = topics_used(model.components_, model.topic_word_prior)
    return model, seconds, model.n_iter_, used, ""


def fit_skvi_lda(X_train, k):
    from skvi import SVILatentDirichletAllocation

    model = SVILatentDirichletAllocation(n_components=k, random_state=SEED)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(X_train)
    seconds = (time.perf_counter() - start, time.process_time() - cpu)
    used = topics_used(model.components_, model.topic_word_prior_)
    return model, seconds, model.n_iter_, used, ""


def fit_gensim_hdp(X_train):
    try:
        from gensim.matutils import Sparse2Corpus
        from gensim.models import HdpModel
    except ImportError as exc:
        raise Skipped("gensim is not installed (%s)" % exc)
    corpus = list(Sparse2Corpus(X_train.astype(np.int64), documents_columns=False))
    id2word = {i: str(i) for i in range(X_train.shape[1])}
    start, cpu = time.perf_counter(), time.process_time()
    model = HdpModel(corpus, id2word, random_state=SEED)
    seconds = (time.perf_counter() - start, time.process_time() - cpu)
    alpha, _ = model.hdp_to_lda()
    lam = model.m_lambda + model.m_eta
    holder = _Topics(lam, alpha)
    used = topics_used(lam, model.m_eta)
    return holder, seconds, 1, used, "scored as gensim's hdp_to_lda() LDA"


def run_method(method, X_train, hdp):
    if method == "skvi-hdp":
        return fit_skvi_hdp(X_train, **hdp)
    if method == "skvi-hdp-1pass":
        return fit_skvi_hdp(X_train, **dict(hdp, max_iter=1))
    if method == "skvi-hdp-rule":
        return fit_skvi_hdp(X_train, **dict(hdp, max_iter=10))
    if method == "gensim-hdp":
        return fit_gensim_hdp(X_train)
    return fit_skvi_lda(X_train, int(method.rsplit("-", 1)[1]))


def main(argv=None):
    wall_start = time.perf_counter()
    args = parse_args(argv)
    X_train, X_test = load_corpus(args.corpus_dir)
    from skvi.metrics import document_completion_perplexity

    print("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "scipy", "sklearn", "skvi", "gensim"):
        print("  %-14s %s" % (name, version(name)))
    print(
        "train %d docs x %d words, %d tokens; test %d docs, %d tokens; one thread"
        % (X_train.shape[0], X_train.shape[1], X_train.sum(), X_test.shape[0], X_test.sum())
    )
    print()
    results = {}
    with one_blas_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for round_ in range(args.repeats):
            for method in args.methods:
                if method in results and results[method] is None:
                    continue  # skipped in the first round
                try:
                    model, seconds, passes, used, note = run_method(method, X_train, args.hdp)
                except Skipped as exc:
                    print("%-14s skipped: %s" % (method, exc), flush=True)
                    results[method] = None
                    continue
                if method not in results:
                    perplexity = document_completion_perplexity(model, X_test, random_state=SEED)
                    results[method] = [[], passes, perplexity, used, note]
                results[method][0].append(seconds)
                print(
                    "%-14s fit %8.1f s (cpu %8.1f s)  passes %2d  perplexity %8.1f  "
                    "topics used %3d  %s  (round %d)"
                    % (method, seconds[0], seconds[1], passes, results[method][2], used, note,
                       round_ + 1),
                    flush=True,
                )
    rows = []
    for method in args.methods:
        if results.get(method) is None:
            continue
        times, passes, perplexity, used, note = results[method]
        wall, cpu = np.array(times).T
        rows.append((method, (wall, cpu), passes, perplexity, used, note))
    if rows:
        best_lda = min((r[3] for r in rows if r[0].startswith("skvi-lda")), default=None)
        header = [
            "method", "fit [s]", "cpu [s]", "passes", "perplexity", "vs best LDA", "topics used",
            "note",
        ]

        def seconds(values):
            text = "%.1f" % np.median(values)
            if values.size > 1:
                text += " (%.1f-%.1f)" % (values.min(), values.max())
            return text

        body = [
            [
                m,
                seconds(s[0]),
                seconds(s[1]),
                str(p),
                "%.1f" % perp,
                ""
                if best_lda is None
                else "best"
                if m.startswith("skvi-lda") and perp == best_lda
                else "%+.1f%%" % (100.0 * (perp / best_lda - 1.0)),
                str(u),
                note,
            ]
            for m, s, p, perp, u, note in rows
        ]
        print()
        if args.repeats > 1:
            print("%d rounds: median seconds (range)" % args.repeats)
        print(format_table(header, body, [False, True, True, True, True, True, True, False]))
    print()
    print("total wall time %.1f s" % (time.perf_counter() - wall_start))


if __name__ == "__main__":
    main()
