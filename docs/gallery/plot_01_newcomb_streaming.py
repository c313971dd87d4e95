"""
Batch and streaming posteriors on Newcomb's speed of light
==========================================================

Simon Newcomb timed light over 7442 metres 66 times in 1882; the data ship
with skvi (:func:`skvi.datasets.load_newcomb`, nanoseconds above 24800 ns).
:class:`skvi.GaussianGammaVB` models them as ``x ~ N(mu, 1 / gamma)`` with a
Normal prior on the mean ``mu`` and a Gamma prior on the precision ``gamma``.

We fit the posterior twice: by batch coordinate ascent (variational message
passing) on all 66 values, and as a stream, one ``partial_fit`` call per
chunk of 11 values with ``total_samples='auto'`` (the running count), as if
the measurements arrived one day at a time.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from skvi import GaussianGammaVB
from skvi.datasets import load_newcomb

X = load_newcomb(return_X_y=True)
print(X.shape, X.min(), X.max())

# %%
# Batch coordinate ascent
# -----------------------
# ``fit`` runs the VMP updates until the ELBO stops changing; every pass is
# recorded in ``lower_bounds_``.

batch = GaussianGammaVB(tol=1e-10).fit(X)
print(f"{batch.n_iter_} passes, converged: {batch.converged_}")
print("ELBO per pass:", np.round(batch.lower_bounds_, 3))
sd_batch = batch.mean_precision_[0] ** -0.5
print(f"E[mu] = {batch.mean_[0]:.3f}, sd[mu] = {sd_batch:.3f}")

# %%
# A stream of chunks
# ------------------
# Each ``partial_fit`` call takes one natural-gradient step on its chunk
# (11 rows, less than ``batch_size``).  With ``total_samples='auto'`` the
# posterior describes the rows seen so far, so it tightens as the stream
# grows.  We keep a copy of ``q(mu)`` after every chunk.

stream = GaussianGammaVB(
    total_samples="auto", learning_offset=1.0, learning_decay=0.6
)
snapshots = []
for start in range(0, X.shape[0], 11):
    stream.partial_fit(X[start : start + 11])
    snapshots.append(
        (
            stream.n_samples_seen_,
            stream.mean_[0],
            stream.mean_precision_[0] ** -0.5,
        )
    )
for seen, mean, sd in snapshots:
    print(f"after {seen:2d} rows: E[mu] = {mean:6.2f}, sd[mu] = {sd:.2f}")

# %%
# The posterior of the mean
# -------------------------
# ``q(mu)`` after each chunk of the stream (light to dark) and the batch
# posterior (dashed).  The two outliers (-44 and -2 ns) pull both fits: a
# Normal likelihood has no way to discount them.

grid = np.linspace(-5, 50, 500)
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.6))
colors = plt.cm.Blues(np.linspace(0.35, 1.0, len(snapshots)))
for (seen, mean, sd), color in zip(snapshots, colors):
    ax0.plot(
        grid,
        stats.norm.pdf(grid, mean, sd),
        color=color,
        label=f"stream, {seen} rows",
    )
ax0.plot(
    grid,
    stats.norm.pdf(grid, batch.mean_[0], batch.mean_precision_[0] ** -0.5),
    "k--",
    label="batch, 66 rows",
)
ax0.set_xlabel("mu (ns above 24800 ns)")
ax0.set_ylabel("density of q(mu)")
ax0.legend(fontsize=8)

ax1.hist(X[:, 0], bins=30, color="0.7")
ax1.axvline(batch.mean_[0], color="k", ls="--", label="batch E[mu]")
ax1.axvline(stream.mean_[0], color=colors[-1], label="stream E[mu]")
ax1.set_xlabel("measurement (ns above 24800 ns)")
ax1.set_ylabel("count")
ax1.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The noise precision
# -------------------
# ``q(gamma)`` is a Gamma distribution; ``1 / sqrt(E[gamma])`` is a typical
# deviation of one measurement from ``mu``.

for name, est in [("batch", batch), ("stream", stream)]:
    e_gamma = est.precision_shape_[0] / est.precision_rate_[0]
    print(
        f"{name:6s}: q(gamma) = Gamma({est.precision_shape_[0]:.1f}, "
        f"rate={est.precision_rate_[0]:.1f}), "
        f"1/sqrt(E[gamma]) = {e_gamma**-0.5:.2f} ns"
    )

# %%
# Several passes over data of known size
# --------------------------------------
# One pass of stochastic steps ends near the batch answer, not at it.  To
# pass over the same rows again, give their number as ``total_samples``:
# with ``'auto'`` every call counts its rows again, and the posterior would
# describe 132, 198, ... measurements.

known = GaussianGammaVB(
    total_samples=X.shape[0], learning_offset=1.0, learning_decay=0.6
)
for n_pass in range(1, 21):
    for start in range(0, X.shape[0], 11):
        known.partial_fit(X[start : start + 11])
    if n_pass in (1, 5, 20):
        print(
            f"pass {n_pass:2d}: E[mu] = {known.mean_[0]:.2f}, "
            f"sd[mu] = {known.mean_precision_[0] ** -0.5:.2f}"
        )
print(f"batch  : E[mu] = {batch.mean_[0]:.2f}, sd[mu] = {sd_batch:.2f}")
