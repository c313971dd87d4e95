"""A stream of unknown length: total_samples='auto' against knowing N, in one run.

One pass of ``partial_fit`` over the 20 Newsgroups training documents in
chunks of 1,000 (shuffled by the seed), with ``total_samples`` set to
``'auto'`` (the running count), to the true number of documents, and to
scikit-learn's default guess 1e6; each fit is scored by the held-out
document-completion perplexity of the test documents (lower is better).

    python benchmarks/streaming.py [--data DIR] [--seeds 0 1 2]

DIR (default ``skvi.datasets.get_data_home()``: ``$SKVI_DATA``, or
``../shared/data`` beside a checkout, else ``~/skvi_data``) holds ``20newsgroups-bydate/`` with ``train.npz`` and
``test.npz``.
"""

import argparse
import os
import sys
import time
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
    p.add_argument("--chunk", type=int, default=1000, help="rows per partial_fit call")
    p.add_argument("--n-components", type=int, default=20)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    folder = os.path.join(args.data, "20newsgroups-bydate")
    paths = [os.path.join(folder, name) for name in ("train.npz", "test.npz")]
    if not all(os.path.isfile(p) for p in paths):
        sys.exit("error: %s not found; pass --data DIR holding 20newsgroups-bydate/" % folder)
    from skvi import SVILatentDirichletAllocation
    from skvi.metrics import document_completion_perplexity

    train, test = (sp.load_npz(p).tocsr().astype(np.float64) for p in paths)
    n = train.shape[0]
    settings = [("auto", "auto"), ("true N", float(n)), ("1e6", 1e6)]
    print("20 Newsgroups: %d train, %d test documents, K=%d, chunks of %d"
          % (n, test.shape[0], args.n_components, args.chunk))
    results = {label: [] for label, _ in settings}
    for seed in args.seeds:
        order = np.random.RandomState(seed).permutation(n)
        for label, total in settings:
            lda = SVILatentDirichletAllocation(
                n_components=args.n_components, total_samples=total, random_state=seed
            )
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for first in range(0, n, args.chunk):
                    lda.partial_fit(train[order[first : first + args.chunk]])
            seconds = time.perf_counter() - start
            perplexity = document_completion_perplexity(lda, test, random_state=0)
            results[label].append(perplexity)
            print("seed %d  total_samples=%-7s perplexity %8.1f  (%.1f s)"
                  % (seed, label, perplexity, seconds), flush=True)
    rows = []
    reference = np.median(results["true N"])
    for label, values in results.items():
        med = np.median(values)
        rows.append([label, " ".join("%.0f" % v for v in values), "%.0f" % med,
                     "%.3f" % (med / reference)])
    print()
    print(format_table(["total_samples", "perplexity per seed", "median", "vs true N"], rows,
                       [False, True, True, True]))


if __name__ == "__main__":
    main()
