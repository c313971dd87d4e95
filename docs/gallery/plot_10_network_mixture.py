"""
A Gaussian mixture declared node by node, fitted online
=======================================================

:mod:`skvi.networks` declares a Bayesian network with BayesPy's node names:
here a mixture of Gaussians, with Dirichlet weights, categorical
assignments, Gaussian means and Wishart precisions.  The same declaration,
wrapped in a function of the number of rows, becomes a scikit-learn
estimator, :class:`skvi.networks.SVIBayesianNetwork`, fitted here by
stochastic variational inference over minibatches; its ``transform`` gives
each point's cluster probabilities.
"""

import matplotlib.pyplot as plt
import numpy as np

from skvi.networks import (Categorical, Dirichlet, Gaussian, Mixture, SVIBayesianNetwork,
                           Wishart)

rng = np.random.RandomState(0)
centers = np.array([[0.0, 0.0], [5.0, 1.0], [1.0, 5.0]])
X = np.vstack([c + rng.randn(2000, 2) @ np.diag(s) for c, s in
               zip(centers, ([1.0, 0.5], [0.6, 1.2], [0.8, 0.8]))])
K, D = 3, 2

# %%
# The network
# -----------
# ``mixture(n_rows)`` returns the observed node; the assignments ``z`` have
# the rows' plate, so they are local (fitted per minibatch), the weights,
# means and precisions global.


def mixture(n_rows):
    alpha = Dirichlet(np.ones(K), name="alpha")
    z = Categorical(alpha, plates=(n_rows,), name="z")
    mu = Gaussian(np.zeros(D), 1e-3 * np.identity(D), plates=(K,), name="mu")
    Lambda = Wishart(D, 1e-2 * np.identity(D), plates=(K,), name="Lambda")
    return Mixture(z, Gaussian, mu, Lambda, name="y")


net = SVIBayesianNetwork(model=mixture, learning_method="online", batch_size=200,
                         max_iter=3, tol=0, random_state=0).fit(X)
print(net.global_nodes_, net.local_nodes_)
print(np.round(net.nodes_["mu"].get_moments()[0], 2))

# %%
# Responsibilities and the fitted covariances
# -------------------------------------------
# Each point coloured by its cluster probabilities; the ellipses are two
# standard deviations of ``E[Lambda]^-1`` around ``E[mu]``.

resp = net.transform(X)
means = net.nodes_["mu"].get_moments()[0]
covs = np.linalg.inv(net.nodes_["Lambda"].get_moments()[0])
fig, ax = plt.subplots(figsize=(5, 5))
ax.scatter(X[:, 0], X[:, 1], c=resp, s=2)
t = np.linspace(0, 2 * np.pi, 100)
for m, c in zip(means, covs):
    ring = m + 2 * np.stack([np.cos(t), np.sin(t)], axis=1) @ np.linalg.cholesky(c).T
    ax.plot(ring[:, 0], ring[:, 1], color="k")
ax.set_title("SVIBayesianNetwork: online fit, 3 passes")
plt.show()
