"""Fits on a dask cluster against the in-process fit, with the per-step overhead.

Two parts (``--part``):

``lda``
    LDA (K = 20) on the 20 Newsgroups training set replicated ``--replicate``
    times (10 by default: 113,140 documents), the blocks built on the workers
    from the corpus file.  Batch fits (``--passes`` coordinate-ascent steps)
    and, with ``--online``, online fits at the default ``batch_size``.
``gaussian-gamma``
    ``GaussianGammaVB`` on ``--gg-rows`` x 10 synthetic rows (1e8 by default,
    float32) generated blockwise on the workers; the in-process fit runs on
    ``--gg-inprocess-rows`` rows (the whole data set would not fit in one
    process's memory in float64), and the cluster fits on that size too.

Each configuration runs ``--repeats`` times, the configurations taking turns
(1 worker, 2 workers, in-process), and the table gives medians.  Every
worker is one process with one thread (BLAS held to one thread), on this
machine's loopback.  The per-step overhead is the wall time per step minus
the in-process compute per step divided by the workers; the bytes per step
are what the client scattered (the globals, the model) and gathered (summed
statistics, counts, bounds), measured by :func:`skvi.distributed.traffic`.

From the measured compute and overhead per step the script projects the
speed-up on P workers with the cost model of ``docs/scaling.md``:
``T(P) = C / P + a + r * ceil(log2 P)``, ``a`` the fixed overhead of a step
(one worker), ``r`` the cost of one level of the statistics' tree reduction
(two workers minus one).

Run: ``python benchmarks/distributed.py [CORPUS_DIR] --part lda``; needs
``pip install 'skvi[dask]'``.
"""

import argparse
import logging
import math
import os
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

# This file's name is the package's: import the package, not this file,
# here and in the workers (which start with this process's sys.path).
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
try:
    import distributed  # noqa: F401, E402
finally:
    sys.path.append(_HERE)
from _common import format_table, one_blas_thread, version  # noqa: E402


def parse_args(argv=None):
    from skvi.datasets import get_data_home

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus_dir", nargs="?",
                        default=str(get_data_home() / "20newsgroups-bydate"))
    parser.add_argument("--part", choices=["lda", "gaussian-gamma", "all"], default="all")
    parser.add_argument("--replicate", type=int, default=10)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--online", action="store_true",
                        help="also time online LDA at the default batch_size (one pass)")
    parser.add_argument("--blocks-per-worker", type=int, default=4)
    parser.add_argument("--gg-rows", type=float, default=1e8)
    parser.add_argument("--gg-inprocess-rows", type=float, default=1e7)
    parser.add_argument("--gg-block-rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args(argv)


# ------------------------------------------------------------- data blocks
def _lda_block(path, rows):
    """Rows of the corpus (indices modulo its size): built on a worker."""
    X = sp.load_npz(path).tocsr()
    return X[np.asarray(rows) % X.shape[0]].astype(np.float64)


def lda_dask_corpus(path, n_docs, n_features, n_blocks):
    import dask
    import dask.array as da

    bounds = np.linspace(0, n_docs, n_blocks + 1).astype(int)
    meta = sp.csr_matrix((0, n_features))
    parts = [
        da.from_delayed(dask.delayed(_lda_block)(path, np.arange(a, b)),
                        shape=(b - a, n_features), dtype=np.float64, meta=meta)
        for a, b in zip(bounds[:-1], bounds[1:])
    ]
    return da.concatenate(parts, axis=0)


def gg_dask_rows(n_rows, block_rows):
    import dask.array as da

    rs = da.random.RandomState(0)
    loc = np.linspace(-2.0, 3.0, 10)
    return (rs.normal(size=(int(n_rows), 10), chunks=(block_rows, 10)) * 1.5 + loc).astype(
        np.float32)


# ----------------------------------------------------------------- timing
def _cluster(n_workers):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None, silence_logs=40)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    return cluster, Client(cluster, set_as_default=False)


def _timed_fit(make, X, client):
    from skvi.distributed import fit_on_cluster, traffic

    est = make()
    with traffic() as t:
        start = time.perf_counter()
        if client is None:
            est.fit(X)
        else:
            fit_on_cluster(est, X, client=client)
        elapsed = time.perf_counter() - start
    return est, elapsed, t


def run_configs(configs, repeats):
    """``configs``: name -> (make, X, client); interleaved repeats; medians."""
    times = {name: [] for name in configs}
    last = {}
    for _ in range(repeats):
        for name, (make, X, client) in configs.items():
            est, elapsed, t = _timed_fit(make, X, client)
            times[name].append(elapsed)
            last[name] = (est, t)
    return {name: (statistics.median(v), v, *last[name]) for name, v in times.items()}


def overhead_rows(results, inprocess, steps_of):
    base_time = results[inprocess][0]
    rows, per_step = [], {}
    for name, (median, _, est, t) in results.items():
        steps = max(steps_of(est), 1)
        workers = 1 if name == inprocess else int(name.split()[0])
        compute = base_time / steps_of(results[inprocess][2]) / workers
        step = median / steps
        over = step - compute if name != inprocess else 0.0
        per_step[workers if name != inprocess else 0] = (step, compute, over)
        rows.append([
            name, f"{median:.2f}", f"{base_time / median:.2f}", str(steps),
            f"{1000 * step:.1f}", f"{1000 * compute:.1f}",
            "" if name == inprocess else f"{1000 * over:.1f} ({100 * over / compute:.0f}%)",
            "" if name == inprocess else f"{t.bytes_out / steps / 1e3:.0f} / {t.bytes_in / steps / 1e3:.0f}",
        ])
    header = ["fit", "median s", "speed-up vs in-process", "steps", "ms / step",
              "compute ms / step", "overhead ms / step", "kB out / in per step"]
    return format_table(header, rows, [False] + [True] * 7), per_step


def projection(per_step, compute_one):
    """Speed-ups over one worker for 8, 32, 128 workers from the fitted cost model."""
    if 1 not in per_step or 2 not in per_step:
        return ""
    a = max(per_step[1][2], 0.0)
    r = max(per_step[2][2] - a, 0.0)

    def t(p):
        return compute_one / p + a + r * math.ceil(math.log2(p)) if p > 1 else compute_one + a

    rows = [[str(p), f"{1000 * t(p):.1f}", f"{t(1) / t(p):.1f}"] for p in (1, 2, 8, 32, 128)]
    text = format_table(["workers", "projected ms / step", "speed-up over 1 worker"], rows,
                        [True, True, True])
    return f"a = {1000 * a:.1f} ms, r = {1000 * r:.1f} ms, C = {1000 * compute_one:.1f} ms\n{text}"


def lda_part(args):
    from skvi import SVILatentDirichletAllocation

    path = os.path.join(args.corpus_dir, "train.npz")
    X_train = sp.load_npz(path).tocsr().astype(np.float64)
    X_test = sp.load_npz(os.path.join(args.corpus_dir, "test.npz")).tocsr()
    n_docs = X_train.shape[0] * args.replicate
    X_big = sp.vstack([X_train] * args.replicate, format="csr")
    print(f"LDA: 20 Newsgroups x{args.replicate}: {n_docs} documents, {X_big.nnz} non-zeros, "
          f"{X_train.shape[1]} words")
    clusters = {n: _cluster(n) for n in (1, 2)}
    try:
        modes = [("batch", dict(learning_method="batch", max_iter=args.passes))]
        if args.online:
            modes.append(("online", dict(learning_method="online", max_iter=1)))
        for mode, kw in modes:
            def make(kw=kw):
                return SVILatentDirichletAllocation(n_components=20, random_state=0, **kw)

            configs = {}
            for n, (_, client) in clusters.items():
                Xd = lda_dask_corpus(path, n_docs, X_train.shape[1], n * args.blocks_per_worker)
                configs[f"{n} worker{'s' if n > 1 else ''}"] = (make, Xd, client)
            configs["in-process"] = (make, X_big, None)
            results = run_configs(configs, args.repeats)
            table, per_step = overhead_rows(results, "in-process", lambda e: e.n_batch_iter_)
            print(f"\n{mode} ({kw}); medians of {args.repeats}, interleaved")
            print(table)
            for name, (_, times, est, _) in results.items():
                print(f"  {name}: times {', '.join(f'{x:.2f}' for x in times)}; "
                      f"test perplexity {est.perplexity(X_test):.1f}")
            step_c = results["in-process"][0] / results["in-process"][2].n_batch_iter_
            print(projection(per_step, step_c))
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()


def gg_part(args):
    from skvi import GaussianGammaVB

    def make():
        return GaussianGammaVB(learning_method="batch", random_state=0)

    clusters = {n: _cluster(n) for n in (1, 2)}
    try:
        small = int(args.gg_inprocess_rows)
        configs = {}
        for n, (_, client) in clusters.items():
            configs[f"{n} worker{'s' if n > 1 else ''}"] = (
                make, gg_dask_rows(small, args.gg_block_rows), client)
        configs["in-process"] = (make, gg_dask_rows(small, args.gg_block_rows).compute(), None)
        results = run_configs(configs, args.repeats)
        table, per_step = overhead_rows(results, "in-process", lambda e: e.n_batch_iter_)
        print(f"\nGaussianGammaVB, batch, {small:.0e} x 10 float32; medians of {args.repeats}")
        print(table)
        step_c = results["in-process"][0] / results["in-process"][2].n_batch_iter_
        print(projection(per_step, step_c))
        big = int(args.gg_rows)
        if big > small:
            configs = {
                f"{n} worker{'s' if n > 1 else ''}": (make, gg_dask_rows(big, args.gg_block_rows),
                                                      client)
                for n, (_, client) in clusters.items()
            }
            results = run_configs(configs, 1)
            print(f"\nGaussianGammaVB, batch, {big:.0e} x 10 float32 (one run each)")
            rows = [[name, f"{m:.1f}", str(est.n_batch_iter_),
                     f"{t.bytes_out / est.n_batch_iter_ / 1e3:.0f} / "
                     f"{t.bytes_in / est.n_batch_iter_ / 1e3:.0f}"]
                    for name, (m, _, est, t) in results.items()]
            one = results["1 worker"][0]
            rows = [r + [f"{one / results[r[0]][0]:.2f}"] for r in rows]
            print(format_table(["fit", "s", "steps", "kB out / in per step", "speed-up vs 1"],
                               rows, [False, True, True, True, True]))
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()


def main(argv=None):
    args = parse_args(argv)
    print(f"skvi {version('skvi')}, dask {version('dask')}, distributed "
          f"{version('distributed')}, numpy {np.__version__}; {os.cpu_count()} cores")
    with one_blas_thread():
        if args.part in ("lda", "all"):
            lda_part(args)
        if args.part in ("gaussian-gamma", "all"):
            gg_part(args)


if __name__ == "__main__":
    main()
