"""Posterior of a Normal mean and precision: batch VMP against SVI schedules.

Fits :class:`skvi.GaussianGammaVB` by batch coordinate ascent and by SVI with
three step-size schedules, and prints how far each SVI fit ends from the batch
fixed point after a few passes.  Run: ``python examples/gaussian_gamma_schedules.py``.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skvi import GaussianGammaVB
from skvi.schedules import AdaptiveRate, RobbinsMonro, WarmupRobbinsMonro

rng = np.random.RandomState(0)
X = rng.normal([0.0, 10.0, -3.0], [1.0, 5.0, 0.1], size=(50_000, 3))

batch = GaussianGammaVB(tol=1e-12).fit(X)
sd_mu = 1 / np.sqrt(batch.mean_precision_)
print(f"batch VMP: ELBO {batch.lower_bound_:.3f} after {batch.n_iter_} passes")

for schedule in [RobbinsMonro(), WarmupRobbinsMonro(n_warmup=10), AdaptiveRate()]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svi = GaussianGammaVB(learning_method="online", batch_size=500, max_iter=3,
                              learning_rate=schedule, random_state=0).fit(X)
    err = np.max(np.abs(svi.mean_ - batch.mean_) / sd_mu)
    # The exact ELBO of the SVI posterior on all the rows (an online fit's
    # lower_bound_ is its estimate on a sample of them).
    print(f"{schedule!r:40s} ELBO {svi.elbo(X):.3f}, "
          f"max |E[mu] - batch| = {err:.3f} posterior sd")
