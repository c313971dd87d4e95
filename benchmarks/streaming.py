"""Streams of unknown length: total_samples='auto' against knowing N, and the two step rules.

One pass of ``partial_fit`` over a data set in chunks, with ``total_samples``
set to ``'auto'`` and to the true number of rows; ``'auto'`` is run with the
schedule's step sizes and with streaming variational Bayes' (Broderick et
al., ``|S| / (n0 + n_seen)``; ``skvi.engine.stream``), whatever the model's
own choice, and each fit is scored on held-out data.

LDA (K=20, ``batch_size=256``, ``learning_method='online'``) on 20 Newsgroups
in chunks of 1,000 documents: the first 6,000 training documents in file
order (the newsgroups one after another), all 11,314 in file order, and all
11,314 shuffled; scored by the document-completion perplexity of the first
1,500 test documents (each term's count split into two halves, the
document's topic proportions folded in on one half with the topics
``components_`` normalised and a symmetric prior 1/K, the other half
scored; lower is better).  The Bayesian Gaussian mixture (K=10 in d=10,
``batch_size=256``) on 60,000 rows of a known mixture in chunks of 5,000,
shuffled and sorted by component; scored by the held-out log-likelihood per
row (higher is better).  ``--quick`` runs the 6,000-document stream only.

    python benchmarks/streaming.py [--data DIR] [--seeds 0 1 2] [--quick]

DIR (default ``skvi.datasets.get_data_home()``) holds
``20newsgroups-bydate/`` with ``train.npz`` and ``test.npz``.
"""

import argparse
import importlib.util
import os
import sys
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import format_table  # noqa: E402

from skvi.datasets import get_data_home  # noqa: E402


def parse_args(argv=None):
    default = str(get_data_home())
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=default, help="folder of the data sets (now %(default)s)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--quick", action="store_true", help="the 6,000-document stream only")
    return p.parse_args(argv)


def with_stream_steps(cls, rule):
    """A subclass of ``cls`` whose ``'auto'`` streams take the step sizes of ``rule``."""

    class Ruled(cls):
        @property
        def _settings(self):
            settings = super()._settings
            settings.stream = {**settings.stream, "steps": rule}
            return settings

    Ruled.__name__ = cls.__name__
    return Ruled


class _NormalisedTopics:
    """An LDA scored by the generic fold-in: topics normalised, prior 1/K."""

    def __init__(self, model):
        self.components_ = model.components_
        self.doc_topic_prior_ = 1.0 / model.components_.shape[0]


def stream(est, X, chunk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for first in range(0, X.shape[0], chunk):
            est.partial_fit(X[first:first + chunk])
    return est


def lda_cases(args):
    from skvi import SVILatentDirichletAllocation
    from skvi.metrics import document_completion_perplexity

    folder = os.path.join(args.data, "20newsgroups-bydate")
    paths = [os.path.join(folder, name) for name in ("train.npz", "test.npz")]
    if not all(os.path.isfile(p) for p in paths):
        sys.exit("error: %s not found; pass --data DIR holding 20newsgroups-bydate/" % folder)
    train, test = (sp.load_npz(p).tocsr().astype(np.float64) for p in paths)
    test = test[:1500]
    shuffled = train[np.random.RandomState(0).permutation(train.shape[0])]
    streams = [("LDA 20NG first 6,000 in order", train[:6000])]
    if not args.quick:
        streams += [("LDA 20NG all in order", train), ("LDA 20NG all shuffled", shuffled)]

    def score(model):
        return document_completion_perplexity(_NormalisedTopics(model), test, random_state=0)

    for name, X in streams:
        def fit(total, rule, seed, X=X):
            cls = with_stream_steps(SVILatentDirichletAllocation, rule)
            est = cls(n_components=20, batch_size=256, learning_method="online",
                      total_samples=total, random_state=seed)
            return score(stream(est, X, 1000))
        yield name, X.shape[0], fit, "perplexity", False


def mixture_cases(args):
    from skvi import SVIBayesianGaussianMixture

    spec = importlib.util.spec_from_file_location(
        "gmm", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gmm.py"))
    gmm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gmm)
    mixture = gmm.make_mixture(0)
    X, z = gmm.draw(mixture, 60000, np.random.default_rng(1))
    X_test, _ = gmm.draw(mixture, 20000, np.random.default_rng(2))
    for name, rows in [("mixture shuffled", X), ("mixture sorted by component",
                                                  X[np.argsort(z, kind="stable")])]:
        def fit(total, rule, seed, rows=rows):
            cls = with_stream_steps(SVIBayesianGaussianMixture, rule)
            est = cls(n_components=10, learning_method="online", batch_size=256,
                      total_samples=total, random_state=seed)
            return stream(est, rows, 5000).score(X_test)
        yield name, rows.shape[0], fit, "log-lik / row", True


def main(argv=None):
    args = parse_args(argv)
    cases = list(lda_cases(args))
    if not args.quick:
        cases += list(mixture_cases(args))
    rows = []
    for name, n, fit, measure, higher in cases:
        medians = {}
        for label, total, rule in [("true N", float(n), "schedule"),
                                   ("auto, schedule", "auto", "schedule"),
                                   ("auto, streaming Bayes", "auto", "bayes")]:
            values = [fit(total, rule, seed) for seed in args.seeds]
            medians[label] = float(np.median(values))
            print("%-32s %-22s %s" % (name, label, " ".join("%.4g" % v for v in values)),
                  flush=True)
        ref = medians["true N"]
        for label, value in medians.items():
            worse = (ref - value) / abs(ref) if higher else (value - ref) / abs(ref)
            rows.append([name, measure, label, "%.5g" % value, "%+.1f%%" % (100 * worse)])
    print()
    print(format_table(["stream", "measure", "total_samples, steps", "median",
                        "worse than true N"], rows, [False, False, False, True, True]))


if __name__ == "__main__":
    main()
