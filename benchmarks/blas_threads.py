"""BLAS threads of a dense GLM fit: the default, one thread, and on a busy machine.

``SVILogisticRegression()`` with its defaults on dense a9a (32,561 x 123),
timed

* ``default``: as a user runs it (the fit holds BLAS to one thread itself
  when X has at most ``SMALL_BLAS_FEATURES`` columns,
  ``skvi/models/glm/resources.py``);
* ``no limit``: the same with that limit switched off, BLAS at its own
  thread count (how fits ran before the limit);
* ``one thread``: under ``threadpool_limits(limits=1)``, what
  ``OPENBLAS_NUM_THREADS=1`` does;

each on the machine as it is, and with ``--busy`` background processes
spinning (a ``multiprocessing`` spin loop each, stopped after
``--busy-seconds`` at most and ended when the round ends).  The rounds
interleave the loads and the variants (rotated each round); the table gives
the median fit time of each, and its ratio to ``one thread`` under the same
load.

    python benchmarks/blas_threads.py [--repeats 5] [--busy 2] [--data DIR]

DIR (default ``skvi.datasets.get_data_home()``: ``$SKVI_DATA``, or
``../shared/data`` beside a checkout, else ``~/skvi_data``) holds
``a9a-adult-libsvm/``.
"""

import argparse
import multiprocessing as mp
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import format_table, one_blas_thread  # noqa: E402

from skvi.datasets import get_data_home  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(get_data_home()), help="data folder (%(default)s)")
    p.add_argument("--repeats", type=int, default=5, help="rounds of interleaved fits")
    p.add_argument("--busy", type=int, default=2, help="busy background processes")
    p.add_argument("--busy-seconds", type=float, default=600.0,
                   help="longest a spinner runs (it is ended with its round anyway)")
    return p.parse_args(argv)


def _spin(stop, seconds):
    end = time.monotonic() + seconds
    x = 0
    while not stop.is_set() and time.monotonic() < end:
        for _ in range(10000):
            x += 1


class Busy:
    """``n`` processes spinning a core each while the context is open."""

    def __init__(self, n, seconds):
        self.n, self.seconds = n, seconds

    def __enter__(self):
        self.stop = mp.Event()
        self.procs = [mp.Process(target=_spin, args=(self.stop, self.seconds), daemon=True)
                      for _ in range(self.n)]
        for p in self.procs:
            p.start()
        time.sleep(0.2)  # let them reach their loops
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                p.terminate()
                p.join()


def main(argv=None):
    args = parse_args(argv)
    from threadpoolctl import threadpool_info

    import skvi.models.glm.resources as resources
    from skvi import SVILogisticRegression
    from skvi.datasets import fetch_libsvm

    X, y = fetch_libsvm("a9a", data_home=args.data, download_if_missing=False, return_X_y=True)
    X = X.toarray()
    limit = resources.SMALL_BLAS_FEATURES

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            SVILogisticRegression(random_state=0).fit(X, y)
            return time.perf_counter() - t

    def default():
        return fit()

    def no_limit():
        resources.SMALL_BLAS_FEATURES = -1
        try:
            return fit()
        finally:
            resources.SMALL_BLAS_FEATURES = limit

    def one_thread():
        with one_blas_thread():
            return fit()

    variants = [("default", default), ("no limit", no_limit), ("one thread", one_thread)]
    loads = ["as is", f"{args.busy} busy processes"]
    times = {(load, name): [] for load in loads for name, _ in variants}
    fit()  # warm-up: imports, the libraries' first calls
    for r in range(args.repeats):
        order = variants[r % 3:] + variants[:r % 3]
        for load in (loads if r % 2 == 0 else loads[::-1]):
            busy = Busy(args.busy if load != "as is" else 0, args.busy_seconds)
            with busy:
                for name, run in order:
                    times[(load, name)].append(run())
        print(f"round {r + 1}/{args.repeats} done", file=sys.stderr)

    blas = ", ".join(f"{i['internal_api']} {i['num_threads']}"
                     for i in threadpool_info() if i["user_api"] == "blas")
    print(f"a9a dense, {X.shape[0]} x {X.shape[1]}; {os.cpu_count()} CPUs; "
          f"BLAS libraries and their threads: {blas}; load average at the end: "
          + " ".join(f"{v:.1f}" for v in os.getloadavg()))
    print(f"{args.repeats} rounds, medians of fit time (s)\n")
    body = []
    for load in loads:
        base = np.median(times[(load, "one thread")])
        for name, _ in variants:
            t = np.median(times[(load, name)])
            body.append([load, name, f"{t:.2f}", f"{t / base:.2f}",
                         f"{min(times[(load, name)]):.2f}-{max(times[(load, name)]):.2f}"])
    print(format_table(["load", "BLAS threads", "median s", "/ one thread", "range s"],
                       body, [False, False, True, True, True]))


if __name__ == "__main__":
    main()
