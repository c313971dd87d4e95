"""
A Dirichlet-process mixture: batch EM, online SVI and a stream
==============================================================

:class:`skvi.SVIBayesianGaussianMixture` is scikit-learn's
:class:`~sklearn.mixture.BayesianGaussianMixture` (same model, parameters
and fitted attributes) that can also fit by stochastic variational
inference.  With a Dirichlet-process prior on the weights it is given more
components than the data need, and the posterior switches the others off.

We draw 5,000 points in two dimensions from four Gaussian clusters of
unequal sizes, offer eight components, and fit the same model three ways:

- batch EM, which is scikit-learn's algorithm (a pass is an E-step over
  every row);
- online SVI: natural-gradient steps on minibatches of 500 rows;
- a stream: one ``partial_fit`` call per chunk of 500 rows, as if the
  rows arrived over time and were never kept.

The three are compared on 10,000 held-out points drawn from the same
clusters, by their mean log predictive density (``score``).
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Ellipse
from sklearn.mixture import BayesianGaussianMixture

from skvi import SVIBayesianGaussianMixture

rng = np.random.RandomState(0)
true_means = np.array([[-4.0, -1.0], [0.0, 3.5], [3.5, -2.0], [4.0, 3.0]])
true_covs = np.array(
    [
        [[1.0, 0.6], [0.6, 1.0]],
        [[1.5, 0.0], [0.0, 0.3]],
        [[0.4, -0.2], [-0.2, 0.8]],
        [[0.5, 0.0], [0.0, 0.5]],
    ]
)
true_weights = np.array([0.4, 0.3, 0.2, 0.1])


def draw(n):
    """``n`` points from the four clusters, in random order."""
    labels = rng.choice(4, size=n, p=true_weights)
    points = np.empty((n, 2))
    for k in range(4):
        rows = labels == k
        points[rows] = rng.multivariate_normal(true_means[k], true_covs[k], rows.sum())
    return points


X, X_test = draw(5_000), draw(10_000)

# %%
# Three fits of the same model
# ----------------------------
# ``weight_concentration_prior_type='dirichlet_process'`` is the default, as
# in scikit-learn.  The batch fit runs EM until the ELBO changes by less than
# ``tol`` per sample: the components that the data do not need lose their
# weight slowly, over a few hundred passes, hence ``max_iter=500``.  The
# online fit takes five passes of 10 steps; the stream sees each row once.

common = dict(n_components=8, random_state=0)
fits = {}
start = time.perf_counter()
fits["batch EM"] = SVIBayesianGaussianMixture(max_iter=500, **common).fit(X)
times = {"batch EM": time.perf_counter() - start}

start = time.perf_counter()
fits["online SVI"] = SVIBayesianGaussianMixture(
    learning_method="online", batch_size=500, max_iter=5, tol=0, **common
).fit(X)
times["online SVI"] = time.perf_counter() - start

start = time.perf_counter()
stream = SVIBayesianGaussianMixture(batch_size=500, **common)
for chunk in np.array_split(X, 10):
    stream.partial_fit(chunk)
fits["stream"] = stream
times["stream"] = time.perf_counter() - start

sk = BayesianGaussianMixture(max_iter=500, **common).fit(X)
print(f"scikit-learn      : held-out log density {sk.score(X_test):.4f}")
for name, gmm in fits.items():
    used = np.sum(gmm.weights_ > 0.01)
    print(
        f"{name:18s}: held-out log density {gmm.score(X_test):.4f}, "
        f"{used} components above 1% weight, {times[name]:.2f} s"
    )

# %%
# The batch fit is scikit-learn's EM: the same start (k-means on all rows)
# and the same M-step, so its components match scikit-learn's.  The
# posterior predictive density that skvi's ``score`` uses (a mixture of
# Student-t densities) counts the uncertainty of the components; here, with
# hundreds of points per cluster, it is nearly the plug-in Gaussian one.

order = np.argsort(-fits["batch EM"].weights_)
sk_order = np.argsort(-sk.weights_)
print(
    "largest |means_ - scikit-learn's| over the components in use:",
    f"{np.abs(fits['batch EM'].means_[order[:4]] - sk.means_[sk_order[:4]]).max():.2e}",
)

# %%
# The components
# --------------
# Every component drawn as its two-standard-deviation ellipse, its opacity
# the component's weight; the true clusters dashed.  The batch fit, as
# scikit-learn's, finds the four clusters and leaves the other four
# components with almost no weight.  The online fit and the stream, after
# a few passes or one, share some clusters between two components: their
# held-out density is close to the batch fit's, but their ``weights_`` do
# not count the clusters.  Switching the spare components off takes the
# batch fit's hundreds of passes.


def ellipse(mean, cov, **kwargs):
    values, vectors = np.linalg.eigh(cov)
    angle = np.degrees(np.arctan2(vectors[1, 1], vectors[0, 1]))
    width, height = 4 * np.sqrt(values[::-1])
    return Ellipse(mean, width, height, angle=angle, fill=False, **kwargs)


fig, axes = plt.subplots(1, 4, figsize=(13, 3.6), gridspec_kw={"width_ratios": [1, 1, 1, 1.1]})
for ax, (name, gmm) in zip(axes, fits.items()):
    ax.scatter(X[:3000, 0], X[:3000, 1], s=1, color="0.75")
    for k in range(4):
        ax.add_patch(ellipse(true_means[k], true_covs[k], ls="--", color="k", lw=0.8))
    for w, mean, cov in zip(gmm.weights_, gmm.means_, gmm.covariances_):
        ax.add_patch(ellipse(mean, cov, color="C3", lw=2, alpha=min(1.0, 3 * w)))
    ax.set_title(name)
    ax.set_aspect("equal")
    ax.set_xlim(-8, 7)
    ax.set_ylim(-5, 6)

width = 0.27
for i, (name, gmm) in enumerate(fits.items()):
    axes[3].bar(np.arange(8) + (i - 1) * width, np.sort(gmm.weights_)[::-1], width, label=name)
axes[3].set_yscale("log")
axes[3].set_ylim(1e-6, 1)
axes[3].set_xlabel("component (by weight)")
axes[3].set_ylabel("weights_")
axes[3].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The stream's posterior after each chunk
# ---------------------------------------
# With ``total_samples='auto'`` (the default) each ``partial_fit`` call
# scales its minibatches' statistics by the rows seen so far, so the
# posterior always describes the data of the stream up to that point.  Its
# held-out score climbs towards the batch fit's as the chunks arrive.

stream = SVIBayesianGaussianMixture(batch_size=500, **common)
scores = []
for chunk in np.array_split(X, 10):
    stream.partial_fit(chunk)
    scores.append(stream.score(X_test))
print("held-out log density after each chunk:", np.round(scores, 3))
