"""
A sparse Gaussian process: 25 inducing points for 2,000 rows
============================================================

:class:`skvi.SVISparseGPRegressor` approximates a Gaussian process by
``M`` inducing points: the posterior is a Gaussian ``q(u)`` over the
function's values at the inducing inputs ``Z``, so a fit costs
``O(N M^2)`` instead of the exact GP's ``O(N^3)``.  Any scikit-learn kernel
works, and its hyperparameters are learned with exact gradients.

We simulate 2,000 noisy observations of a smooth function on ``[0, 10]``
with no data between 6 and 7.5, and fit

- a batch fit of Titsias's collapsed bound (L-BFGS on the kernel's
  hyperparameters and the noise, then ``q(u)`` in one step), with 25
  inducing points at k-means centres of the inputs;
- the stochastic variational GP of Hensman et al.: the same bound by
  natural-gradient steps on minibatches of 200 rows, the hyperparameters
  moving by gradient steps between them;

and compare both with scikit-learn's exact
:class:`~sklearn.gaussian_process.GaussianProcessRegressor` under the
batch fit's kernel and noise.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skvi import SVISparseGPRegressor

rng = np.random.RandomState(0)
x = rng.uniform(0, 10, size=3000)
x = x[(x < 6) | (x > 7.5)][:2000]
X = x[:, None]


def truth(x):
    return np.sin(1.5 * x) + 0.5 * np.cos(0.4 * x)


noise_sd = 0.3
y = truth(x) + noise_sd * rng.normal(size=x.size)
X_grid = np.linspace(-0.5, 10.5, 400)[:, None]

# %%
# Batch fit
# ---------
# ``n_inducing=25`` places the inducing inputs at k-means centres of the
# rows; ``optimizer='fmin_l_bfgs_b'`` (the default) learns the kernel's
# signal variance and length scale and the noise variance by maximising
# the collapsed bound.  ``lower_bound_`` is that bound at the optimum.

kernel = ConstantKernel(1.0) * RBF(1.0)
start = time.perf_counter()
sparse = SVISparseGPRegressor(kernel=kernel, n_inducing=25, random_state=0).fit(X, y)
print(f"batch fit: {time.perf_counter() - start:.2f} s")
print(f"kernel_: {sparse.kernel_}")
print(f"noise sd: learned {np.sqrt(sparse.noise_variance_):.3f}, true {noise_sd}")

# %%
# The exact GP
# ------------
# With the same kernel and noise, the exact GP's log marginal likelihood is
# an upper bound on the sparse fit's ``lower_bound_``; the gap is the
# ``tr(K - Q) / (2 s2)`` term of Titsias's bound, small when the inducing
# points summarise the function well.  Both fit the target centred and
# scaled to unit variance (``normalize_y``): the kernel is that of the
# normalised target, and the noise variance, in the units of ``y``, is
# divided by ``y``'s variance for scikit-learn's ``alpha``.

start = time.perf_counter()
exact = GaussianProcessRegressor(
    sparse.kernel_, alpha=sparse.noise_variance_ / np.var(y), optimizer=None, normalize_y=True
).fit(X, y)
print(f"exact GP on the same kernel: {time.perf_counter() - start:.2f} s")
print(
    f"log marginal likelihood {exact.log_marginal_likelihood_value_:.2f}, "
    f"sparse bound {sparse.lower_bound_:.2f}"
)
mean_s, sd_s = sparse.predict(X_grid, return_std=True)
mean_e, sd_e = exact.predict(X_grid, return_std=True)
print(
    f"largest |mean difference| {np.abs(mean_s - mean_e).max():.4f}, "
    f"largest |sd difference| {np.abs(sd_s - sd_e).max():.4f}"
)

# %%
# Stochastic variational GP
# -------------------------
# ``learning_method='online'`` takes natural-gradient steps on ``q(u)`` from
# minibatches of 200 rows and, after each, a gradient step on the
# hyperparameters; the inducing inputs are k-means centres of the first
# rows it sees.  It never holds more than a minibatch's kernel matrix.

start = time.perf_counter()
svgp = SVISparseGPRegressor(
    kernel=kernel,
    n_inducing=25,
    learning_method="online",
    batch_size=200,
    max_iter=30,
    random_state=0,
).fit(X, y)
print(f"online fit: {svgp.n_iter_} passes, {time.perf_counter() - start:.2f} s")
print(f"kernel_: {svgp.kernel_}, noise sd {np.sqrt(svgp.noise_variance_):.3f}")
mean_o, sd_o = svgp.predict(X_grid, return_std=True)

# %%
# Predictions
# -----------
# The predictive mean of the latent function and two standard deviations
# (``predict(X, return_std=True)`` gives the sd of ``f``, without the
# noise).  Inside the data the sparse fits follow the exact GP; in the gap
# and beyond the data their uncertainty grows as the exact GP's does.  The
# ticks at the bottom are the inducing inputs.

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, (name, mean, sd, est) in zip(
    axes,
    [("batch (collapsed bound)", mean_s, sd_s, sparse), ("online (SVGP)", mean_o, sd_o, svgp)],
):
    ax.scatter(x[::4], y[::4], s=2, color="0.7", label="data (every 4th row)")
    ax.plot(X_grid[:, 0], truth(X_grid[:, 0]), "k:", lw=1, label="true function")
    ax.plot(X_grid[:, 0], mean_e, color="C0", lw=1, label="exact GP")
    ax.fill_between(X_grid[:, 0], mean_e - 2 * sd_e, mean_e + 2 * sd_e, color="C0", alpha=0.15)
    ax.plot(X_grid[:, 0], mean, color="C3", lw=1.5, label=name)
    ax.plot(X_grid[:, 0], mean - 2 * sd, color="C3", lw=0.8, ls="--")
    ax.plot(X_grid[:, 0], mean + 2 * sd, color="C3", lw=0.8, ls="--")
    z = est.inducing_points_[:, 0]
    ax.plot(z, np.full_like(z, -2.4), "|", color="C3", ms=10)
    ax.set_title(name)
    ax.set_xlabel("x")
    ax.set_ylim(-2.6, 2.6)
axes[0].set_ylabel("f(x)")
axes[0].legend(fontsize=7, loc="upper left")
fig.tight_layout()
plt.show()
