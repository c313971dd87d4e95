"""Speed-up of n_jobs threads over one, for every estimator that takes n_jobs, in one run.

The engine cuts each minibatch into ``n_jobs`` blocks whose local steps and
statistics run on threads, and runs the global step's column blocks on them
too (the executor of ``docs/engine.md``).  This script fits each estimator
with every thread count of ``--threads``, the counts interleaved round by
round (rotated each round), BLAS held at one thread so the only parallelism
is the engine's, and prints for each count the median fit time, its speed-up
over one thread and its efficiency (speed-up / threads), with the fit's
serial share: ``history_``'s ``serial_time`` over the fit's wall time, the
part outside the executor's parallel maps that bounds the speed-up (Amdahl).

    python benchmarks/threads.py [--threads 1 2] [--repeats 5] [--data DIR]
                                 [--only TEXT] [--replicate K] [--lda-batch-size B]

Data: 10^6 x 10 Gaussian rows (GaussianGammaVB, batch); a9a
(``SVILogisticRegression``, batch, quadrature expectations); 20 Newsgroups
train (``SVILatentDirichletAllocation``, batch for ``--lda-passes`` passes
and online for one pass in minibatches of ``--lda-batch-size`` documents;
``SVICorrelatedTopicModel``, K = 20, diagonal ``q``, its batch fit and its
fold-in of the test documents by ``transform``), its rows repeated
``--replicate`` times.  DIR (default ``skvi.datasets.get_data_home()``:
``$SKVI_DATA``, or ``../shared/data`` beside a checkout, else
``~/skvi_data``) holds ``a9a-adult-libsvm/`` and ``20newsgroups-bydate/``; a
missing folder skips its rows with a message.  ``SVIMatrixFactorization``
takes no ``n_jobs``: split into two blocks, MovieLens u1's batch fit ran at
0.66x (every block touches most users and items, so their per-node work is
done twice, and scipy's sparse products hold the GIL).
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
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                   help="thread counts to compare (the first is the baseline)")
    p.add_argument("--replicate", type=int, default=1,
                   help="repeat 20 Newsgroups' documents this many times")
    p.add_argument("--lda-batch-size", type=int, default=2048,
                   help="documents per minibatch of the online LDA fit")
    p.add_argument("--lda-passes", type=int, default=2, help="passes of the batch LDA fit")
    return p.parse_args(argv)


def gaussian_gamma(data, args):
    from skvi import GaussianGammaVB

    X = np.random.RandomState(0).normal(3.0, 2.0, size=(1_000_000, 10))
    return lambda n_jobs: GaussianGammaVB(max_iter=5, tol=0, n_jobs=n_jobs).fit(X)


def logistic(data, args):
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


def _newsgroups(data, part, replicate):
    path = os.path.join(data, "20newsgroups-bydate", part + ".npz")
    if not os.path.isfile(path):
        raise Skipped("%s not found (pass --data)" % path)
    X = sp.load_npz(path).tocsr().astype(np.float64)
    return sp.vstack([X] * replicate, format="csr") if replicate > 1 else X


def lda(method):
    def make(data, args):
        from skvi import SVILatentDirichletAllocation

        X = _newsgroups(data, "train", args.replicate)
        online = method == "online"
        return lambda n_jobs: SVILatentDirichletAllocation(
            n_components=20, learning_method=method, evaluate_every=0,
            max_iter=1 if online else args.lda_passes, batch_size=args.lda_batch_size,
            random_state=0, n_jobs=n_jobs,
        ).fit(X)

    return make


def ctm(part):
    def make(data, args):
        from skvi import SVICorrelatedTopicModel

        X = _newsgroups(data, "train", args.replicate)
        model = SVICorrelatedTopicModel(n_components=20, covariance="diagonal", max_iter=3,
                                        tol=0, init_passes=1, random_state=0)
        if part == "fit":
            return lambda n_jobs: model.set_params(n_jobs=n_jobs).fit(X)
        test = _newsgroups(data, "test", 1)
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


def _serial_share(result, seconds):
    """``history_``'s serial seconds over the fit's wall time (None for a transform)."""
    history = getattr(result, "history_", None)
    if history is None or "serial_time" not in history.dtype.names or not seconds > 0:
        return None
    return float(np.sum(history["serial_time"])) / seconds


def main(argv=None):
    args = parse_args(argv)
    counts = list(dict.fromkeys(args.threads))
    print("cores: %d; BLAS limited to one thread; %d interleaved rounds; threads %s"
          % (os.cpu_count(), args.repeats, counts))
    rows = []
    for label, make in CASES:
        if args.only not in label:
            continue
        try:
            fit = make(args.data, args)
        except Skipped as exc:
            print("%s: skipped (%s)" % (label, exc))
            continue
        times = {n: [] for n in counts}
        serial = {n: [] for n in counts}
        with one_blas_thread(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit(counts[0])  # warm-up: imports, caches
            for r in range(args.repeats):
                order = counts[r % len(counts):] + counts[:r % len(counts)]
                for n_jobs in order:
                    start = time.perf_counter()
                    result = fit(n_jobs)
                    seconds = time.perf_counter() - start
                    times[n_jobs].append(seconds)
                    share = _serial_share(result, seconds)
                    if share is not None:
                        serial[n_jobs].append(share)
        base = np.median(times[counts[0]])
        for n in counts:
            t = np.median(times[n])
            speedup = base / t * counts[0]
            share = "%.1f%%" % (100 * np.median(serial[n])) if serial[n] else "-"
            rows.append([label, str(n), "%.3f" % t, "%.2fx" % speedup,
                         "%.0f%%" % (100 * speedup / n), share])
            print("%s: n_jobs=%d %.3f s (%.2fx), serial %s" % (label, n, t, speedup, share),
                  flush=True)
    print()
    print(format_table(["estimator", "n_jobs", "median [s]", "speed-up", "efficiency",
                        "serial share"], rows, [False, True, True, True, True, True]))


if __name__ == "__main__":
    main()
