"""Every estimator at its defaults against its peer, in one table.

Defaults are what most users run.  For each estimator this script fits skvi
with every argument at its default (but the model's size, e.g.
``n_components``) and the scikit-learn (or other) peer in the same process,
repetitions interleaved (skvi, peer, peer, skvi, ...), on one BLAS thread,
and prints the median fit times, their ratio, a held-out measure of each,
the passes skvi took, whether it converged, and the warnings it raised
(defaults must raise none the user cannot act on).

    python benchmarks/defaults.py [--repeats 3] [--only TEXT] [--data DIR]
                                  [--json OUT] [--compare OLD.json]

``--json`` saves the rows; ``--compare`` prints them beside an earlier run's
(the same script run against another checkout with ``PYTHONPATH``), so that a
change of defaults shows its time and held-out measure before and after.

The cases (the data that need files come from ``--data``, default
``skvi.datasets.get_data_home()``; a missing file skips its case):

* mixture, online: 200,000 x 10 rows from 10 Gaussians (means N(0, 6^2) per
  coordinate, covariances A A^T with A's entries N(0, 0.4^2)), scored on
  20,000 more, against ``BayesianGaussianMixture(n_components=10,
  max_iter=200)``; the mixture at its batch default on the same data;
* logistic: a9a against ``LogisticRegression(max_iter=1000)``, test NLL;
* multinomial: digits (features / 16, stratified 70/30 split) against
  ``LogisticRegression(max_iter=1000)``'s time and
  ``LogisticRegressionCV(max_iter=3000)``'s test NLL;
* sparse GP classifier: 100 separable rows (the first two of 20 standard
  normal features, labels by the sign of the first), 10 inducing points,
  against scikit-learn's ``GaussianProcessClassifier(1.0 * RBF(1.0))`` (the
  Laplace approximation on all rows, skvi's default kernel, its default
  L-BFGS): test NLL and test accuracy on 1,000 more rows of the generator;
* sparse GP regressor: 2,000 rows of California housing (standardised)
  against ``GaussianProcessRegressor`` on the same rows: test NLPD;
* linear regression: California housing against ``BayesianRidge``: test RMSE;
* Poisson and overdispersed Poisson regression: 20,000 simulated counts
  (10 features; overdispersed by a log-normal random effect) against
  ``PoissonRegressor``: test mean Poisson deviance;
* GaussianGammaVB: 10^6 x 10 Gaussian rows against ``StandardScaler``: the
  posterior mean's error;
* LDA: 20 Newsgroups train (K = 20) against scikit-learn's
  ``LatentDirichletAllocation``: perplexity of the test documents; and skvi's
  with ``learning_method='online'`` against the same (batch) fit: the
  document-completion perplexity of the test documents;
* correlated topic model: 2,000 documents of 20 Newsgroups (K = 10) against
  scikit-learn's LDA: perplexity of the test documents;
* matrix factorization: MovieLens-100k u1 against Surprise's SVD when
  installed (else alone): test RMSE.
"""

import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Skipped, format_table, one_blas_thread  # noqa: E402


def parse_args(argv=None):
    from skvi.datasets import get_data_home

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds")
    p.add_argument("--only", default="", help="run the cases whose name contains this text")
    p.add_argument("--data", default=str(get_data_home()), help="folder of the data sets")
    p.add_argument("--json", default=None, help="save the rows to this file")
    p.add_argument("--compare", default=None, help="an earlier --json run to print beside")
    p.add_argument("--show", default=None,
                   help="print the table of a saved --json run instead of running")
    return p.parse_args(argv)


# ------------------------------------------------------------------ data
def mixture_data():
    rng = np.random.RandomState(0)
    k, d = 10, 10
    means = rng.normal(0.0, 6.0, size=(k, d))
    roots = rng.normal(0.0, 0.4, size=(k, d, d))

    def draw(n):
        labels = rng.randint(k, size=n)
        z = rng.normal(size=(n, d))
        return means[labels] + np.einsum("nij,nj->ni", roots[labels], z)

    return draw(200_000), draw(20_000)


def a9a(data):
    # The files themselves (also for a checkout of skvi without fetchers).
    from sklearn.datasets import load_svmlight_file

    folder = os.path.join(data, "a9a-adult-libsvm")
    if not os.path.isfile(os.path.join(folder, "a9a")):
        raise Skipped("%s not found (pass --data)" % folder)
    X, y = load_svmlight_file(os.path.join(folder, "a9a"), n_features=123)
    X_test, y_test = load_svmlight_file(os.path.join(folder, "a9a.t"), n_features=123)
    return X.tocsr(), y, X_test.tocsr(), y_test


def digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16.0, y, test_size=0.3, stratify=y, random_state=0)


def california(data):
    path = os.path.join(data, "california-housing", "cal_housing.data")
    if not os.path.isfile(path):
        raise Skipped("%s not found (pass --data)" % path)
    raw = np.loadtxt(path, delimiter=",")
    X, y = raw[:, :8], raw[:, 8] / 1e5
    rng = np.random.RandomState(0)
    order = rng.permutation(X.shape[0])
    X, y = X[order], y[order]
    mean, sd = X[:15000].mean(0), X[:15000].std(0)
    X = (X - mean) / sd
    return X[:15000], y[:15000], X[15000:], y[15000:]


def counts(overdispersed):
    rng = np.random.RandomState(0)
    n, d = 25_000, 10
    X = rng.normal(size=(n, d))
    w = rng.normal(0.0, 0.3, size=d)
    f = 0.5 + X @ w
    if overdispersed:
        f = f + rng.normal(0.0, 0.5, size=n)
    y = rng.poisson(np.exp(f))
    return X[:20000], y[:20000], X[20000:], y[20000:]


def newsgroups(data, n_train=None):
    folder = os.path.join(data, "20newsgroups-bydate")
    if not os.path.isfile(os.path.join(folder, "train.npz")):
        raise Skipped("%s not found (pass --data)" % folder)
    train = sp.load_npz(os.path.join(folder, "train.npz")).tocsr().astype(np.float64)
    test = sp.load_npz(os.path.join(folder, "test.npz")).tocsr().astype(np.float64)
    if n_train is not None:
        train = train[np.random.RandomState(0).permutation(train.shape[0])[:n_train]]
        test = test[:n_train // 2]
    return train, test


# ------------------------------------------------------------------ measures
def nll(proba, y, classes):
    p = proba[np.arange(y.shape[0]), np.searchsorted(classes, y)]
    return float(-np.mean(np.log(np.maximum(p, 1e-300))))


def poisson_deviance(y, mu):
    from sklearn.metrics import mean_poisson_deviance

    return float(mean_poisson_deviance(y, np.maximum(mu, 1e-12)))


# ------------------------------------------------------------------ cases
def case_mixture(args, online):
    from sklearn.mixture import BayesianGaussianMixture

    from skvi import SVIBayesianGaussianMixture

    X, X_test = mixture_data()
    kw = {"learning_method": "online"} if online else {}
    return {
        "skvi": lambda: SVIBayesianGaussianMixture(n_components=10, **kw).fit(X),
        "peer": lambda: BayesianGaussianMixture(n_components=10, max_iter=200).fit(X),
        "measure": "held-out log-lik / row",
        "skvi_score": lambda m: float(m.score(X_test)),
        "peer_score": lambda m: float(m.score(X_test)),
    }


def case_logistic(args):
    from sklearn.linear_model import LogisticRegression

    from skvi import SVILogisticRegression

    X, y, X_test, y_test = a9a(args.data)
    return {
        "skvi": lambda: SVILogisticRegression().fit(X, y),
        "peer": lambda: LogisticRegression(max_iter=1000).fit(X, y),
        "measure": "test NLL",
        "skvi_score": lambda m: nll(m.predict_proba(X_test), y_test, m.classes_),
        "peer_score": lambda m: nll(m.predict_proba(X_test), y_test, m.classes_),
    }


def case_multinomial(args):
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV

    from skvi import SVILogisticRegression

    X, X_test, y, y_test = digits()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = LogisticRegressionCV(max_iter=3000).fit(X, y)
    cv_nll = nll(cv.predict_proba(X_test), y_test, cv.classes_)
    return {
        "skvi": lambda: SVILogisticRegression().fit(X, y),
        "peer": lambda: LogisticRegression(max_iter=1000).fit(X, y),
        "measure": "test NLL (peer: LogisticRegressionCV's)",
        "skvi_score": lambda m: nll(m.predict_proba(X_test), y_test, m.classes_),
        "peer_score": lambda m: cv_nll,
    }


def case_gp_classifier(args):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF

    from skvi import SVISparseGPClassifier

    rng = np.random.RandomState(0)
    X = rng.normal(size=(100, 20))[:, :2]
    X_test = rng.normal(size=(1000, 20))[:, :2]
    y, y_test = (X[:, 0] > 0).astype(int), (X_test[:, 0] > 0).astype(int)

    def accuracy(m):
        return float(m.score(X_test, y_test))

    return {
        "skvi": lambda: SVISparseGPClassifier(n_inducing=10).fit(X, y),
        "peer": lambda: GaussianProcessClassifier(1.0 * RBF(1.0)).fit(X, y),
        "measure": "test NLL",
        "skvi_score": lambda m: nll(m.predict_proba(X_test), y_test, m.classes_),
        "peer_score": lambda m: nll(m.predict_proba(X_test), y_test, m.classes_),
        "also": {"test accuracy": accuracy},
    }


def case_gp_regressor(args):
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    from skvi import SVISparseGPRegressor

    X, y, X_test, y_test = california(args.data)
    X, y = X[:2000], y[:2000]
    X_test, y_test = X_test[:2000], y_test[:2000]

    def nlpd_skvi(m):
        mean, sd = m.predict(X_test, return_std=True)
        return float(-np.mean(norm.logpdf(y_test, mean, np.sqrt(sd ** 2 + m.noise_variance_))))

    def nlpd_peer(m):
        mean, sd = m.predict(X_test, return_std=True)
        return float(-np.mean(norm.logpdf(y_test, mean, sd)))

    kernel = ConstantKernel() * RBF(np.ones(8)) + WhiteKernel()
    return {
        "skvi": lambda: SVISparseGPRegressor().fit(X, y),
        "peer": lambda: GaussianProcessRegressor(kernel, normalize_y=True).fit(X, y),
        "measure": "test NLPD",
        "skvi_score": nlpd_skvi,
        "peer_score": nlpd_peer,
    }


def case_linear(args):
    from sklearn.linear_model import BayesianRidge

    from skvi import SVILinearRegression

    X, y, X_test, y_test = california(args.data)

    def rmse(m):
        return float(np.sqrt(np.mean((m.predict(X_test) - y_test) ** 2)))

    return {
        "skvi": lambda: SVILinearRegression().fit(X, y),
        "peer": lambda: BayesianRidge().fit(X, y),
        "measure": "test RMSE",
        "skvi_score": rmse,
        "peer_score": rmse,
    }


def case_poisson(args, overdispersed):
    from sklearn.linear_model import PoissonRegressor

    from skvi import SVIOverdispersedPoissonRegression, SVIPoissonRegression

    X, y, X_test, y_test = counts(overdispersed)
    model = SVIOverdispersedPoissonRegression if overdispersed else SVIPoissonRegression
    return {
        "skvi": lambda: model().fit(X, y),
        "peer": lambda: PoissonRegressor(alpha=1e-4, max_iter=1000).fit(X, y),
        "measure": "test Poisson deviance",
        "skvi_score": lambda m: poisson_deviance(y_test, m.predict(X_test)),
        "peer_score": lambda m: poisson_deviance(y_test, m.predict(X_test)),
    }


def case_gaussian_gamma(args):
    from sklearn.preprocessing import StandardScaler

    from skvi import GaussianGammaVB

    X = np.random.RandomState(0).normal(3.0, 2.0, size=(1_000_000, 10))
    return {
        "skvi": lambda: GaussianGammaVB().fit(X),
        "peer": lambda: StandardScaler().fit(X),
        "measure": "max |mean - 3|",
        "skvi_score": lambda m: float(np.max(np.abs(m.mean_ - 3.0))),
        "peer_score": lambda m: float(np.max(np.abs(m.mean_ - 3.0))),
    }


def case_lda(args):
    from sklearn.decomposition import LatentDirichletAllocation

    from skvi import SVILatentDirichletAllocation

    train, test = newsgroups(args.data)
    return {
        "skvi": lambda: SVILatentDirichletAllocation(n_components=20, random_state=0).fit(train),
        "peer": lambda: LatentDirichletAllocation(n_components=20, random_state=0).fit(train),
        "measure": "test perplexity",
        "skvi_score": lambda m: float(m.perplexity(test)),
        "peer_score": lambda m: float(m.perplexity(test)),
    }


def case_lda_online(args):
    from sklearn.decomposition import LatentDirichletAllocation

    from skvi import SVILatentDirichletAllocation
    from skvi.metrics import document_completion_perplexity

    train, test = newsgroups(args.data)

    def completion(m):
        return float(document_completion_perplexity(m, test, random_state=0))

    return {
        "skvi": lambda: SVILatentDirichletAllocation(
            n_components=20, learning_method="online", random_state=0
        ).fit(train),
        "peer": lambda: LatentDirichletAllocation(n_components=20, random_state=0).fit(train),
        "measure": "test completion perplexity",
        "skvi_score": completion,
        "peer_score": completion,
    }


def case_ctm(args):
    from sklearn.decomposition import LatentDirichletAllocation

    from skvi import SVICorrelatedTopicModel

    train, test = newsgroups(args.data, n_train=2000)
    return {
        "skvi": lambda: SVICorrelatedTopicModel(n_components=10, random_state=0).fit(train),
        "peer": lambda: LatentDirichletAllocation(n_components=10, random_state=0).fit(train),
        "measure": "test perplexity",
        "skvi_score": lambda m: float(m.perplexity(test)),
        "peer_score": lambda m: float(m.perplexity(test)),
    }


def case_mf(args):
    from skvi import SVIMatrixFactorization

    folder = os.path.join(args.data, "movielens-100k")
    if not os.path.isfile(os.path.join(folder, "u1.base")):
        raise Skipped("%s not found (pass --data)" % folder)
    train = np.loadtxt(os.path.join(folder, "u1.base"), dtype=np.int64)
    test = np.loadtxt(os.path.join(folder, "u1.test"), dtype=np.int64)
    X, y = train[:, :2], train[:, 2].astype(np.float64)
    X_test, y_test = test[:, :2], test[:, 2].astype(np.float64)

    def rmse(m):
        return float(np.sqrt(np.mean((np.clip(m.predict(X_test), 1, 5) - y_test) ** 2)))

    case = {
        "skvi": lambda: SVIMatrixFactorization().fit(X, y),
        "measure": "test RMSE",
        "skvi_score": rmse,
    }
    try:
        from surprise import SVD, Dataset, Reader
    except ImportError:
        return case
    import pandas as pd  # noqa: F401 (surprise reads data frames)

    frame = pd.DataFrame({"u": X[:, 0], "i": X[:, 1], "r": y})
    trainset = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5))).build_full_trainset()

    def svd_rmse(m):
        pred = np.array([m.predict(u, i).est for u, i in X_test])
        return float(np.sqrt(np.mean((pred - y_test) ** 2)))

    case.update(peer=lambda: SVD(random_state=0).fit(trainset), peer_name="Surprise SVD",
                peer_score=svd_rmse)
    return case


CASES = [
    ("mixture online", lambda a: case_mixture(a, online=True)),
    ("mixture batch", lambda a: case_mixture(a, online=False)),
    ("logistic a9a", case_logistic),
    ("multinomial digits", case_multinomial),
    ("GP classifier separable", case_gp_classifier),
    ("GP regressor california", case_gp_regressor),
    ("linear california", case_linear),
    ("Poisson counts", lambda a: case_poisson(a, overdispersed=False)),
    ("overdispersed Poisson counts", lambda a: case_poisson(a, overdispersed=True)),
    ("GaussianGammaVB 1e6 x 10", case_gaussian_gamma),
    ("LDA 20NG", case_lda),
    ("LDA 20NG online", case_lda_online),
    ("CTM 20NG 2000 docs", case_ctm),
    ("matrix factorization ML-100k u1", case_mf),
]


def run_case(name, case, repeats):
    times = {"skvi": [], "peer": []}
    models = {}
    caught = []
    sides = ["skvi"] + (["peer"] if "peer" in case else [])
    for r in range(repeats):
        for side in (sides if r % 2 == 0 else sides[::-1]):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                start = time.perf_counter()
                model = case[side]()
                times[side].append(time.perf_counter() - start)
            if side == "skvi" and r == 0:
                caught = sorted({"%s: %s" % (w.category.__name__, str(w.message)[:80])
                                 for w in seen})
            models[side] = model
    skvi = models["skvi"]
    row = {
        "case": name,
        "skvi_s": statistics.median(times["skvi"]),
        "measure": case["measure"],
        "skvi_score": case["skvi_score"](skvi),
        "passes": int(getattr(skvi, "n_iter_", 0)),
        "converged": bool(getattr(skvi, "converged_", False)),
        "warnings": caught,
    }
    # Further held-out measures, printed under the table.
    also = {key: [score(skvi), score(models["peer"]) if "peer" in models else None]
            for key, score in case.get("also", {}).items()}
    if also:
        row["also"] = also
    if "peer" in case:
        row.update(peer=case.get("peer_name", type(models["peer"]).__name__),
                   peer_s=statistics.median(times["peer"]),
                   peer_score=case["peer_score"](models["peer"]))
    return row


def main(argv=None):
    args = parse_args(argv)
    rows = []
    if args.show:
        with open(args.show) as f:
            rows = json.load(f)
    with one_blas_thread():
        for name, make in ([] if args.show else CASES):
            if args.only not in name:
                continue
            try:
                case = make(args)
            except Skipped as exc:
                print("%s: skipped (%s)" % (name, exc), flush=True)
                continue
            row = run_case(name, case, args.repeats)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json and not args.show:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    old = {}
    if args.compare:
        with open(args.compare) as f:
            old = {r["case"]: r for r in json.load(f)}
    header = ["case", "peer", "skvi s", "peer s", "skvi / peer", "measure", "skvi", "peer",
              "passes", "converged", "warnings"]
    if old:
        header[5:5] = ["before s", "before / peer"]
        header += ["before score"]
    body = []
    for r in rows:
        ratio = r["skvi_s"] / r["peer_s"] if r.get("peer_s") else float("nan")
        line = [r["case"], r.get("peer", "-"), "%.3f" % r["skvi_s"],
                "%.3f" % r["peer_s"] if "peer_s" in r else "-", "%.2f" % ratio,
                r["measure"], "%.4f" % r["skvi_score"],
                "%.4f" % r["peer_score"] if "peer_score" in r else "-",
                str(r["passes"]), "yes" if r["converged"] else "no", str(len(r["warnings"]))]
        if old:
            o = old.get(r["case"])
            before = o["skvi_s"] if o else float("nan")
            line[5:5] = ["%.3f" % before, "%.2f" % (before / r["peer_s"]) if r.get("peer_s")
                         else "-"]
            line += ["%.4f" % o["skvi_score"] if o else "-"]
        body.append(line)
    print()
    print(format_table(header, body, [False, False] + [True] * (len(header) - 2)))
    for r in rows:
        for key, (mine, theirs) in r.get("also", {}).items():
            print("  %s: %s skvi %.4f, peer %s" % (r["case"], key, mine,
                                                 "-" if theirs is None else "%.4f" % theirs))
        for w in r["warnings"]:
            print("  %s: %s" % (r["case"], w))


if __name__ == "__main__":
    main()
