"""What step safety costs a step: the same online fits with and without it, paired.

Each model takes ``--passes`` online passes at its defaults (``tol=0``, so
both sides take the same steps), with ``step_safety=True`` and ``False`` in
turns over ``--seeds`` seeds; the table gives the median time per step of
each and the median of the paired ratios.  ``history_['safety_time']``
counts, besides the probe, the moments of a tried step that the model
caches for its next local step; this A/B measures what safety adds.

    python benchmarks/step_safety_cost.py [--data DIR] [--seeds 8]
"""

import argparse
import importlib.util
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Skipped, format_table, one_blas_thread  # noqa: E402


def _defaults_module():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("defaults", os.path.join(here, "defaults.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    defaults = _defaults_module()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=defaults.parse_args([]).data)
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--passes", type=int, default=2)
    args = p.parse_args(argv)
    from skvi import (SVILogisticRegression, SVIMatrixFactorization,
                      SVIPoissonRegression)

    cases = []
    try:
        X, y, _, _ = defaults.a9a(args.data)
        cases.append(("logistic regression, a9a", SVILogisticRegression, X, y))
    except Skipped as exc:
        print("a9a skipped: %s" % exc)
    X, y, _, _ = defaults.counts(False)
    cases.append(("Poisson regression, 20,000 x 10", SVIPoissonRegression, X, y))
    folder = os.path.join(args.data, "movielens-100k")
    if os.path.isfile(os.path.join(folder, "u1.base")):
        import numpy as np

        train = np.loadtxt(os.path.join(folder, "u1.base"), dtype=np.int64)
        cases.append(("matrix factorization, MovieLens 100k, online",
                      lambda **kw: SVIMatrixFactorization(learning_method="online", **kw),
                      train[:, :2], train[:, 2].astype(float)))
    rows = []
    with one_blas_thread():
        for name, make, X, y in cases:
            per = {True: [], False: []}
            for seed in range(args.seeds):
                for safe in ((True, False) if seed % 2 else (False, True)):
                    est = make(random_state=seed, step_safety=safe, max_iter=args.passes, tol=0)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        start = time.perf_counter()
                        est.fit(X, y)
                        seconds = time.perf_counter() - start
                    per[safe].append(seconds / est.n_batch_iter_)
            ratios = [a / b for a, b in zip(per[True], per[False])]
            rows.append([name, "%.3f" % (1e3 * statistics.median(per[True])),
                         "%.3f" % (1e3 * statistics.median(per[False])),
                         "%+.1f%%" % (100 * (statistics.median(ratios) - 1))])
            print("  ".join(rows[-1]), flush=True)
    print()
    print(format_table(["online fit", "ms / step, safety on", "off", "safety's cost"], rows,
                       [False, True, True, True]))


if __name__ == "__main__":
    main()
