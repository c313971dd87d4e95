"""Posterior predictive means of an observed node, from its parents' posteriors.

``E[y] = E_q[E[y | parents]]``: the mean of the node's family at its
parents' expected mean parameters, which is exact for the families here
because each mean is linear in one parent's mean (a Gaussian's in its mean,
a Poisson's in its rate, a categorical's or Bernoulli's in its
probabilities); a mixture's is the responsibilities' average of its
clusters' means.
"""

import numpy as np

from ._deterministic import _ClusterAxisLast
from ._dirichlet import Dirichlet
from ._discrete import Bernoulli, Categorical, Poisson
from ._mixture import Mixture
from ._node import Constant
from ._plates import NetworkError


def _probabilities(node):
    """``E[p]`` of a Dirichlet (or Beta) node or of fixed probabilities: ``plates + (K,)``."""
    if isinstance(node, _ClusterAxisLast):
        return node._move(_probabilities(node.parents[0]), 1)
    if hasattr(node, "_mean_probabilities"):  # a link: E[sigmoid(f)], E[softmax(F)]
        return node._mean_probabilities()
    if isinstance(node, Constant) or node.phi is None:
        return np.exp(node.u[0])
    if isinstance(node, Dirichlet):
        alpha = np.asarray(node.phi[0])
        return alpha / alpha.sum(axis=-1, keepdims=True)
    raise NetworkError(f"{node.describe()}: no mean probabilities")


def _family_mean(family, node, parents, proto=None):
    """``E[y | parents]`` averaged over q: the family's mean at the parents' means."""
    if issubclass(family, Categorical):
        return _probabilities(parents[0])
    if issubclass(family, Bernoulli):
        return _probabilities(parents[0])[..., 0]
    if issubclass(family, Poisson):
        return np.asarray(parents[0].u[0])
    if node._kind.name == "gaussian":
        # The mean at the expected natural parameters: E[Lambda]^-1 E[Lambda mu], E[mu].
        formulas = proto if proto is not None else node
        up = [p.u for p in parents]
        phi = formulas._phi_from_parents(up)
        return np.asarray(formulas._moments_and_cgf(phi)[0][0])
    raise NetworkError(
        f"{node.describe()}: a posterior predictive mean is implemented for Gaussian, "
        "categorical, Bernoulli and Poisson nodes and their mixtures"
    )


def predictive_mean(observed):
    """``E[y]`` of each element of ``observed`` (latent, its parents' q set).

    Returns ``plates + value shape`` (categorical: ``plates + (K,)``, the
    probabilities).
    """
    if isinstance(observed, Mixture):
        z = np.asarray(observed.parents[0].u[0])
        means = _family_mean(observed.family, observed, observed.parents[1:], observed._proto)
        nd = means.ndim - len(observed._proto.plates)
        # Clusters on the last plate axis of the parameters: average by z.
        zk = np.broadcast_to(z, observed.plates + (observed.K,))
        zk = zk.reshape(zk.shape + (1,) * nd)
        means = np.broadcast_to(
            means,
            means.shape[: means.ndim - nd - 1] + (observed.K,) + means.shape[means.ndim - nd :],
        )
        return np.sum(zk * means, axis=-1 - nd)
    mean = _family_mean(type(observed), observed, observed.parents)
    if isinstance(observed, Categorical):
        return np.broadcast_to(mean, observed.plates + mean.shape[-1:])
    shape = observed.plates
    if observed._kind.name == "gaussian":
        shape = shape + tuple(observed._kind.value_shape())
    return np.broadcast_to(mean, shape)
