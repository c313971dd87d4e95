"""Fits on a dask cluster against the in-process fit, with the per-step overhead.

Two parts (``--part``):

``lda``
    LDA (K = 20) on the 20 Newsgroups training set replicated ``--replicate``
    times (10 by default: 113,140 documents), the blocks built on the workers
    from the corpus file.  Batch fits (``--passes`` coordinate-ascent steps)
    and, with ``--online``, online fits at ``batch_size=128`` (scikit-learn's default).
``gaussian-gamma``
    ``GaussianGammaVB`` on ``--gg-rows`` x 10 synthetic rows (1e8 by default,
    float32) generated blockwise on the workers; the in-process fit runs on
    ``--gg-inprocess-rows`` rows (the whole data set would not fit in one
    process's memory in float64), and the cluster fits on that size too.
``ctm``
    The correlated topic model (K = 20, its defaults: full covariances,
    H-MC-SSVI) on the 20 Newsgroups training set (``--ctm-replicate``
    copies), ``--ctm-passes`` batch passes and, with ``--online``, one online
    pass of ``--ctm-batch-size`` documents a step; every document's
    ``q(eta_d)`` stays on its block's worker.  The in-process fit starts from all the
    documents' LDA, the cluster's from the first block's.

The workers allocate memory as the in-process fit does (glibc's default):
dask's own default for its workers, ``MALLOC_TRIM_THRESHOLD_=65536``
(``--dask-malloc-trim`` keeps it), maps every large numpy temporary anew,
which made the correlated topic model's steps 1.5 to 1.7 times slower.

Each configuration runs once untimed (warm-up), then ``--repeats`` times, the
configurations taking turns (the worker counts of ``--workers``, 1 and 2 by
default, then in-process), and the table gives medians, the speed-up over one
worker and the efficiency (speed-up / workers).  Every
worker is one process with one thread (BLAS held to one thread), on this
machine's loopback.  The per-step overhead is the wall time per step minus
the in-process compute per step divided by the workers; the bytes per step
are what the client scattered (the globals, the model) and gathered (summed
statistics, counts, bounds), measured by :func:`skvi.distributed.traffic`.

From the measured compute and overhead per step the script projects the
speed-up on P workers with the cost model of ``docs/scaling_benchmark.md``:
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
    parser.add_argument("--part", choices=["lda", "gaussian-gamma", "ctm", "all"],
                        default="all")
    parser.add_argument("--ctm-passes", type=int, default=3)
    parser.add_argument("--dask-malloc-trim", action="store_true",
                        help="keep dask's MALLOC_TRIM_THRESHOLD_=65536 in the workers")
    parser.add_argument("--ctm-replicate", type=int, default=1)
    parser.add_argument("--ctm-batch-size", type=int, default=1024)
    parser.add_argument("--replicate", type=int, default=10)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--online", action="store_true",
                        help="also time online LDA at batch_size=128, scikit-learn's default (one pass)")
    parser.add_argument("--blocks-per-worker", type=int, default=1)
    parser.add_argument("--gg-rows", type=float, default=1e8)
    parser.add_argument("--gg-inprocess-rows", type=float, default=1e7)
    parser.add_argument("--gg-block-rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="worker counts to compare (each a cluster of one-thread workers)")
    return parser.parse_args(argv)


# ------------------------------------------------------------- data blocks
def _lda_block(path, rows):
    """Rows of the corpus (indices modulo its size): built on a worker."""
    X = sp.load_npz(path).tocsr()
    return X[np.asarray(rows) % X.shape[0]].astype(np.float64)


def lda_dask_corpus(path, doc_nnz, n_features, n_blocks):
    """The replicated corpus in ``n_blocks`` blocks of about equal non-zeros."""
    import dask
    import dask.array as da

    n_docs = doc_nnz.shape[0]
    cum = np.concatenate([[0], np.cumsum(doc_nnz)])
    bounds = np.searchsorted(cum, np.linspace(0, cum[-1], n_blocks + 1))
    bounds[0], bounds[-1] = 0, n_docs
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
def _cluster(n_workers, malloc_trim):
    import dask
    from distributed import Client, LocalCluster

    # dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which
    # returns freed memory to the system at once: every large temporary of
    # numpy is then mapped anew (page faults at each touch).  Unless asked to
    # keep it, the workers allocate as this process does, glibc's default.
    if not malloc_trim:
        dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None})
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None, silence_logs=40)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    return cluster, Client(cluster, set_as_default=False)


def _timed_fit(make, X, client):
    """Fit; returns (estimator, seconds, traffic); traffic.busy is the busiest worker's compute."""
    from distributed import get_task_stream

    from skvi.distributed import fit_on_cluster, traffic

    est = make()
    with traffic() as t:
        if client is None:
            start = time.perf_counter()
            est.fit(X)
            elapsed = time.perf_counter() - start
            t.busy = elapsed
        else:
            with get_task_stream(client) as stream:
                start = time.perf_counter()
                fit_on_cluster(est, X, client=client)
                elapsed = time.perf_counter() - start
            busy = {}
            for task in stream.data:
                for span in task["startstops"]:
                    if span["action"] == "compute":
                        w = task["worker"]
                        busy[w] = busy.get(w, 0.0) + span["stop"] - span["start"]
            t.busy = max(busy.values())
    return est, elapsed, t


def run_configs(configs, repeats):
    """``configs``: name -> (make, X, client); interleaved repeats.

    Returns name -> (median fit time, fit times, last estimator, its traffic)
    and name -> the fits' steady-state step times.
    """
    times = {name: [] for name in configs}
    steps = {name: [] for name in configs}
    last = {}
    for make, X, client in configs.values():
        # One fit each first, not timed: the workers' imports, the first
        # touch of the blocks' memory.
        _timed_fit(make, X, client)
    for _ in range(repeats):
        for name, (make, X, client) in configs.items():
            est, elapsed, t = _timed_fit(make, X, client)
            times[name].append(elapsed)
            steps[name].append(step_time(est))
            last[name] = (est, t)
    return {name: (statistics.median(v), v, *last[name]) for name, v in times.items()}, steps


def idle_rows(results):
    """Per step, the time the busiest worker was not computing: broadcast, reduce, client.

    Returns the table and workers -> (idle s per step, busiest worker's compute s per step).
    """
    rows, idle_of = [], {}
    for name, (median, _, est, t) in results.items():
        if name == "in-process":
            continue
        steps = max(est.n_batch_iter_, 1)
        idle = (median - t.busy) / steps
        idle_of[int(name.split()[0])] = (idle, t.busy / steps)
        rows.append([name, f"{median:.2f}", f"{t.busy:.2f}", f"{1000 * idle:.1f}",
                     f"{100 * idle / (t.busy / steps):.1f}%"])
    table = format_table(["fit", "fit s", "busiest worker's compute s", "idle ms / step",
                          "idle / compute"], rows, [False, True, True, True, True])
    return table, idle_of


def step_time(est):
    """Seconds per step after the first pass (``history_``: the clock after each pass)."""
    h = est.history_
    if h.shape[0] < 2:
        return h["time"][-1] / max(h["steps"][-1], 1)
    return (h["time"][-1] - h["time"][0]) / (h["steps"][-1] - h["steps"][0])


def overhead_rows(results, inprocess, step_times):
    """Fit times, steady-state step times and the overhead per step against in-process."""
    base_time = results[inprocess][0]
    compute_one = statistics.median(step_times[inprocess])
    rows, per_step = [], {}
    one = results.get("1 worker", results[inprocess])[0]
    for name, (median, _, est, t) in results.items():
        workers = 1 if name == inprocess else int(name.split()[0])
        compute = compute_one / workers
        step = statistics.median(step_times[name])
        over = step - compute if name != inprocess else 0.0
        per_step[workers if name != inprocess else 0] = (step, compute, over)
        steps = max(est.n_batch_iter_, 1)
        rows.append([
            name, f"{median:.2f}", f"{base_time / median:.2f}", f"{one / median:.2f}",
            "" if name == inprocess else f"{one / median / workers:.2f}",
            str(steps), f"{1000 * step:.1f}", f"{1000 * compute:.1f}",
            "" if name == inprocess else f"{1000 * over:.1f} ({100 * over / compute:.0f}%)",
            "" if name == inprocess else
            f"{t.bytes_out / steps / 1e3:.0f} / {t.bytes_in / steps / 1e3:.0f}",
        ])
    header = ["fit", "fit s", "speed-up vs in-process", "speed-up vs 1 worker", "efficiency",
              "steps", "ms / step", "compute ms / step", "overhead ms / step",
              "kB out / in per step"]
    return format_table(header, rows, [False] + [True] * 9), per_step


def projection(idle_of):
    """Speed-ups over one worker for 8, 32, 128 workers from the fitted cost model.

    ``a`` is one worker's idle time per step, ``r`` two workers' minus it and
    ``C`` one worker's compute per step (the fit's, set-up included).
    """
    if 1 not in idle_of or 2 not in idle_of:
        return ""
    a, compute_one = max(idle_of[1][0], 0.0), idle_of[1][1]
    r = max(idle_of[2][0] - a, 0.0)

    def t(p):
        return compute_one / p + a + r * math.ceil(math.log2(p)) if p > 1 else compute_one + a

    rows = [[str(p), f"{1000 * t(p):.1f}", f"{t(1) / t(p):.1f}"] for p in (1, 2, 8, 32, 128)]
    text = format_table(["workers", "projected ms / step", "speed-up over 1 worker"], rows,
                        [True, True, True])
    return f"a = {1000 * a:.1f} ms, r = {1000 * r:.1f} ms, C = {1000 * compute_one:.1f} ms\n{text}"


def corpus_comparison(args, path, X_big, modes, measure):
    """Each mode's fits on 1 and 2 workers and in process, interleaved; prints the tables.

    ``modes`` is a list of ``(title, make)``; ``measure(est)`` describes a
    fitted estimator (after each configuration's times).
    """
    clusters = {n: _cluster(n, args.dask_malloc_trim) for n in args.workers}
    try:
        for title, make in modes:
            configs = {}
            for n, (_, client) in clusters.items():
                Xd = lda_dask_corpus(path, np.diff(X_big.indptr), X_big.shape[1],
                                     n * args.blocks_per_worker)
                # Built on the workers before the clock starts.
                configs[f"{n} worker{'s' if n > 1 else ''}"] = (make, client.persist(Xd), client)
            configs["in-process"] = (make, X_big, None)
            results, step_times = run_configs(configs, args.repeats)
            table, _ = overhead_rows(results, "in-process", step_times)
            print(f"\n{title}; medians of {args.repeats}, interleaved")
            print(table)
            idle_table, idle_of = idle_rows(results)
            print(idle_table)
            for name, (_, times, est, _) in results.items():
                print(f"  {name}: times {', '.join(f'{x:.2f}' for x in times)}; {measure(est)}")
            print(projection(idle_of))
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()


def lda_part(args):
    from skvi import SVILatentDirichletAllocation

    path = os.path.join(args.corpus_dir, "train.npz")
    X_train = sp.load_npz(path).tocsr().astype(np.float64)
    X_test = sp.load_npz(os.path.join(args.corpus_dir, "test.npz")).tocsr()
    X_big = sp.vstack([X_train] * args.replicate, format="csr")
    print(f"LDA: 20 Newsgroups x{args.replicate}: {X_big.shape[0]} documents, {X_big.nnz} "
          f"non-zeros, {X_train.shape[1]} words")
    kws = [("batch", dict(learning_method="batch", max_iter=args.passes))]
    if args.online:
        kws.append(("online", dict(learning_method="online", batch_size=128, max_iter=1)))
    modes = [
        (f"{mode} ({kw})",
         lambda kw=kw: SVILatentDirichletAllocation(n_components=20, random_state=0, **kw))
        for mode, kw in kws
    ]
    corpus_comparison(args, path, X_big, modes,
                      lambda est: f"test perplexity {est.perplexity(X_test):.1f}")


def ctm_part(args):
    from skvi import SVICorrelatedTopicModel

    path = os.path.join(args.corpus_dir, "train.npz")
    X_train = sp.load_npz(path).tocsr().astype(np.float64)
    X_big = sp.vstack([X_train] * args.ctm_replicate, format="csr")
    tokens = X_big.sum()
    print(f"\nCorrelated topic model: 20 Newsgroups x{args.ctm_replicate}: {X_big.shape[0]} "
          f"documents, {X_train.shape[1]} words")

    kws = [(f"batch, {args.ctm_passes} passes",
            dict(learning_method="batch", max_iter=args.ctm_passes))]
    if args.online:
        kws.append((f"online, one pass of batch_size={args.ctm_batch_size}",
                    dict(learning_method="online", batch_size=args.ctm_batch_size, max_iter=1)))
    modes = [
        (title, lambda kw=kw: SVICorrelatedTopicModel(n_components=20, tol=0, random_state=0,
                                                      **kw))
        for title, kw in kws
    ]
    corpus_comparison(args, path, X_big, modes,
                      lambda est: f"final ELBO / token {est.lower_bound_ / tokens:.4f}")


def gg_part(args):
    from skvi import GaussianGammaVB

    def make():
        return GaussianGammaVB(learning_method="batch", random_state=0)

    clusters = {n: _cluster(n, args.dask_malloc_trim) for n in args.workers}
    try:
        small = int(args.gg_inprocess_rows)
        configs = {}
        for n, (_, client) in clusters.items():
            configs[f"{n} worker{'s' if n > 1 else ''}"] = (
                make, client.persist(gg_dask_rows(small, args.gg_block_rows)), client)
        configs["in-process"] = (make, gg_dask_rows(small, args.gg_block_rows).compute(), None)
        results, step_times = run_configs(configs, args.repeats)
        table, per_step = overhead_rows(results, "in-process", step_times)
        print(f"\nGaussianGammaVB, batch, {small:.0e} x 10 float32; medians of {args.repeats}")
        print(table)
        idle_table, idle_of = idle_rows(results)
        print(idle_table)
        print(projection(idle_of))
        del configs
        big = int(args.gg_rows)
        if big > small:
            configs = {
                f"{n} worker{'s' if n > 1 else ''}": (make, gg_dask_rows(big, args.gg_block_rows),
                                                      client)
                for n, (_, client) in clusters.items()
            }
            results, _ = run_configs(configs, 1)
            print(f"\nGaussianGammaVB, batch, {big:.0e} x 10 float32 (one run each)")
            rows = [[name, f"{m:.1f}", str(est.n_batch_iter_),
                     f"{t.bytes_out / est.n_batch_iter_ / 1e3:.0f} / "
                     f"{t.bytes_in / est.n_batch_iter_ / 1e3:.0f}"]
                    for name, (m, _, est, t) in results.items()]
            one = results["1 worker"][0] if "1 worker" in results else float("nan")
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
        if args.part in ("ctm", "all"):
            ctm_part(args)


if __name__ == "__main__":
    main()
