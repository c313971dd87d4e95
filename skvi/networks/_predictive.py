"""Posterior predictive means of an observed node, and the fitted network's public API on them.

``E[y] = E_q[E[y | parents]]``: the mean of the node's family at its
parents' expected mean parameters, which is exact for the families here
because each mean is linear in one parent's mean (a Gaussian's in its mean,
a Poisson's in its rate, a categorical's or Bernoulli's in its
probabilities); a mixture's is the responsibilities' average of its
clusters' means.
"""

import math

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils._available_if import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine import blockwise_elsewhere
from ..engine.data import Rows

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


class NetworkPredictions(TransformerMixin):
    """:class:`~skvi.networks.SVIBayesianNetwork`'s answers for new rows at the fitted globals.

    ``transform``, ``predict``, ``predict_proba`` and ``score``: each builds
    the rows' network from the declared one (the estimator's ``_network``),
    sets the fitted globals, and reads the observed or a local node.  A
    ``TransformerMixin``, so that ``set_output`` wraps the ``transform``
    defined here.
    """

    def _fitted_rows(self, X, y=None):
        """Validated rows: with the observed values when given (inputs: y; else X)."""
        check_is_fitted(self, "natural_params_")
        if not self._takes_inputs:
            X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite="allow-nan")
            return Rows(X, None, None)
        if y is None:
            X = validate_data(self, X, reset=False, dtype=np.float64)
            return Rows(X, None, None)
        return self._prepare_data(X, y, None, reset=False)

    def _predictive_network(self, rows):
        """The rows' network at the fitted globals, nothing observed: locals from their prior."""
        _, y_name, latent_local, glob = self._template()
        nodes = self._network(rows)
        self._set_globals(nodes, glob, self.natural_params_)
        for n in latent_local:  # parents first: each local node's prior given its parents
            nodes[n].initialize_from_prior()
        return nodes, nodes[y_name]

    def transform(self, X, y=None):
        """The posterior mean of a local node for each row of X (globals fixed).

        For a mixture's assignments, the responsibilities.  With a builder of
        the inputs, X are the rows' inputs and ``y`` their observations; without
        ``y`` the local nodes are at their prior given the inputs and globals.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows (the observations, or with ``fit(X, y)`` the inputs).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            The rows' observations, for a network fitted on ``(X, y)``.

        Returns
        -------
        ndarray of shape (n_samples, n_values)
            ``E_q`` of ``transform_node``'s variable, one row per row of X.
        """
        rows = self._fitted_rows(X, y)
        _, _, latent_local, _ = self._template()
        if not latent_local:
            raise NetworkError("the network has no local latent node to transform to")
        name = self.transform_node or latent_local[0]
        if name not in latent_local:
            raise ValueError(
                f"transform_node={name!r} is not a local latent node; they are {latent_local}"
            )
        if self._takes_inputs and y is None:
            nodes, _ = self._predictive_network(rows)
        else:
            nodes = self._local_network(rows, self.natural_params_, remember=False)
        u = np.asarray(nodes[name].get_moments()[0])
        return u.reshape(rows.shape[0], -1)

    def get_feature_names_out(self, input_features=None):
        """The names of :meth:`transform`'s columns: the local node's name and an index.

        Parameters
        ----------
        input_features : None
            Ignored (the columns are the local node's values, not X's).

        Returns
        -------
        ndarray of str
            ``'<node><i>'`` for each column, as ``set_output`` names them.
        """
        check_is_fitted(self, "natural_params_")
        nodes, _, latent_local, _ = self._template()
        name = self.transform_node or (latent_local[0] if latent_local else None)
        if name not in latent_local:
            raise NetworkError("the network has no local latent node to transform to")
        node = nodes[name]
        plates = list(node.plates)
        del plates[self._declaration.row_axis[name]]
        width = math.prod(plates) * math.prod(node.dims[0])
        return np.asarray([f"{name}{i}" for i in range(width)], dtype=object)

    def _fitted_on_inputs(self):
        # predict and predict_proba exist for a network fitted on (X, y).
        return self._takes_inputs

    @available_if(_fitted_on_inputs)
    @blockwise_elsewhere
    def predict(self, X):
        """The posterior predictive mean of the observed node for the inputs X.

        ``E[y] = E_q[E[y | parents]]`` at the fitted globals, the rows' local
        nodes at their prior given the inputs: ``X E[w]`` for a regression's
        ``SumMultiply('d,d->', X, w)``; a mixture's responsibilities times its
        clusters' means.  For a categorical node, the most probable category.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows' inputs (a network fitted on ``(X, y)``).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_outputs)
            One prediction per row, shaped as the ``y`` of the fit.
        """
        mean, observed = self._predictive(X)
        if observed._kind.name == "categorical":
            return np.argmax(mean, axis=-1).reshape(mean.shape[0], -1).squeeze(axis=1)
        mean = mean.reshape(mean.shape[0], -1)
        return mean[:, 0] if self._y_1d and mean.shape[1] == 1 else mean

    @available_if(_fitted_on_inputs)
    @blockwise_elsewhere
    def predict_proba(self, X):
        """The posterior predictive class probabilities of a categorical or Bernoulli node.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows' inputs (a network fitted on ``(X, y)``).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            ``P(y = k)`` per row (a Bernoulli's classes 0 and 1).
        """
        mean, observed = self._predictive(X)
        kind = observed._kind.name
        if kind not in ("categorical", "bernoulli") or observed.plates[1:]:
            raise NetworkError(
                f"{observed.describe()}: predict_proba needs a categorical or Bernoulli "
                f"observed node with one value per row, got a {observed._kind.describe} "
                f"with plates {observed.plates}"
            )
        if kind == "bernoulli":
            return np.column_stack([1.0 - mean, mean])
        return np.asarray(mean)

    def _predictive(self, X):
        check_is_fitted(self, "natural_params_")
        if not self._takes_inputs:
            raise NetworkError(
                "predict needs a network of inputs, fitted on (X, y) with a builder of the "
                "inputs; this one was fitted on X alone"
            )
        rows = self._fitted_rows(X)
        _, observed = self._predictive_network(rows)
        return np.asarray(predictive_mean(observed)), observed

    def score(self, X, y=None):
        """The data part of the ELBO per row: globals fixed, the rows' local nodes optimised.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows (the observations, or with ``fit(X, y)`` the inputs).
        y : array-like or None, default=None
            The rows' observations, for a network fitted on ``(X, y)``;
            ignored otherwise.

        Returns
        -------
        float
            ``(E_q[log p(y, locals | globals)] - E_q[log q(locals)]) / n_samples``.
        """
        if self._takes_inputs and y is None:
            raise ValueError("this network was fitted on (X, y): score(X, y) needs y")
        rows = self._fitted_rows(X, y)
        bound = self._local_bound(rows, None, self.natural_params_) / rows.shape[0]
        # The fit's memos of its rows: nothing of the scored rows stays.
        self.__dict__.pop("_bound_memo", None)
        self.__dict__.pop("_observed_memo", None)
        return bound
