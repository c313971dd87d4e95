"""n_jobs=2 against n_jobs=1 for every estimator that takes n_jobs, in one run.

The engine splits each minibatch into ``n_jobs`` blocks whose local steps and
statistics run on threads (the map-reduce split of ``docs/engine.md``); LDA
splits its compiled E-step the same way.  This script fits each estimator
with one and with two threads, alternating (1, 2, 2, 1, ...) for
``--repeats`` rounds, BLAS held at one thread so the only parallelism is the
engine's, and prints the median fit times and their ratio.

    python benchmarks/threads.py [--repeats 5] [--data DIR] [--only TEXT]

Data: 10^6 x 10 Gaussian rows (GaussianGammaVB, batch); a9a
(``SVILogisticRegression``, batch, quadrature expectations); 20 Newsgroups
train (``SVILatentDirichletAllocation``, batch and online; and
``SVICorrelatedTopicModel``, K = 20, diagonal ``q``, its batch fit and its
fold-in of the test documents by ``transform``).  DIR (default
``skvi.datasets.get_data_home()``: ``$SKVI_DATA``, or ``../shared/data`` beside a
checkout, else ``~/skvi_data``)
holds ``a9a-adult-libsvm/`` and ``20newsgroups-bydate/``; a missing folder
skips its rows with a message.  ``SVIMatrixFactorization`` takes no
``n_jobs``: split into two blocks, MovieLens u1's batch fit ran at 0.66x
(every block touches most users and items, so their per-node work is done
twice, and scipy's sparse products hold the GIL).
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Skipped, format_table, one_blas_thread  # noqa: E402

from skvi.datasets import get_data_home  # noqa: E402


def parse_args(argv=None):
    default = str(get_data_home())
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=default, help="folder of the data sets (now %(default)s)")
    p.add_argument("--repeats", type=int, default=5, help="rounds of interleaved fits")
    p.add_argument("--only", default="", help="run the rows whose label contains this text")
    return p.parse_args(argv)


def gaussian_gamma(data):
    from skvi import GaussianGammaVB

    X = np.random.RandomState(0).normal(3.0, 2.0, size=(1_000_000, 10))
    return lambda n_jobs: GaussianGammaVB(max_iter=5, tol=0, n_jobs=n_jobs).fit(X)


def logistic(data):
    from skvi import SVILogisticRegression
    from skvi.datasets import DataNotFoundError, fetch_libsvm

    try:
        X, y = fetch_libsvm("a9a", data_home=data, download_if_missing=False, return_X_y=True)
    except DataNotFoundError as exc:
        raise Skipped("%s (pass --data)" % exc)
    return lambda n_jobs: SVILogisticRegression(
        learning_method="batch", expectation="quadrature", max_iter=5, tol=0,
        random_state=0, n_jobs=n_jobs,
    ).fit(X, y)


def lda(method):
    def make(data):
        from skvi import SVILatentDirichletAllocation

        path = os.path.join(data, "20newsgroups-bydate", "train.npz")
        if not os.path.isfile(path):
            raise Skipped("%s not found (pass --data)" % path)
        X = sp.load_npz(path).tocsr().astype(np.float64)
        return lambda n_jobs: SVILatentDirichletAllocation(
            n_components=20, learning_method=method, max_iter=3, evaluate_every=0,
            random_state=0, n_jobs=n_jobs,
        ).fit(X)

    return make


def ctm(part):
    def make(data):
        from skvi import SVICorrelatedTopicModel

        folder = os.path.join(data, "20newsgroups-bydate")
        if not os.path.isfile(os.path.join(folder, "train.npz")):
            raise Skipped("%s not found (pass --data)" % folder)
        X = sp.load_npz(os.path.join(folder, "train.npz")).tocsr().astype(np.float64)
        model = SVICorrelatedTopicModel(n_components=20, covariance="diagonal", max_iter=3,
                                        tol=0, init_passes=1, random_state=0)
        if part == "fit":
            return lambda n_jobs: model.set_params(n_jobs=n_jobs).fit(X)
        test = sp.load_npz(os.path.join(folder, "test.npz")).tocsr().astype(np.float64)
        model.fit(X)
        return lambda n_jobs: model.set_params(n_jobs=n_jobs).transform(test)

    return make


CASES = [
    ("GaussianGammaVB batch, 10^6 x 10", gaussian_gamma),
    ("SVILogisticRegression batch, a9a", logistic),
    ("SVILatentDirichletAllocation batch, 20NG", lda("batch")),
    ("SVILatentDirichletAllocation online, 20NG", lda("online")),
    ("SVICorrelatedTopicModel batch fit, 20NG", ctm("fit")),
    ("SVICorrelatedTopicModel transform, 20NG test", ctm("transform")),
]


def main(argv=None):
    args = parse_args(argv)
    print("cores: %d; BLAS limited to one thread; %d interleaved rounds" % (os.cpu_count(), args.repeats))
    rows = []
    for label, make in CASES:
        if args.only not in label:
            continue
        try:
            fit = make(args.data)
        except Skipped as exc:
            print("%s: skipped (%s)" % (label, exc))
            continue
        times = {1: [], 2: []}
        with one_blas_thread(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit(1)  # warm-up: imports, caches
            for r in range(args.repeats):
                for n_jobs in ((1, 2) if r % 2 == 0 else (2, 1)):
                    start = time.perf_counter()
                    fit(n_jobs)
                    times[n_jobs].append(time.perf_counter() - start)
        one, two = np.median(times[1]), np.median(times[2])
        print("%s: n_jobs=1 %.3f s, n_jobs=2 %.3f s" % (label, one, two), flush=True)
        rows.append([label, "%.3f" % one, "%.3f" % two, "%.2fx" % (one / two)])
    print()
    print(format_table(["estimator", "n_jobs=1 [s]", "n_jobs=2 [s]", "speed-up"], rows,
                       [False, True, True, True]))


if __name__ == "__main__":
    main()
