"""
Matrix factorization: the rank the data need, and calibrated intervals
======================================================================

:class:`skvi.SVIMatrixFactorization` models a rating of item ``n`` by user
``m`` as ``N(mu + b_m + c_n + u_m . v_n, 1 / tau)`` with a Gaussian
posterior per user and per item, and learns each side's prior precision
matrix (a Wishart prior, as in Bayesian PMF): directions of the factors
that the data do not need get a large precision and shrink to zero.

We simulate ratings from a rank-3 model with biases, observe 10% of the
user-item pairs, fit with more components than needed (``n_components=8``),
and check the predictive intervals on held-out ratings with
:mod:`skvi.metrics`.
"""

import matplotlib.pyplot as plt
import numpy as np

from skvi import SVIMatrixFactorization
from skvi.metrics import gaussian_interval_coverage, gaussian_nlpd, rmse

rng = np.random.RandomState(0)
n_users, n_items, true_rank, noise_sd = 300, 200, 3, 0.5
U = rng.normal(size=(n_users, true_rank))
V = rng.normal(size=(n_items, true_rank))
user_bias = 0.5 * rng.normal(size=n_users)
item_bias = 0.5 * rng.normal(size=n_items)

# Each row of X is a (user id, item id) pair; y holds the ratings.
X = np.array([(m, n) for m in range(n_users) for n in range(n_items)])
X = X[rng.uniform(size=len(X)) < 0.1]
users, items = X[:, 0], X[:, 1]
y = (
    3.0
    + user_bias[users]
    + item_bias[items]
    + np.sum(U[users] * V[items], axis=1)
    + noise_sd * rng.normal(size=len(X))
)

order = rng.permutation(len(X))
train, test = order[: int(0.8 * len(X))], order[int(0.8 * len(X)) :]
print(
    f"{len(X)} ratings of {n_items} items by {n_users} users; "
    f"{len(train)} to fit, {len(test)} held out"
)

# %%
# Fit
# ---
# Batch coordinate ascent (the default ``learning_method='batch'``) until the
# ELBO changes by less than ``tol`` per pass.

mf = SVIMatrixFactorization(n_components=8, random_state=0).fit(
    X[train], y[train]
)
print(f"{mf.n_iter_} passes, converged: {mf.converged_}")
print(f"noise sd: learned {mf.noise_precision_**-0.5:.3f}, true {noise_sd}")

# %%
# Which directions are used?
# --------------------------
# ``user_precision_`` holds the posterior mean of the users' prior precision
# matrix ``E[Lambda_u]`` (the last row and column are the bias).  Of the
# eigenvalues of its factor block, three stay small (about 0.5); the other
# five are some sixty times larger, which shrinks the factors in those
# directions towards zero: the fit found the true rank.

values = np.linalg.eigvalsh(mf.user_precision_[:-1, :-1])
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(range(1, mf.n_components + 1), values)
ax.set_yscale("log")
ax.set_xlabel("eigenvalue of E[Lambda_u] (factors)")
ax.set_ylabel("prior precision")
ax.set_title("large precision = direction switched off")
fig.tight_layout()
plt.show()

# %%
# Held-out ratings
# ----------------
# ``predict(X, return_std=True)`` gives the predictive mean and standard
# deviation of each rating (noise included).  A calibrated predictive puts
# about 90% of held-out ratings inside its central 90% intervals.

mean, std = mf.predict(X[test], return_std=True)
print(
    f"RMSE {rmse(y[test], mean):.3f} (noise sd {noise_sd}), "
    f"NLPD {gaussian_nlpd(y[test], mean, std):.3f}, "
    "90% interval coverage "
    f"{gaussian_interval_coverage(y[test], mean, std, level=0.9):.3f}"
)

# %%
# Uncertainty follows the data
# ----------------------------
# A user with few training ratings has a wider posterior, and so wider
# predictions.  A user never seen in fitting is predicted from the prior:
# the global mean plus the item's bias, with the widest interval.

n_ratings = np.bincount(users[train], minlength=n_users)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.scatter(n_ratings[users[test]], std, s=6, alpha=0.5)
unknown_mean, unknown_std = mf.predict(
    np.array([[10_000, 0]]), return_std=True
)
ax.axhline(unknown_std[0], color="C3", ls="--", label="a user never seen")
ax.axhline(noise_sd, color="k", ls=":", label="noise sd")
ax.set_xlabel("training ratings of the user")
ax.set_ylabel("predictive sd of a held-out rating")
ax.legend()
fig.tight_layout()
plt.show()
print(f"unknown user, item 0: {unknown_mean[0]:.2f} +- {unknown_std[0]:.2f}")
