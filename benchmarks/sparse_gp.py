"""Sparse GPs: Fig. 3 of the MC-SSVI paper and peers (California housing), a9a classification.

Three parts: ``--part fig3``, ``--part peers``, ``--part classifier``; ``--part both`` (the
default) runs fig3 and peers, ``--part all`` the three.

Part ``fig3``: the sparse-GP experiment of "Monte Carlo structured SVI for two-level
non-conjugate models" (sec. 4.3, Fig. 3)
-----------------------------------------------------------------------------------------
The paper compares, at a fixed kernel and noise, the test NLL of q(u) fitted with four
objectives against that of the standard (Titsias) bound, as a function of the training-set
size, and reports: (1) every method beats 'titsias' (negative differences), (2) the gap
shrinks as N grows, (3) the optimal bound beats 'titsias', (4) V1 ('fitc') and V2
('predictive') are competitive with or better than the optimal bound.  Here:

* data: ``cal_housing.data`` (20,640 rows; the 8 inputs of the file, target
  median_house_value); each repeat draws a new random 67/33 split (``RandomState(seed + r)``);
  inputs and target are z-scored with the mean and standard deviation of the training part;
* kernel: ``ConstantKernel * RBF`` with one length scale per input (``--kernel ard``, the
  default) or one shared length scale (``--kernel iso``); its hyperparameters and the noise
  are chosen ONCE (unless given by ``--fixed-hyper``), on a random ``--hyper-subset`` (100)
  rows of repeat 0's training part, by
  ``SVISparseGPRegressor(objective='optimal', inducing_points=<the subset>)`` with
  ``optimizer='fmin_l_bfgs_b'`` (i.e. the exact GP's log marginal likelihood, finite-difference
  L-BFGS; ``--hyper-restarts`` further random starts), from constant 1, length scales 1, noise
  ``--init-noise``.  The paper used a grid search; its grid is not given;
* every fit then keeps them fixed (``optimizer=None``), with ``--n-inducing`` (206) inducing
  inputs drawn at random from the repeat's training part (new in every repeat, the same for
  every size and method of the repeat); every fit of this part has ``normalize_y=False``: the
  target is z-scored already, and the kernel and noise are fixed in its units;
* training sizes ``--sizes`` (nested: the first N rows of a random order of the training
  part; 'all' is the whole training part, 13,829 rows); at every size:
  ``'titsias'``, ``'fitc'`` (V1) and ``'optimal'`` (only where N <= ``MAX_OPTIMAL_ROWS``)
  are one batch step (their optimum); ``'predictive'`` (V2) iterates, batch, up to
  ``--predictive-max-iter`` (200) passes; ``exact`` is scikit-learn's
  ``GaussianProcessRegressor(kernel, alpha=noise, optimizer=None)`` where N <= ``--max-exact``;
* metric: test NLL per row, ``-mean log N(y; mean, var_f + noise)`` on the repeat's test part
  (6,811 rows; ``log_predictive_density`` for skvi), in z-scored units.

Printed: the chosen hyperparameters; one line per repeat and size; then the table of
``NLL(method) - NLL('titsias')``, mean +- standard error over the repeats (negative: better
than 'titsias'), with the mean NLL of 'titsias' and, for 'predictive', its mean number of
passes, how many fits converged and its rejected steps; then the paper's four claims, each
"holds" or "does not hold" with the numbers.  ``--figure PATH`` also plots the differences
against N (skipped with a message when matplotlib is missing).  ``--n-jobs 2`` runs repeats in
parallel processes (one BLAS thread each); the fit times printed are then not comparable.

Part ``peers``: skvi against GPyTorch and GPflow, all 20,640 rows
------------------------------------------------------------------
One random 67/33 split (``RandomState(seed)``), z-scored as above (``--max-train N`` fits on
N random rows of its training part only, for smoke tests), ``--peer-inducing`` (500)
inducing inputs (``--inducing kmeans``: k-means centres of the training inputs,
``KMeans(500, n_init=1)``; or ``random`` training inputs), the same fixed set for every method
(not learned).  Kernel as in part fig3 (``--kernel``), every method starting from constant 1,
length scales 1, noise ``--init-noise``, and learning them:

``skvi SGPR``
    ``SVISparseGPRegressor(objective='titsias', optimizer='fmin_l_bfgs_b')``, batch: L-BFGS
    (scipy, exact gradients) on Titsias' collapsed bound, then one step for q(u).
``skvi SVGP``
    ``SVISparseGPRegressor(objective='titsias', learning_method='online',
    batch_size=--batch-size, max_iter=--passes, optimizer='fmin_l_bfgs_b')``: natural-gradient
    SVI on q(u) with a gradient step on the hyperparameters after every minibatch (Hensman et
    al.); every other argument at its default (``--opt KEY=VALUE`` overrides, e.g.
    ``--opt hyperparameter_learning_rate=0.1``).
``gpytorch SGPR``
    ``ExactGP`` with ``InducingPointKernel`` (Titsias' bound), ``ExactMarginalLogLikelihood``,
    ``torch.optim.LBFGS(line_search_fn='strong_wolfe', max_iter=--sgpr-max-iter)`` with
    autograd gradients, inducing points frozen.
``gpytorch SVGP``
    ``ApproximateGP`` with ``NaturalVariationalDistribution`` and a (whitened)
    ``VariationalStrategy(learn_inducing_locations=False)``, ``VariationalELBO``;
    ``gpytorch.optim.NGD(lr=--ngd-lr)`` on q(u) and ``Adam(lr=--adam-lr)`` on the kernel and
    noise, minibatches of ``--batch-size`` rows, ``--passes`` epochs.
``gpflow SGPR``
    ``gpflow.models.SGPR`` (Titsias' collapsed bound) with ``SquaredExponential`` (variance 1,
    length scales 1, one per input with ARD) and ``noise_variance=--init-noise``, the
    inducing variable made untrainable (``gpflow.set_trainable``);
    ``gpflow.optimizers.Scipy().minimize(model.training_loss, ..., method='L-BFGS-B',
    options={'maxiter': --sgpr-max-iter})``: scipy's L-BFGS-B with autodiff gradients, the
    loss and gradient compiled by ``tf.function`` (compile=True, the default).
``gpflow SVGP``
    ``gpflow.models.SVGP(kernel, likelihoods.Gaussian(--init-noise), Z, whiten=True,
    num_data=N)``, inducing variable frozen; q_mu and q_sqrt untrainable for Adam and moved by
    ``gpflow.optimizers.NaturalGradient(gamma=--ngd-lr)``, the kernel and noise by Adam
    (``--adam-lr``; ``gpflow.keras.tf_keras.optimizers.Adam``, the Keras 2 optimiser GPflow
    2.11 is written for: under TF >= 2.16 ``tf.optimizers`` is Keras 3's); per minibatch of
    ``--batch-size`` rows one natural-gradient step then one Adam step (two forward and
    backward passes: GPflow's documented recipe), ``--passes`` epochs in a ``tf.function``
    traced once per fit (the trace, 4-5 s, is in the fit time and is printed as the first
    step's time).  Prediction: ``predict_y`` (mean, and variance with the noise).

All tensors are float64 (``gpflow.config.set_default_float(np.float64)``).  Fit time is
``time.perf_counter`` around the fit alone (for the peers: model construction and the
optimisation loop, GPflow's tracing included); the repetitions are interleaved (every method
once, then again, ``--peer-repeats`` times) and the table gives medians of the fit time, test
NLL and test RMSE (z-scored target units), then for each peer library that ran a column
"time / gpytorch" or "time / gpflow" (skvi's median fit time over that library's, SGPR to SGPR
and SVGP to SVGP) and "NLL - gpytorch" or "NLL - gpflow", and the learned hyperparameters.
``--profile`` also profiles one extra (untimed) fit of each skvi method with cProfile and
prints the top 15 functions by internal time.  A peer library that does not import here
(torch + gpytorch; tensorflow + gpflow) drops its methods with the reason printed; when no
selected peer imports, the part prints why and is skipped.

Part ``classifier``: skvi against GPflow on a9a
-----------------------------------------------
Data: LIBSVM's ``a9a`` (32,561 training rows) and ``a9a.t`` (16,281 test rows), read by
``skvi.datasets.fetch_libsvm("a9a")`` (123 features) from ``a9a-adult-libsvm`` in
``skvi.datasets.get_data_home()`` or from ``--clf-data`` (the folder holding ``a9a`` and
``a9a.t``, or the one holding ``a9a-adult-libsvm/``), densified to float64, labels -1/+1 to
0/1; ``--max-train N`` subsamples the training rows.  ``--clf-inducing`` (100) k-means centres
of the training inputs (``KMeans(n_init=1)``, computed once, not timed), fixed, for every GP.
Isotropic RBF starting at signal variance 1 and length scale ``--clf-length-scale`` (1, the
estimators' default; the median squared distance between a9a rows is 16, so about 2.8 would
be the median heuristic), learned by both.  Rows (``--clf-methods``):

``skvi online``
    ``SVISparseGPClassifier(ConstantKernel(1) * RBF(ls), inducing_points=Z,
    learning_method='online', batch_size=--batch-size, max_iter=--clf-passes)``, every other
    argument at its default (algorithm 'mc-ssvi', quadrature, ``optimizer='fmin_l_bfgs_b'``:
    a step of ``rho_t * hyperparameter_learning_rate`` (1.0) on the kernel after every
    minibatch); ``--clf-opt KEY=VALUE`` overrides.
``skvi batch`` (not in the default selection)
    The same with ``learning_method='batch', max_iter=--clf-batch-max-iter`` (100).  Left out
    by default because it is slow at this size: after every step on q, up to 20 L-BFGS
    iterations on the kernel over all rows (coordinate ascent); on 4,000 rows 100 passes took
    37 s and had not converged (test NLL 0.3274, better than online's), so a fit on all
    32,561 rows would take several minutes.  Select it with ``--max-train`` or a small
    ``--clf-batch-max-iter``.
``gpflow SVGP``
    ``gpflow.models.SVGP(SquaredExponential(1, ls), likelihoods.Bernoulli(invlink=tf.sigmoid),
    Z, whiten=True, num_data=N)``, trained as ``gpflow SVGP`` of part peers
    (``NaturalGradient(gamma=--ngd-lr)`` on q, Adam(``--adam-lr``) on the kernel, minibatches
    of ``--batch-size``, ``--clf-passes`` epochs).  The logistic link is skvi's; GPflow's
    default ``Bernoulli()`` is the probit link.  With the logistic link GPflow's expected
    log-likelihood and ``predict_y`` use Gauss-Hermite quadrature (20 points).
``logistic regression``
    scikit-learn's ``LogisticRegression(max_iter=1000)`` (C=1) on the raw features: a sanity row.

Reported per method: medians over ``--clf-repeats`` (3) interleaved repetitions of the fit
time, test accuracy (threshold 0.5) and test NLL (mean ``-log p(y | x)``, p clipped to
[1e-12, 1 - 1e-12]), skvi's fit time over GPflow's ("time / gpflow") and the NLL difference;
then the learned hyperparameters.  Without tensorflow and gpflow the part prints "gpflow not
available" and the reason, and is skipped (unless ``--clf-methods`` leaves GPflow out).

Threads: OMP/OpenBLAS/MKL variables are set to 1 before numpy is imported,
``one_blas_thread()`` (threadpoolctl) holds BLAS to one thread, ``torch.set_num_threads(1)``,
and TensorFlow's intra- and inter-op thread pools are set to 1 before its first operation
(printed).  ``TF_CPP_MIN_LOG_LEVEL`` defaults to 2; TensorFlow still writes a few CUDA
plug-in lines to standard error on a machine without a GPU: harmless.

How to run ::

    python benchmarks/sparse_gp.py --part fig3                       # dev venv alone
    python benchmarks/sparse_gp.py --part fig3 --repeats 4 --n-jobs 2 \
        --predictive-max-iter 30 --figure /tmp/fig3.png
    python benchmarks/sparse_gp.py --part fig3 --sizes 500,1000,2000 --repeats 2 --n-jobs 2
    python benchmarks/sparse_gp.py --part fig3 --kernel iso --fixed-hyper 1.87,2.23,0.233
    # peers: a separate venv with torch, gpytorch, numpy, scipy, scikit-learn and skvi, e.g.
    #   python3 -m venv /work/benchenv-gp
    #   /work/benchenv-gp/bin/pip install torch gpytorch scikit-learn threadpoolctl
    #   /work/benchenv-gp/bin/pip install -e .    (or a .pth file naming the checkout)
    /work/benchenv-gp/bin/python benchmarks/sparse_gp.py --part peers --kernel iso --profile
    # GPflow: a venv with gpflow 2.11 (built and tested with these pins: TFP 0.25 is the
    # release for TF 2.19; gpflow 2.11.2 wants numpy<2 and names 'tensorflow' as its
    # requirement, so 'tensorflow-cpu' would be joined by 'tensorflow' anyway; the Linux
    # 'tensorflow' wheel runs on the CPU, CUDA comes only with its 'and-cuda' extra), and skvi
    # by a .pth file naming the checkout (its compiled extensions are built in place there):
    #   python3 -m venv /work/benchenv-gpflow
    #   /work/benchenv-gpflow/bin/pip install "gpflow==2.11.2" "tensorflow==2.19.1" \
    #       "tensorflow-probability[tf]==0.25.0" "tf-keras==2.19.0" "numpy<2" scipy \
    #       scikit-learn threadpoolctl
    #   echo /work/main > /work/benchenv-gpflow/lib/python3.11/site-packages/skvi-main.pth
    /work/benchenv-gpflow/bin/python benchmarks/sparse_gp.py --part peers --kernel iso \
        --methods "skvi SGPR,gpflow SGPR,skvi SVGP,gpflow SVGP"
    /work/benchenv-gpflow/bin/python benchmarks/sparse_gp.py --part classifier
    # smoke tests
    /work/benchenv-gpflow/bin/python benchmarks/sparse_gp.py --part peers --max-train 1000 \
        --peer-inducing 50 --passes 2 --peer-repeats 1 --kernel iso
    /work/benchenv-gpflow/bin/python benchmarks/sparse_gp.py --part classifier \
        --max-train 2000 --clf-passes 2 --clf-repeats 1

Cost (one core, on a shared 2-core machine): 'predictive' dominates part fig3: a batch pass
costs about 0.5 s at N = 4,000, proportionally more at larger N (it retries about five halved
steps, each evaluating the objective twice), so ``--repeats 3 --sizes 500,1000,2000,4000,8000``
took 20 minutes; ``--predictive-max-iter``, ``--sizes`` and ``--n-jobs`` cut it. The other fits
take seconds ('optimal' at N = 4,000 and the exact GP about 5-6 s each). Part peers with
``--kernel iso`` and the four methods of one library: about 7 minutes for 3 repetitions
(skvi SGPR and SVGP 20-30 s each, GPflow SGPR about 30 s, GPflow SVGP 35-50 s, GPyTorch
SGPR and SVGP 15-20 s). Part classifier, all rows, defaults: 'skvi online' about 11 s,
'gpflow SVGP' 5 s of tracing plus about 0.03 s per step, logistic regression about a second:
a few minutes for the 3 repetitions.

``--data`` is the folder holding ``cal_housing.data``; it defaults to ``california-housing``
in ``skvi.datasets.get_data_home()``.  The data are read with ``numpy.loadtxt``, never copied.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ info and warnings

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from _common import Skipped, format_table, key_value, one_blas_thread, version  # noqa: E402

from skvi.datasets import get_data_home  # noqa: E402

N_INPUTS = 8
TEST_FRACTION = 0.33
FIG3_METHODS = ("optimal", "fitc", "predictive", "exact")
LABELS = {"optimal": "optimal (6)", "fitc": "V1 fitc", "predictive": "V2 predictive",
          "exact": "exact GP", "titsias": "titsias (3)"}
PEER_METHODS = ("skvi SGPR", "gpytorch SGPR", "gpflow SGPR",
                "skvi SVGP", "gpytorch SVGP", "gpflow SVGP")
PEER_LIBRARIES = ("gpytorch", "gpflow")
CLF_METHODS = ("skvi online", "skvi batch", "gpflow SVGP", "logistic regression")
CLF_DEFAULT = ("skvi online", "gpflow SVGP", "logistic regression")
A9A_FEATURES = 123
PROBABILITY_CLIP = 1e-12
LENGTH_SCALE_BOUNDS = (1e-2, 1e5)
CONSTANT_BOUNDS = (1e-3, 1e3)


def parse_args(argv=None):
    default_dir = os.path.join(str(get_data_home()), "california-housing")
    p = argparse.ArgumentParser(
        description="California housing sparse GP: Fig. 3 of 'Monte Carlo structured SVI for "
        "two-level non-conjugate models' (test NLL of the four objectives of "
        "SVISparseGPRegressor minus 'titsias'), a comparison with GPyTorch and GPflow, and "
        "sparse GP classification of a9a against GPflow.")
    p.add_argument("--part", choices=("fig3", "peers", "classifier", "both", "all"),
                   default="both", help="both: fig3 and peers; all: the three parts "
                   "(default %(default)s)")
    p.add_argument("--data", default=default_dir,
                   help="folder with cal_housing.data (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of splits, subsets, inducing "
                   "points and fits (default %(default)s)")
    p.add_argument("--kernel", choices=("ard", "iso"), default="ard",
                   help="RBF with one length scale per input (ard) or one for all (iso)")
    p.add_argument("--init-noise", type=float, default=0.1,
                   help="initial noise variance of every hyperparameter fit (default "
                   "%(default)s; constant and length scales start at 1)")
    p.add_argument("--max-train", type=int, metavar="N",
                   help="parts peers and classifier: fit on N random rows of the training "
                   "part only (smoke tests; default: all)")
    g = p.add_argument_group("part fig3")
    g.add_argument("--repeats", type=int, default=5,
                   help="repeats, each a new split and inducing set (default %(default)s; "
                   "the paper used 50)")
    g.add_argument("--sizes", default="500,1000,2000,4000,8000,all",
                   help="training sizes, comma-separated, 'all' for the whole training part "
                   "(default %(default)s)")
    g.add_argument("--n-inducing", type=int, default=206, help="default %(default)s")
    g.add_argument("--hyper-subset", type=int, default=100,
                   help="rows of the hyperparameter fit (default %(default)s)")
    g.add_argument("--hyper-restarts", type=int, default=0,
                   help="n_restarts_optimizer of the hyperparameter fit (default %(default)s)")
    g.add_argument("--fixed-hyper", metavar="SV,LS,NOISE",
                   help="skip the hyperparameter fit and use signal variance SV, length scale "
                   "LS (all inputs) and noise variance NOISE (a sensitivity check)")
    g.add_argument("--max-exact", type=int, default=4000,
                   help="largest N of the exact GP (default %(default)s)")
    g.add_argument("--predictive-max-iter", type=int, default=200,
                   help="max_iter of 'predictive' (default %(default)s)")
    g.add_argument("--figure", metavar="PATH", help="plot the differences (needs matplotlib)")
    g.add_argument("--n-jobs", type=int, default=1,
                   help="repeats run in this many processes (default %(default)s)")
    g = p.add_argument_group("part peers")
    g.add_argument("--peer-repeats", type=int, default=3,
                   help="interleaved repetitions, medians reported (default %(default)s)")
    g.add_argument("--peer-inducing", type=int, default=500, help="default %(default)s")
    g.add_argument("--inducing", choices=("kmeans", "random"), default="kmeans",
                   help="inducing inputs: k-means centres or random training inputs")
    g.add_argument("--batch-size", type=int, default=1000, help="SVGP minibatch rows")
    g.add_argument("--passes", type=int, default=10,
                   help="SVGP passes (epochs) of skvi, GPyTorch and GPflow (default "
                   "%(default)s)")
    g.add_argument("--sgpr-max-iter", type=int, default=100,
                   help="iterations of the SGPR L-BFGS of GPyTorch (torch LBFGS max_iter) and "
                   "GPflow (scipy L-BFGS-B maxiter) (default %(default)s)")
    g.add_argument("--ngd-lr", type=float, default=0.1,
                   help="natural-gradient step size of the GPyTorch and GPflow SVGPs "
                   "(NGD lr, NaturalGradient gamma), also in part classifier (default "
                   "%(default)s)")
    g.add_argument("--adam-lr", type=float, default=0.01,
                   help="Adam step size of the GPyTorch and GPflow SVGPs, also in part "
                   "classifier (default %(default)s)")
    g.add_argument("--opt", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="extra SVISparseGPRegressor argument of 'skvi SVGP' (repeatable)")
    g.add_argument("--methods", default=",".join(PEER_METHODS),
                   help="comma-separated subset of: %s" % ", ".join(PEER_METHODS))
    g.add_argument("--profile", action="store_true",
                   help="profile one extra fit of each skvi method (cProfile, top 15 tottime)")
    g = p.add_argument_group("part classifier (a9a; also uses --batch-size, --ngd-lr, "
                             "--adam-lr, --max-train)")
    g.add_argument("--clf-data", default=None,
                   help="folder with a9a and a9a.t, or the one holding a9a-adult-libsvm/ "
                   "(default: skvi.datasets.get_data_home(), now %s)" % get_data_home())
    g.add_argument("--clf-inducing", type=int, default=100,
                   help="k-means inducing points (default %(default)s)")
    g.add_argument("--clf-passes", type=int, default=10,
                   help="passes (epochs) of the online fits (default %(default)s)")
    g.add_argument("--clf-batch-max-iter", type=int, default=100,
                   help="max_iter of 'skvi batch' (default %(default)s)")
    g.add_argument("--clf-repeats", type=int, default=3,
                   help="interleaved repetitions, medians reported (default %(default)s)")
    g.add_argument("--clf-length-scale", type=float, default=1.0,
                   help="initial RBF length scale of skvi and GPflow; the signal variance "
                   "starts at 1 (default %(default)s, the estimators' default)")
    g.add_argument("--clf-methods", default=",".join(CLF_DEFAULT),
                   help="comma-separated subset of: %s (default %%(default)s)"
                   % ", ".join(CLF_METHODS))
    g.add_argument("--clf-opt", action="append", default=[], type=key_value,
                   metavar="KEY=VALUE",
                   help="extra SVISparseGPClassifier argument of the skvi rows (repeatable)")
    args = p.parse_args(argv)
    if min(args.repeats, args.n_inducing, args.hyper_subset, args.peer_repeats,
           args.peer_inducing, args.batch_size, args.passes, args.predictive_max_iter,
           args.sgpr_max_iter, args.n_jobs, args.clf_inducing, args.clf_passes,
           args.clf_batch_max_iter, args.clf_repeats) < 1 or args.init_noise <= 0:
        p.error("counts must be at least 1 and --init-noise positive")
    if not args.clf_length_scale > 0:
        p.error("--clf-length-scale must be positive")
    if args.max_train is not None:
        need = max(args.peer_inducing if args.part in ("peers", "both", "all") else 2,
                   args.clf_inducing if args.part in ("classifier", "all") else 2)
        if args.max_train < need:
            p.error("--max-train must be at least the number of inducing points (%d)" % need)
    sizes = []
    for item in args.sizes.split(","):
        item = item.strip().lower()
        if item == "all":
            sizes.append(None)
        elif item:
            try:
                sizes.append(int(item))
            except ValueError:
                p.error("--sizes: %r is neither an integer nor 'all'" % item)
            if sizes[-1] < 2:
                p.error("--sizes must be at least 2")
    args.sizes = sizes
    methods = {m.strip() for m in args.methods.split(",") if m.strip()}
    if not methods or methods - set(PEER_METHODS):
        p.error("--methods: choose from %s" % ", ".join(PEER_METHODS))
    args.methods = [m for m in PEER_METHODS if m in methods]
    args.opt = dict(args.opt)
    methods = {m.strip() for m in args.clf_methods.split(",") if m.strip()}
    if not methods or methods - set(CLF_METHODS):
        p.error("--clf-methods: choose from %s" % ", ".join(CLF_METHODS))
    args.clf_methods = [m for m in CLF_METHODS if m in methods]
    args.clf_opt = dict(args.clf_opt)
    if args.fixed_hyper is not None:
        try:
            args.fixed_hyper = [float(v) for v in args.fixed_hyper.split(",")]
        except ValueError:
            p.error("--fixed-hyper wants three numbers SV,LS,NOISE")
        if len(args.fixed_hyper) != 3 or min(args.fixed_hyper) <= 0:
            p.error("--fixed-hyper wants three positive numbers SV,LS,NOISE")
    return args


# ------------------------------------------------------------------------ data
def load_data(folder):
    path = os.path.join(folder, "cal_housing.data")
    if not os.path.isfile(path):
        sys.exit("error: %s not found; pass --data FOLDER (the folder that holds "
                 "cal_housing.data) or set SKVI_DATA" % path)
    D = np.loadtxt(path, delimiter=",")
    if D.ndim != 2 or D.shape[1] != N_INPUTS + 1:
        sys.exit("error: %s: expected 9 columns, got shape %s" % (path, D.shape))
    return D[:, :N_INPUTS], D[:, N_INPUTS]


def split(X, y, seed):
    """Random 67/33 split, inputs and target z-scored with the training part's moments."""
    rng = np.random.RandomState(seed)
    order = rng.permutation(y.size)
    n_test = int(round(TEST_FRACTION * y.size))
    test, train = order[:n_test], order[n_test:]
    mx, sx = X[train].mean(0), X[train].std(0)
    my, sy = y[train].mean(), y[train].std()
    return ((X[train] - mx) / sx, (y[train] - my) / sy,
            (X[test] - mx) / sx, (y[test] - my) / sy)


def make_kernel(kind):
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    scale = np.ones(N_INPUTS) if kind == "ard" else 1.0
    return ConstantKernel(1.0, CONSTANT_BOUNDS) * RBF(scale, LENGTH_SCALE_BOUNDS)


def gauss_nll(y, mean, var):
    return float(np.mean(0.5 * (np.log(2.0 * np.pi * var) + (y - mean) ** 2 / var)))


def describe_kernel(kernel, noise):
    params = kernel.get_params()
    ls = np.atleast_1d(params["k2__length_scale"])
    return "signal variance %.4g, length scale%s %s, noise variance %.4g" % (
        params["k1__constant_value"], "s" if ls.size > 1 else "",
        " ".join("%.3g" % v for v in ls), noise)


# ------------------------------------------------------------------- part fig3
def choose_hyperparameters(X, y, args):
    from skvi import SVISparseGPRegressor

    X_tr, y_tr, _, _ = split(X, y, args.seed)
    rng = np.random.RandomState(args.seed)
    rows = rng.choice(y_tr.size, min(args.hyper_subset, y_tr.size), replace=False)
    start = time.perf_counter()
    gp = SVISparseGPRegressor(
        make_kernel(args.kernel), noise_variance=args.init_noise, objective="optimal",
        inducing_points=X_tr[rows], optimizer="fmin_l_bfgs_b", normalize_y=False,
        n_restarts_optimizer=args.hyper_restarts, random_state=args.seed,
    ).fit(X_tr[rows], y_tr[rows])
    return gp.kernel_, gp.noise_variance_, gp.lower_bound_, time.perf_counter() - start


def fig3_repeat(X, y, r, kernel, noise, args):
    """One repeat: a new split and inducing set; every size and method.  Returns rows."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor

    from skvi import SVISparseGPRegressor
    from skvi.models.sparse_gp import MAX_OPTIMAL_ROWS

    rows = []
    with one_blas_thread():
        X_tr, y_tr, X_te, y_te = split(X, y, args.seed + r)
        rng = np.random.RandomState(10_000 + args.seed + r)
        Z = X_tr[rng.choice(y_tr.size, args.n_inducing, replace=False)]
        order = rng.permutation(y_tr.size)
        for size in args.sizes:
            n = y_tr.size if size is None or size > y_tr.size else size
            Xn, yn = X_tr[order[:n]], y_tr[order[:n]]
            row = {"repeat": r, "n": n, "nll": {}, "seconds": {}}
            objectives = ["titsias", "fitc", "predictive"]
            if n <= MAX_OPTIMAL_ROWS:
                objectives.append("optimal")
            for objective in objectives:
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    gp = SVISparseGPRegressor(
                        kernel, noise_variance=noise, inducing_points=Z, objective=objective,
                        optimizer=None, normalize_y=False, random_state=args.seed + r,
                        max_iter=args.predictive_max_iter if objective == "predictive" else 100,
                    ).fit(Xn, yn)
                row["seconds"][objective] = time.perf_counter() - start
                row["nll"][objective] = -float(np.mean(gp.log_predictive_density(X_te, y_te)))
                if objective == "predictive":
                    row["predictive"] = (gp.n_iter_, bool(gp.converged_), gp.n_rejected_steps_)
            if n <= args.max_exact:
                start = time.perf_counter()
                exact = GaussianProcessRegressor(kernel, alpha=noise, optimizer=None).fit(Xn, yn)
                mean, std = exact.predict(X_te, return_std=True)
                row["seconds"]["exact"] = time.perf_counter() - start
                row["nll"]["exact"] = gauss_nll(y_te, mean, std**2 + noise)
            rows.append(row)
    return rows


def print_fig3_row(row):
    nll, sec = row["nll"], row["seconds"]
    cells = ["%s %.4f (%.1fs)" % (m, nll[m], sec[m])
             for m in ("titsias",) + FIG3_METHODS if m in nll]
    it, conv, rej = row["predictive"]
    print("  repeat %d  N=%5d  %s; predictive %d passes, converged %s, %d rejected"
          % (row["repeat"], row["n"], "  ".join(cells), it, conv, rej), flush=True)


def summarize_fig3(rows, args):
    sizes = sorted({r["n"] for r in rows})
    summary = {}
    for n in sizes:
        at = [r for r in rows if r["n"] == n]
        entry = {"titsias": np.mean([r["nll"]["titsias"] for r in at]), "reps": len(at)}
        for m in FIG3_METHODS:
            d = np.array([r["nll"][m] - r["nll"]["titsias"] for r in at if m in r["nll"]])
            if d.size:
                se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else np.nan
                entry[m] = (float(d.mean()), float(se), d.size)
        p = np.array([r["predictive"] for r in at], dtype=float)
        entry["pred"] = (p[:, 0].mean(), int(p[:, 1].sum()), p[:, 2].mean())
        entry["sec"] = {m: np.mean([r["seconds"][m] for r in at if m in r["seconds"]])
                        for m in ("titsias",) + FIG3_METHODS
                        if any(m in r["seconds"] for r in at)}
        summary[n] = entry
    return summary


def fig3_table(summary):
    header = ["N", "reps", "titsias NLL"] + [LABELS[m] + " - titsias" for m in FIG3_METHODS]
    header += ["V2 passes", "V2 conv", "V2 rejected"]
    body = []
    for n, e in summary.items():
        cells = [str(n), str(e["reps"]), "%.4f" % e["titsias"]]
        for m in FIG3_METHODS:
            if m in e:
                mean, se, _ = e[m]
                cells.append("%+.5f +- %.5f" % (mean, se) if np.isfinite(se)
                             else "%+.5f" % mean)
            else:
                cells.append("")
        it, conv, rej = e["pred"]
        cells += ["%.0f" % it, "%d/%d" % (conv, e["reps"]), "%.0f" % rej]
        body.append(cells)
    return format_table(header, body, (True,) * len(header))


def fig3_times(summary):
    methods = ("titsias",) + FIG3_METHODS
    header = ["N"] + ["%s [s]" % LABELS[m] for m in methods]
    body = [[str(n)] + [("%.2f" % e["sec"][m]) if m in e["sec"] else "" for m in methods]
            for n, e in summary.items()]
    return format_table(header, body, (True,) * len(header))


def fig3_verdicts(summary):
    lines = []
    sizes = list(summary)

    def diffs(m):
        return [(n, summary[n][m]) for n in sizes if m in summary[n]]

    # (1) every method below titsias at every size
    bad = [(m, n, d) for m in FIG3_METHODS for n, (d, _, _) in diffs(m) if not d < 0]
    weak = [(m, n) for m in FIG3_METHODS for n, (d, se, _) in diffs(m)
            if d < 0 and np.isfinite(se) and d + 2 * se >= 0]
    lines.append("(1) every method's mean NLL below 'titsias' at every size: %s%s%s" % (
        "holds" if not bad else "does not hold",
        "" if not bad else " (not below: %s)" % ", ".join(
            "%s N=%d %+.5f" % (LABELS[m], n, d) for m, n, d in bad),
        "" if not weak else "; within 2 SE of 0: %s" % ", ".join(
            "%s N=%d" % (LABELS[m], n) for m, n in weak)))
    # (2) the gap shrinks with N
    parts, shrinks = [], True
    for m in FIG3_METHODS:
        d = diffs(m)
        if len(d) < 2:
            continue
        gaps = [abs(v[0]) for _, v in d]
        monotone = all(b <= a for a, b in zip(gaps, gaps[1:]))
        ok = gaps[-1] < gaps[0]
        shrinks &= ok
        parts.append("%s |gap| %.5f at N=%d -> %.5f at N=%d%s" % (
            LABELS[m], gaps[0], d[0][0], gaps[-1], d[-1][0],
            " (monotone)" if monotone else " (not monotone)"))
    lines.append("(2) the gap shrinks with N (largest N vs smallest): %s: %s" % (
        ("holds" if shrinks else "does not hold") if parts else "not testable",
        "; ".join(parts) or "fewer than two sizes"))
    # (3) optimal below titsias
    d = diffs("optimal")
    ok = bool(d) and all(v[0] < 0 for _, v in d)
    lines.append("(3) the optimal bound beats 'titsias': %s (%s)" % (
        "holds" if ok else "does not hold",
        ", ".join("N=%d %+.5f" % (n, v[0]) for n, v in d)))
    # (4) V1 and V2 competitive with or better than optimal (within 2 SE or below)
    parts, ok = [], True
    for m in ("fitc", "predictive"):
        for n in sizes:
            e = summary[n]
            if m in e and "optimal" in e:
                dm, sm, _ = e[m]
                do, so, _ = e["optimal"]
                se = np.hypot(sm, so) if np.isfinite(sm) and np.isfinite(so) else 0.0
                good = dm <= do + 2 * se
                ok &= good
                parts.append("%s N=%d %+.5f vs %+.5f%s" % (
                    LABELS[m], n, dm, do, "" if good else " (worse)"))
    lines.append("(4) V1 and V2 competitive with (within 2 SE) or better than the optimal "
                 "bound: %s (%s)" % ("holds" if ok else "does not hold", "; ".join(parts)))
    return lines


def plot_fig3(path, summary, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for m in FIG3_METHODS:
        pts = [(n, *summary[n][m][:2]) for n in summary if m in summary[n]]
        if not pts:
            continue
        n, d, se = (np.array(v, dtype=float) for v in zip(*pts))
        ax.errorbar(n, d, yerr=np.nan_to_num(se), marker="o", markersize=4, capsize=3,
                    label=LABELS[m])
    ax.axhline(0.0, color="k", linestyle="--", linewidth=1, label="titsias (3)")
    ax.set_xscale("log")
    ax.set_xlabel("training set size N")
    ax.set_ylabel("test NLL - test NLL of titsias (3)")
    ax.set_title(textwrap.fill(title, 80), fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_fig3(X, y, args):
    from skvi.models.sparse_gp import MAX_OPTIMAL_ROWS

    print("== Part fig3: Fig. 3 of the MC-SSVI paper (sparse GP, California housing)")
    if args.fixed_hyper is not None:
        sv, ls, noise = args.fixed_hyper
        kernel = make_kernel(args.kernel).set_params(k1__constant_value=sv)
        kernel.set_params(k2__length_scale=np.full(N_INPUTS, ls) if args.kernel == "ard" else ls)
        print("hyperparameters given by --fixed-hyper (%s kernel), no hyperparameter fit"
              % args.kernel)
    else:
        with one_blas_thread():
            kernel, noise, lml, seconds = choose_hyperparameters(X, y, args)
        print("hyperparameters (%s kernel) by the exact GP's log marginal likelihood on %d "
              "random training rows of repeat 0 (objective='optimal', L-BFGS, %d restarts): "
              "%.1f s, log ML %.3f"
              % (args.kernel, args.hyper_subset, args.hyper_restarts, seconds, lml))
    print("  %s  (kept fixed)" % describe_kernel(kernel, noise))
    print("fits: %d random training inputs as inducing points per repeat; 'optimal' where "
          "N <= %d, exact GP where N <= %d; 'predictive' max_iter=%d; %d repeat(s)%s"
          % (args.n_inducing, MAX_OPTIMAL_ROWS, args.max_exact, args.predictive_max_iter,
             args.repeats, "" if args.n_jobs == 1 else " in %d processes" % args.n_jobs))
    start = time.perf_counter()
    if args.n_jobs == 1:
        rows = []
        for r in range(args.repeats):
            for row in fig3_repeat(X, y, r, kernel, noise, args):
                print_fig3_row(row)
                rows.append(row)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # fork: the workers inherit the data, the imports and the thread settings.
        with ProcessPoolExecutor(args.n_jobs, mp_context=multiprocessing.get_context("fork")) as ex:
            futures = [ex.submit(fig3_repeat, X, y, r, kernel, noise, args)
                       for r in range(args.repeats)]
            rows = []
            for future in as_completed(futures):
                for row in future.result():
                    print_fig3_row(row)
                    rows.append(row)
        rows.sort(key=lambda row: (row["repeat"], row["n"]))
    print("part fig3: %.1f s" % (time.perf_counter() - start))
    print()
    summary = summarize_fig3(rows, args)
    title = ("California housing, test NLL minus that of titsias (3): mean +- SE over %d "
             "repeat(s); %d inducing points, %s kernel fixed" % (
                 args.repeats, args.n_inducing, args.kernel))
    print(title)
    print(fig3_table(summary))
    print("(negative: better than titsias; V2 passes: mean passes of 'predictive' (max %d), "
          "V2 conv: fits that met tol, V2 rejected: mean steps rejected by step safety)"
          % args.predictive_max_iter)
    print()
    print("mean fit + predict time per method [s]%s" % (
        "" if args.n_jobs == 1 else " (repeats run in parallel: not comparable)"))
    print(fig3_times(summary))
    print()
    for line in fig3_verdicts(summary):
        print(line)
    if args.figure:
        try:
            plot_fig3(args.figure, summary, title)
            print("wrote %s" % args.figure)
        except ImportError as exc:
            print("no figure: matplotlib not available (%s)" % exc)
    print()


# ------------------------------------------------------------------ part peers
def import_gpytorch():
    try:
        import gpytorch
        import torch
    except ImportError as exc:
        raise Skipped("GPyTorch is not importable here (%s); run this part with a Python that "
                      "has torch and gpytorch" % exc)
    torch.set_num_threads(1)
    return torch, gpytorch


_GPFLOW = []


def import_gpflow():
    """(tensorflow, gpflow), TensorFlow held to one thread and GPflow to float64.

    The thread counts can only be set before TensorFlow runs its first operation, so this
    is called before any GPflow model is built.  Raises Skipped when either is missing.
    """
    if _GPFLOW:
        return _GPFLOW[0]
    try:
        import tensorflow as tf
    except Exception as exc:  # ImportError, or a broken install
        raise Skipped("gpflow not available: tensorflow is not importable here (%s: %s); run "
                      "this with a Python that has tensorflow and gpflow (see the module "
                      "docstring)" % (type(exc).__name__, exc)) from exc
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # TensorFlow already running: the counts are reported as they are
        pass
    try:
        import gpflow
    except Exception as exc:  # ImportError, or e.g. a mismatched TFP
        raise Skipped("gpflow not available: gpflow is not importable here (%s: %s); run "
                      "this with a Python that has gpflow (see the module docstring)"
                      % (type(exc).__name__, exc)) from exc
    gpflow.config.set_default_float(np.float64)
    _GPFLOW.append((tf, gpflow))
    return tf, gpflow


def tf_threads(tf):
    return "TF threads intra-op %d, inter-op %d" % (
        tf.config.threading.get_intra_op_parallelism_threads(),
        tf.config.threading.get_inter_op_parallelism_threads())


def subsample(X, y, max_train, seed):
    """At most ``max_train`` random rows of (X, y) (all rows when it is None)."""
    if max_train is None or max_train >= y.size:
        return X, y
    rows = np.sort(np.random.RandomState(seed).choice(y.size, max_train, replace=False))
    return X[rows], y[rows]


def choose_inducing(X_tr, args):
    rng = np.random.RandomState(args.seed)
    if args.inducing == "random":
        return X_tr[rng.choice(X_tr.shape[0], args.peer_inducing, replace=False)]
    from sklearn.cluster import KMeans

    return KMeans(args.peer_inducing, n_init=1, random_state=args.seed).fit(X_tr).cluster_centers_


def fit_skvi(method, data, Z, args):
    from sklearn.exceptions import ConvergenceWarning

    from skvi import SVISparseGPRegressor

    X_tr, y_tr, X_te, y_te = data
    params = dict(noise_variance=args.init_noise, inducing_points=Z, objective="titsias",
                  optimizer="fmin_l_bfgs_b", random_state=args.seed)
    if method == "skvi SVGP":
        params.update(learning_method="online", batch_size=args.batch_size,
                      max_iter=args.passes)
        params.update(args.opt)
    model = SVISparseGPRegressor(make_kernel(args.kernel), **params)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_tr, y_tr)
    seconds = time.perf_counter() - start
    mean = model.predict(X_te)
    return {
        "seconds": seconds,
        "nll": -float(np.mean(model.log_predictive_density(X_te, y_te))),
        "rmse": float(np.sqrt(np.mean((mean - y_te) ** 2))),
        "hyper": describe_kernel(model.kernel_, model.noise_variance_),
        "note": "%d passes, %d rejected steps" % (model.n_iter_, model.n_rejected_steps_),
    }


def _gpytorch_kernel(gpytorch, args, dtype):
    ard = N_INPUTS if args.kernel == "ard" else None
    k = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=ard))
    k = k.to(dtype)
    k.outputscale = 1.0
    k.base_kernel.lengthscale = 1.0
    return k


def _gpytorch_hyper(scale_kernel, likelihood):
    ls = scale_kernel.base_kernel.lengthscale.detach().numpy().ravel()
    return "signal variance %.4g, length scale%s %s, noise variance %.4g" % (
        float(scale_kernel.outputscale.detach()), "s" if ls.size > 1 else "",
        " ".join("%.3g" % v for v in ls), float(likelihood.noise.detach()))


def fit_gpytorch(method, data, Z, args, torch, gpytorch):
    X_tr, y_tr, X_te, y_te = data
    dtype = torch.float64
    tX, ty, tXe = (torch.as_tensor(a, dtype=dtype) for a in (X_tr, y_tr, X_te))
    tZ = torch.as_tensor(Z, dtype=dtype)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(dtype)
    likelihood.noise = args.init_noise
    if method == "gpytorch SGPR":
        class SGPR(gpytorch.models.ExactGP):
            def __init__(self):
                super().__init__(tX, ty, likelihood)
                self.mean_module = gpytorch.means.ZeroMean()
                self.covar_module = gpytorch.kernels.InducingPointKernel(
                    _gpytorch_kernel(gpytorch, args, dtype), inducing_points=tZ.clone(),
                    likelihood=likelihood)
                self.covar_module.inducing_points.requires_grad_(False)

            def forward(self, x):
                return gpytorch.distributions.MultivariateNormal(
                    self.mean_module(x), self.covar_module(x))

        model = SGPR().to(dtype)
        model.train()
        likelihood.train()
        mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.LBFGS(params, lr=1.0, max_iter=args.sgpr_max_iter,
                                line_search_fn="strong_wolfe")
        evals = [0]

        def closure():
            opt.zero_grad()
            loss = -mll(model(tX), ty)
            loss.backward()
            evals[0] += 1
            return loss

        opt.step(closure)
        note = "%d function+gradient evaluations" % evals[0]
        scale_kernel = model.covar_module.base_kernel
    else:
        class SVGP(gpytorch.models.ApproximateGP):
            def __init__(self):
                dist = gpytorch.variational.NaturalVariationalDistribution(tZ.shape[0])
                strategy = gpytorch.variational.VariationalStrategy(
                    self, tZ.clone(), dist, learn_inducing_locations=False)
                super().__init__(strategy)
                self.mean_module = gpytorch.means.ZeroMean()
                self.covar_module = _gpytorch_kernel(gpytorch, args, dtype)

            def forward(self, x):
                return gpytorch.distributions.MultivariateNormal(
                    self.mean_module(x), self.covar_module(x))

        model = SVGP().to(dtype)
        model.train()
        likelihood.train()
        n = ty.shape[0]
        ngd = gpytorch.optim.NGD(model.variational_parameters(), num_data=n, lr=args.ngd_lr)
        adam = torch.optim.Adam(list(model.hyperparameters()) + list(likelihood.parameters()),
                                lr=args.adam_lr)
        mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=n)
        gen = torch.Generator().manual_seed(args.seed)
        steps = 0
        for _ in range(args.passes):
            order = torch.randperm(n, generator=gen)
            for b in range(0, n, args.batch_size):
                idx = order[b:b + args.batch_size]
                ngd.zero_grad()
                adam.zero_grad()
                loss = -mll(model(tX[idx]), ty[idx])
                loss.backward()
                ngd.step()
                adam.step()
                steps += 1
        note = "%d passes, %d steps" % (args.passes, steps)
        scale_kernel = model.covar_module
    seconds = time.perf_counter() - start
    model.eval()
    likelihood.eval()
    with torch.no_grad():
        pred = likelihood(model(tXe))
        mean, var = pred.mean.numpy(), pred.variance.numpy()
    return {"seconds": seconds, "nll": gauss_nll(y_te, mean, var),
            "rmse": float(np.sqrt(np.mean((mean - y_te) ** 2))),
            "hyper": _gpytorch_hyper(scale_kernel, likelihood), "note": note}


def _gpflow_hyper(model):
    ls = np.atleast_1d(model.kernel.lengthscales.numpy())
    text = "signal variance %.4g, length scale%s %s" % (
        float(model.kernel.variance.numpy()), "s" if ls.size > 1 else "",
        " ".join("%.3g" % v for v in ls))
    if hasattr(model.likelihood, "variance"):
        text += ", noise variance %.4g" % float(model.likelihood.variance.numpy())
    return text


def train_gpflow_svgp(tf, gpflow, model, X, Y, args, passes):
    """NaturalGradient on q(u) and Adam on the rest, minibatches, ``passes`` epochs.

    q_mu and q_sqrt are made untrainable so that Adam leaves them to the natural
    gradient; one step (both optimisers on one minibatch) is a ``tf.function``, traced once
    (the row indices are its argument, the data stay in two constants).  Returns the
    number of steps and the seconds of the first, which includes tracing the function.
    """
    from gpflow.keras import tf_keras

    gpflow.set_trainable(model.q_mu, False)
    gpflow.set_trainable(model.q_sqrt, False)
    natgrad = gpflow.optimizers.NaturalGradient(gamma=args.ngd_lr)
    adam = tf_keras.optimizers.Adam(args.adam_lr)
    tX, tY = tf.constant(X), tf.constant(Y)
    variational = [(model.q_mu, model.q_sqrt)]
    trainable = model.trainable_variables

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
    def step(rows):
        batch = (tf.gather(tX, rows), tf.gather(tY, rows))

        def loss():
            return model.training_loss(batch)

        natgrad.minimize(loss, var_list=variational)
        adam.minimize(loss, var_list=trainable)

    rng = np.random.RandomState(args.seed)
    n, steps, first = Y.shape[0], 0, 0.0
    for _ in range(passes):
        order = rng.permutation(n)
        for b in range(0, n, args.batch_size):
            if steps == 0:
                start = time.perf_counter()
                step(order[b:b + args.batch_size])
                first = time.perf_counter() - start
            else:
                step(order[b:b + args.batch_size])
            steps += 1
    return steps, first


def fit_gpflow(method, data, Z, args, tf, gpflow):
    X_tr, y_tr, X_te, y_te = data
    Y = y_tr[:, None]
    start = time.perf_counter()
    ls = np.ones(N_INPUTS) if args.kernel == "ard" else 1.0
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=ls)
    if method == "gpflow SGPR":
        model = gpflow.models.SGPR((X_tr, Y), kernel, inducing_variable=Z.copy(),
                                   noise_variance=args.init_noise)
        gpflow.set_trainable(model.inducing_variable, False)
        res = gpflow.optimizers.Scipy().minimize(
            model.training_loss, model.trainable_variables, method="L-BFGS-B",
            options={"maxiter": args.sgpr_max_iter})
        note = "%d L-BFGS-B iterations, %d function+gradient evaluations%s" % (
            res.nit, res.nfev, "" if res.success else ", not converged")
    else:
        likelihood = gpflow.likelihoods.Gaussian(variance=args.init_noise)
        model = gpflow.models.SVGP(kernel, likelihood, Z.copy(), whiten=True,
                                   num_data=y_tr.size)
        gpflow.set_trainable(model.inducing_variable, False)
        steps, first = train_gpflow_svgp(tf, gpflow, model, X_tr, Y, args, args.passes)
        note = "%d passes, %d steps, the first %.1f s with tracing" % (args.passes, steps, first)
    seconds = time.perf_counter() - start
    mean, var = (a.numpy().ravel() for a in model.predict_y(X_te))
    return {"seconds": seconds, "nll": gauss_nll(y_te, mean, var),
            "rmse": float(np.sqrt(np.mean((mean - y_te) ** 2))),
            "hyper": _gpflow_hyper(model), "note": note}


def profile_skvi(method, data, Z, args):
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    fit_skvi(method, data, Z, args)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    return out.getvalue()


def peer_libraries(methods):
    """{library: (module objects, version text)} of the peer libraries ``methods`` need
    that import here, and {library: reason} of those that do not."""
    have, missing = {}, {}
    for lib in PEER_LIBRARIES:
        if not any(m.startswith(lib + " ") for m in methods):
            continue
        try:
            if lib == "gpytorch":
                torch, gpytorch = import_gpytorch()
                have[lib] = ((torch, gpytorch), "torch %s, gpytorch %s; torch threads %d" % (
                    torch.__version__, gpytorch.__version__, torch.get_num_threads()))
            else:
                tf, gpflow = import_gpflow()
                have[lib] = ((tf, gpflow), "tensorflow %s, gpflow %s; %s" % (
                    tf.__version__, gpflow.__version__, tf_threads(tf)))
        except Skipped as exc:
            missing[lib] = str(exc)
    return have, missing


def run_peers(X, y, args):
    wanted = [m for m in args.methods if not m.startswith("skvi")]
    have, missing = peer_libraries(wanted)
    print("== Part peers: skvi against GPyTorch and GPflow on California housing")
    for lib, reason in missing.items():
        print("%s methods skipped: %s" % (lib, reason))
    if wanted and not have:
        print("part peers skipped: no peer library is importable here")
        print()
        return
    for _, text in have.values():
        print("  %s" % text)
    methods = [m for m in args.methods if m.split()[0] not in missing]
    data = split(X, y, args.seed)
    n_train = data[1].size
    data = subsample(data[0], data[1], args.max_train, args.seed) + data[2:]
    with one_blas_thread():
        Z = choose_inducing(data[0], args)
    print("split: %d train%s, %d test (seed %d); %d inducing points (%s), fixed; %s kernel; "
          "start: signal variance 1, length scales 1, noise %.3g; SVGP: batch %d, %d passes; "
          "%d interleaved repetition(s), float64"
          % (data[1].size, "" if data[1].size == n_train else " (of %d)" % n_train,
             data[3].size, args.seed, Z.shape[0], args.inducing, args.kernel,
             args.init_noise, args.batch_size, args.passes, args.peer_repeats))
    if args.opt:
        print("  skvi SVGP extra options: %s" % args.opt)
    results = {m: [] for m in methods}
    start_all = time.perf_counter()
    with one_blas_thread():
        for rep in range(args.peer_repeats):
            for method in methods:
                lib = method.split()[0]
                if lib == "skvi":
                    r = fit_skvi(method, data, Z, args)
                elif lib == "gpytorch":
                    r = fit_gpytorch(method, data, Z, args, *have[lib][0])
                else:
                    r = fit_gpflow(method, data, Z, args, *have[lib][0])
                results[method].append(r)
                print("  rep %d  %-14s fit %7.1f s  NLL %.4f  RMSE %.4f  (%s)"
                      % (rep, method, r["seconds"], r["nll"], r["rmse"], r["note"]), flush=True)
    print("part peers: %.1f s" % (time.perf_counter() - start_all))
    print()
    med = {m: {k: float(np.median([r[k] for r in rs])) for k in ("seconds", "nll", "rmse")}
           for m, rs in results.items()}
    libs = [lib for lib in PEER_LIBRARIES if any(m.startswith(lib + " ") for m in methods)]
    if not any(m.startswith("skvi ") for m in methods):
        libs = []  # nothing to compare
    header = (["method", "fit [s]", "test NLL", "test RMSE"]
              + ["time / %s" % lib for lib in libs] + ["NLL - %s" % lib for lib in libs])
    body = []
    for m in methods:
        ratios, diffs = [], []
        for lib in libs:
            peer = "%s %s" % (lib, m.split()[1])
            if m.startswith("skvi ") and peer in med:
                ratios.append("%.2f" % (med[m]["seconds"] / med[peer]["seconds"]))
                diffs.append("%+.4f" % (med[m]["nll"] - med[peer]["nll"]))
            else:
                ratios.append("")
                diffs.append("")
        body.append([m, "%.1f" % med[m]["seconds"], "%.4f" % med[m]["nll"],
                     "%.4f" % med[m]["rmse"]] + ratios + diffs)
    print("California housing, %d train / %d test rows, %d inducing points, %s kernel: "
          "medians over %d repetition(s) (z-scored target)"
          % (data[1].size, data[3].size, Z.shape[0], args.kernel, args.peer_repeats))
    print(format_table(header, body, (False,) + (True,) * (len(header) - 1)))
    if libs:
        print("(time / LIB: skvi's median fit time over LIB's for the same approximation, "
              "SGPR to SGPR and SVGP to SVGP; NLL - LIB: the difference of their median "
              "test NLLs)")
    print("learned hyperparameters (last repetition):")
    for m in methods:
        print("  %-14s %s" % (m, results[m][-1]["hyper"]))
    print()
    if args.profile:
        with one_blas_thread():
            for m in methods:
                if m.startswith("skvi"):
                    print("cProfile of one more %s fit (untimed), top 15 by tottime:" % m)
                    print(profile_skvi(m, data, Z, args))


# ------------------------------------------------------------- part classifier
def load_a9a(folder=None, files=None):
    """a9a and a9a.t as dense float64 arrays, labels -1/+1 mapped to 0/1.

    The paths read are appended to ``files``; nothing is downloaded.
    """
    from skvi.datasets import DataNotFoundError, fetch_libsvm

    parts = []
    for subset in ("train", "test"):
        try:
            bunch = fetch_libsvm("a9a", subset=subset, data_home=folder,
                                 download_if_missing=False)
        except DataNotFoundError as exc:
            sys.exit("error: %s\npass --clf-data FOLDER (the folder that holds a9a and a9a.t) "
                     "or set SKVI_DATA" % exc)
        assert bunch.data.shape[1] == A9A_FEATURES
        parts += [bunch.data.toarray(), (bunch.target > 0).astype(np.int64)]
        if files is not None:
            files += bunch.filenames
    return parts


def bernoulli_nll(y, p):
    p = np.clip(p, PROBABILITY_CLIP, 1.0 - PROBABILITY_CLIP)
    return -float(np.mean(np.where(y == 1, np.log(p), np.log1p(-p))))


def clf_kernel(args):
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    return (ConstantKernel(1.0, CONSTANT_BOUNDS)
            * RBF(args.clf_length_scale, LENGTH_SCALE_BOUNDS))


def fit_classifier(method, data, Z, args, gpflow_modules=None):
    """One fit of a classifier row; returns its time, test accuracy, NLL and notes."""
    from sklearn.exceptions import ConvergenceWarning

    X_tr, y_tr, X_te, y_te = data
    if method == "logistic regression":
        from sklearn.linear_model import LogisticRegression

        start = time.perf_counter()
        model = LogisticRegression(max_iter=1000).fit(X_tr, y_tr)
        seconds = time.perf_counter() - start
        p = model.predict_proba(X_te)[:, 1]
        hyper, note = "C=1 (L2), %d features" % X_tr.shape[1], "%d lbfgs iterations" % (
            model.n_iter_[0])
    elif method.startswith("skvi"):
        from skvi import SVISparseGPClassifier

        params = {"inducing_points": Z, "random_state": args.seed}
        if method == "skvi online":
            params.update(learning_method="online", batch_size=args.batch_size,
                          max_iter=args.clf_passes)
        else:
            params.update(learning_method="batch", max_iter=args.clf_batch_max_iter)
        params.update(args.clf_opt)
        model = SVISparseGPClassifier(clf_kernel(args), **params)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X_tr, y_tr)
        seconds = time.perf_counter() - start
        p = model.predict_proba(X_te)[:, 1]
        params = model.kernel_.get_params()
        hyper = "signal variance %.4g, length scale %.4g" % (
            params["k1__constant_value"], params["k2__length_scale"])
        note = "%d passes%s, %d rejected steps" % (
            model.n_iter_, ", converged" if model.converged_ else "", model.n_rejected_steps_)
    else:
        tf, gpflow = gpflow_modules
        Y = y_tr.astype(np.float64)[:, None]
        start = time.perf_counter()
        kernel = gpflow.kernels.SquaredExponential(variance=1.0,
                                                   lengthscales=args.clf_length_scale)
        # invlink=sigmoid: the logistic link of SVISparseGPClassifier (GPflow's default is
        # the probit link, inv_probit); its expectations then use Gauss-Hermite quadrature.
        likelihood = gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)
        model = gpflow.models.SVGP(kernel, likelihood, Z.copy(), whiten=True,
                                   num_data=y_tr.size)
        gpflow.set_trainable(model.inducing_variable, False)
        steps, first = train_gpflow_svgp(tf, gpflow, model, X_tr, Y, args, args.clf_passes)
        seconds = time.perf_counter() - start
        p = model.predict_y(X_te)[0].numpy().ravel()
        hyper = _gpflow_hyper(model)
        note = "%d passes, %d steps, the first %.1f s with tracing" % (
            args.clf_passes, steps, first)
    return {"seconds": seconds, "acc": float(np.mean((p > 0.5) == (y_te == 1))),
            "nll": bernoulli_nll(y_te, p), "hyper": hyper, "note": note}


def run_classifier(args):
    print("== Part classifier: sparse GP classification of a9a, skvi against GPflow")
    gpflow_modules = None
    if "gpflow SVGP" in args.clf_methods:
        try:
            gpflow_modules = import_gpflow()
        except Skipped as exc:
            print("part classifier skipped: %s" % exc)
            print()
            return
        tf, gpflow = gpflow_modules
        print("  tensorflow %s, gpflow %s; %s" % (tf.__version__, gpflow.__version__,
                                                 tf_threads(tf)))
    files = []
    X_tr, y_tr, X_te, y_te = load_a9a(args.clf_data, files)
    n_train = y_tr.size
    X_tr, y_tr = subsample(X_tr, y_tr, args.max_train, args.seed)
    data = (X_tr, y_tr, X_te, y_te)
    from sklearn.cluster import KMeans

    with one_blas_thread():
        start = time.perf_counter()
        Z = KMeans(args.clf_inducing, n_init=1, random_state=args.seed).fit(X_tr).cluster_centers_
        kmeans_seconds = time.perf_counter() - start
    print("data: %s; %d train%s, %d test rows, %d binary features (dense float64), "
          "%.1f%% positive in train"
          % (", ".join(os.path.abspath(f) for f in files), y_tr.size,
             "" if y_tr.size == n_train else " (of %d)" % n_train, y_te.size, X_tr.shape[1],
             100.0 * y_tr.mean()))
    print("%d k-means inducing points (KMeans(n_init=1), %.1f s, not timed below), fixed; "
          "isotropic RBF from signal variance 1, length scale %.3g, learned; online: batch "
          "%d, %d passes; skvi batch: max_iter %d; GPflow: NaturalGradient(gamma=%.3g) + "
          "Adam(%.3g), logistic link; %d interleaved repetition(s)"
          % (Z.shape[0], kmeans_seconds, args.clf_length_scale, args.batch_size,
             args.clf_passes, args.clf_batch_max_iter, args.ngd_lr, args.adam_lr,
             args.clf_repeats))
    if args.clf_opt:
        print("  skvi extra options: %s" % args.clf_opt)
    results = {m: [] for m in args.clf_methods}
    start_all = time.perf_counter()
    with one_blas_thread():
        for rep in range(args.clf_repeats):
            for method in args.clf_methods:
                r = fit_classifier(method, data, Z, args, gpflow_modules)
                results[method].append(r)
                print("  rep %d  %-19s fit %7.1f s  acc %.4f  NLL %.4f  (%s)"
                      % (rep, method, r["seconds"], r["acc"], r["nll"], r["note"]), flush=True)
    print("part classifier: %.1f s" % (time.perf_counter() - start_all))
    print()
    med = {m: {k: float(np.median([r[k] for r in rs])) for k in ("seconds", "acc", "nll")}
           for m, rs in results.items()}
    peer = med.get("gpflow SVGP")
    header = ["method", "fit [s]", "test acc", "test NLL", "time / gpflow", "NLL - gpflow"]
    body = []
    for m in args.clf_methods:
        ratio = diff = ""
        if m.startswith("skvi") and peer is not None:
            ratio = "%.2f" % (med[m]["seconds"] / peer["seconds"])
            diff = "%+.4f" % (med[m]["nll"] - peer["nll"])
        body.append([m, "%.1f" % med[m]["seconds"], "%.4f" % med[m]["acc"],
                     "%.4f" % med[m]["nll"], ratio, diff])
    print("a9a, %d train / %d test rows, %d inducing points, isotropic RBF: medians over %d "
          "repetition(s)" % (y_tr.size, y_te.size, Z.shape[0], args.clf_repeats))
    print(format_table(header, body, (False,) + (True,) * 5))
    print("(test NLL: mean -log p(y | x), p clipped to [%g, 1 - %g]; time / gpflow: skvi's "
          "median fit time over GPflow SVGP's)" % (PROBABILITY_CLIP, PROBABILITY_CLIP))
    print("learned hyperparameters (last repetition):")
    for m in args.clf_methods:
        print("  %-19s %s" % (m, results[m][-1]["hyper"]))
    print()


def skvi_commit():
    """The commit of the skvi checkout imported (with '+changes' for a dirty tree), or ''."""
    import subprocess

    import skvi

    where = os.path.dirname(os.path.abspath(skvi.__file__))
    try:
        head = subprocess.run(["git", "-C", where, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return (" (git %s%s)" % (head, "+changes" if dirty else "")) if head else ""


def main(argv=None):
    wall = time.perf_counter()
    args = parse_args(argv)
    housing = args.part != "classifier"
    if housing:
        X, y = load_data(args.data)
    print("Python %s on %s" % (platform.python_version(), platform.platform()))
    for name in ("numpy", "scipy", "sklearn", "skvi", "threadpoolctl", "torch", "gpytorch",
                 "tensorflow", "tensorflow_probability", "gpflow"):
        print("  %-22s %s%s" % (name, version(name), skvi_commit() if name == "skvi" else ""))
    if housing:
        print("data: %s, %d rows x %d inputs" % (os.path.abspath(args.data), *X.shape))
    print()
    if args.part in ("fig3", "both", "all"):
        run_fig3(X, y, args)
    if args.part in ("peers", "both", "all"):
        run_peers(X, y, args)
    if args.part in ("classifier", "all"):
        run_classifier(args)
    print("total wall time %.1f s" % (time.perf_counter() - wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
