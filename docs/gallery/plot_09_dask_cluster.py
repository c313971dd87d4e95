"""
Fitting on a dask cluster: the data stay on the workers
=======================================================

Every skvi estimator fits on a dask cluster when it is given a dask array
or dataframe and a ``distributed.Client`` is active
(:mod:`skvi.distributed`): the rows stay in blocks on the workers, each
worker computes the summed sufficient statistics of its blocks, and only
the model's global parameters go out and those sums come back.  With the
same steps as in memory, a model whose local step draws no random numbers
ends where the in-memory fit ends, to rounding.

Here a local cluster of two workers (threads of this process, so that the
example needs no scheduler) fits a Bayesian linear regression with one
prior precision per weight (automatic relevance determination,
:class:`skvi.SVILinearRegression` with ``ard=True``) to 400,000 rows and 20
features, of which 5 matter.  On a real cluster only the ``Client`` line
changes: ``Client("scheduler-address:8786")``.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from skvi import SVILinearRegression
from skvi.distributed import traffic

n_rows, n_features = 400_000, 20
w_true = np.zeros(n_features)
w_true[:5] = [2.0, -1.5, 1.0, 0.5, -0.25]

# %%
# The cluster and the blocks
# --------------------------
# The rows are drawn on the workers, in eight blocks of 50,000 rows, and
# ``client.persist`` keeps them in the workers' memory, as data read by the
# workers themselves (``dask.array.from_zarr``,
# ``dask.dataframe.read_parquet``) would be.  (A large numpy array wrapped
# by ``dask.array.from_array`` would instead travel from this process to
# the workers inside the task graph.)

cluster = LocalCluster(
    n_workers=2, threads_per_worker=1, processes=False,
    dashboard_address=":0",  # the dashboard on any free port
)
client = Client(cluster)
rng = da.random.default_rng(0)
Xd = rng.normal(size=(n_rows, n_features), chunks=(50_000, n_features))
yd = Xd @ w_true + 1.0 + rng.normal(size=n_rows, chunks=50_000)
Xd, yd = client.persist([Xd, yd])
print(f"{Xd.numblocks[0]} blocks on {len(client.scheduler_info()['workers'])} workers")
print(f"X: {Xd.nbytes / 1e6:.0f} MB on the workers")

# %%
# For the comparison below, and only for it, a copy of the rows comes to
# this process.

X, y = Xd.compute(), yd.compute()

# %%
# Fit on the cluster and in memory
# --------------------------------
# The same estimator, given dask arrays, fits on the cluster.
# :func:`skvi.distributed.traffic` records the pickled bytes that the fit
# sent to the workers and gathered from them.

with traffic() as sent:
    on_cluster = SVILinearRegression(ard=True).fit(Xd, yd)
in_memory = SVILinearRegression(ard=True).fit(X, y)
print(f"{on_cluster.n_iter_} passes on the cluster, {in_memory.n_iter_} in memory")
print(
    "largest |coef_ difference|:",
    f"{np.abs(on_cluster.coef_ - in_memory.coef_).max():.1e}; ELBO",
    f"{on_cluster.lower_bound_:.3f} against {in_memory.lower_bound_:.3f}",
)
print(
    f"sent to the workers {sent.bytes_out / 1e3:.0f} kB, gathered "
    f"{sent.bytes_in / 1e3:.0f} kB, in {sent.round_trips} round trips"
)

# %%
# Predictions stay blockwise too: ``predict`` on a dask array returns a lazy
# dask array, computed where the blocks are.

prediction = on_cluster.predict(Xd)
print(type(prediction).__name__, prediction.chunks[0][:2], "...")
rmse = float(da.sqrt(((prediction - yd) ** 2).mean()).compute())
print(f"training RMSE {rmse:.4f} (noise sd 1)")
client.close()
cluster.close()

# %%
# What the posterior says
# -----------------------
# Left: each weight's posterior mean with two posterior standard deviations
# (from ``sigma_``), against the true weights; ARD drives the fifteen
# unused weights to zero.  Right: what the cluster fit sent and gathered,
# against the size of the data, which it left on the workers.

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [2, 1]})
sd = np.sqrt(np.diag(on_cluster.sigma_))
ax0.errorbar(
    np.arange(n_features), on_cluster.coef_, yerr=2 * sd, fmt="o", color="C3", ms=4,
    label="posterior mean +- 2 sd (cluster fit)",
)
ax0.plot(np.arange(n_features), w_true, "kx", label="true weight")
ax0.axhline(0, color="0.6", lw=0.8)
ax0.set_xticks(range(0, n_features, 2))
ax0.set_xlabel("feature")
ax0.set_ylabel("weight")
ax0.legend(fontsize=8)

sizes = [Xd.nbytes + yd.nbytes, sent.bytes_out, sent.bytes_in]
ax1.bar(["data", "sent", "gathered"], sizes, color=["0.6", "C0", "C1"])
ax1.set_yscale("log")
ax1.set_ylabel("bytes")
for i, size in enumerate(sizes):
    ax1.text(i, size * 1.3, f"{size / 1e3:,.0f} kB", ha="center", fontsize=8)
ax1.set_ylim(1e3, 1e10)
fig.tight_layout()
plt.show()
