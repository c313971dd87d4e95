"""The ratings of a fit as the engine sees them: id maps, rows, minibatches.

:class:`RatingsData` holds the engine's data hooks of
:class:`~skvi.SVIMatrixFactorization`: it validates the ratings
(:mod:`~skvi.models.matrix_factorization.inputs`), maps user and item ids
to node rows (:class:`~skvi.models.matrix_factorization.ids.IdEncoder`,
the same on every block of a fit on a cluster), counts each node's
ratings, and indexes each minibatch by node
(:func:`~skvi.models.matrix_factorization.nodes.prepare`).
"""

import numpy as np

from ...engine import Distinct
from ...engine import DataMoments
from .ids import IdEncoder, as_id_array, check_id_kind
from .inputs import fitted_likelihood, id_columns, likelihood_targets, raw_ratings
from .nodes import prepare
from .parameters import check_cluster_fit, check_prior_params, has_proba
from .recommend import SeenPairs

__all__ = ["RatingsData"]


class RatingsData:
    """The id maps and data hooks of :class:`~skvi.SVIMatrixFactorization`.

    A part of the estimator: ``_prepare_data``, ``_data_summary``, the
    nodes' ids and new nodes, ``_local_step``, ``_local_draws`` and
    the vocabulary of a fit on a cluster.

    Examples
    --------
    >>> from skvi import SVIMatrixFactorization
    >>> from skvi.models.matrix_factorization.data import RatingsData
    >>> issubclass(SVIMatrixFactorization, RatingsData)
    True
    """

    def _ratings(
        self, X, y, reset=False, grow=False, classes=None, sample_weight=None, vocabulary=None
    ):
        """Validated, encoded ratings of (X, y): ids to rows, ratings to targets.

        ``reset`` starts new id encoders and the likelihood's classes (from
        ``vocabulary``, the distinct ids and ratings of every block of a
        fit on a cluster, when given); ``grow`` adds unknown ids
        (``partial_fit``); otherwise unknown ids are encoded as -1
        (predicted from the prior).  ``sample_weight`` weighs the ratings:
        those of weight 0 are dropped before their ids are encoded, unit
        weights give unweighted ratings.
        """
        data = raw_ratings(self, X, y, reset, sample_weight, labels=self._categorical)
        if (reset or grow) and vocabulary is None and data.ratings.shape[0] == 0:
            # Only a sparse matrix without stored entries gets here (id
            # pairs need a row, weights a positive one): in a fit or
            # minibatch it would divide by its count of ratings.
            raise ValueError(
                f"The {X.shape[0]} x {X.shape[1]} ratings matrix stores no entries, so it "
                "holds no ratings: there is nothing to fit (a stored entry, zero included, "
                "is a rating)."
            )
        if reset:
            # A fit on a cluster encodes every block with the ids (and the
            # rating values) of all the blocks, as a fit in memory does.
            vocabulary = vocabulary or {}
            self._user_ids = IdEncoder(vocabulary.get("users", data.users))
            self._item_ids = IdEncoder(vocabulary.get("items", data.items))
            if classes is None:
                classes = vocabulary.get("ratings")
        if not grow:
            check_id_kind(data.users, self._user_ids, "user")
            check_id_kind(data.items, self._item_ids, "item")
        data.users = self._user_ids.encode(data.users, grow=grow)
        data.items = self._item_ids.encode(data.items, grow=grow)
        return self._encode_targets(data, reset=reset, classes=classes)

    def _encode_targets(self, data, reset, classes=None):
        """Map ratings to the likelihood's targets; on ``reset`` set it up.

        Categorical likelihoods learn ``classes_`` (the sorted rating values)
        and see ratings as class indices: ``'bernoulli'`` as 0/1 for
        ``classes_[0]``/``classes_[1]``, ``'ordinal'`` as ``0 .. K-1``.
        """
        if self._conjugate:
            if reset:
                self.likelihood_ = None
            return data
        if reset:
            self.likelihood_, fitted_classes = fitted_likelihood(
                self.likelihood, data.ratings, classes
            )
            if fitted_classes is not None:
                self.classes_ = fitted_classes
        return likelihood_targets(self.likelihood_, getattr(self, "classes_", None), data)

    @property
    def _categorical(self):
        """Whether the ratings are class labels (``'bernoulli'``, ``'ordinal'``)."""
        return has_proba(self.likelihood)

    def _class_values(self):
        """The classes as numbers: ``classes_``, or their indices when they are not numbers."""
        if self.classes_.dtype.kind in "biuf":
            return self.classes_.astype(np.float64)
        return np.arange(self.classes_.shape[0], dtype=np.float64)

    def _pairs(self, X):
        """Encoded (users, items) rows of the id pairs X; -1 for unknown ids."""
        users, items = id_columns(self, X, reset=False)
        for asked, fitted, side in (
            (users, self._user_ids, "user"),
            (items, self._item_ids, "item"),
        ):
            check_id_kind(asked, fitted, side)
        return self._user_ids.encode(users), self._item_ids.encode(items)

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        if reset:
            self._hyper, self._wishart_hyper = check_prior_params(
                self.precision_prior, self.mean_prior, self.init_scale
            )
        if reset or partial:
            self._in_partial_fit = partial
        self._prep = None
        if vocabulary is not None:  # one block of a fit on a cluster
            check_cluster_fit(
                self.learning_method,
                self.children_per_node,
                self.learn_thresholds,
                self.likelihood,
            )
        elif not reset and not partial:  # compute_statistics: ids the model knows
            data = self._ratings(X, y)
            if np.any(data.users < 0) or np.any(data.items < 0):
                raise ValueError(
                    "X holds users or items the model has not seen (compute_statistics "
                    "and elbo need known ids); add new users and items with partial_fit."
                )
            return data
        data = self._ratings(
            X,
            y,
            reset=reset,
            grow=partial,
            classes=classes,
            sample_weight=sample_weight,
            vocabulary=vocabulary,
        )
        self._remember(data, reset, vocabulary is not None)
        return data

    def _remember(self, data, reset, on_cluster):
        """Keep the rated pairs (recommend) and, in ``partial_fit``, the ratings' range.

        A fit on a cluster keeps no pairs: its blocks stay on the workers,
        and gathering them would bring every rating to the client.  The
        range of a fit comes with its data summary (:meth:`_data_summary`).
        """
        shape = (len(self._user_ids), len(self._item_ids))
        if on_cluster:
            self._seen = None
        elif reset:
            self._seen = SeenPairs(data.users, data.items, shape)
        else:
            if getattr(self, "_seen", None) is not None:
                self._seen.add(data.users, data.items, shape)
            if data.ratings.shape[0]:
                low, high = getattr(self, "_target_range", (np.inf, -np.inf))
                self._target_range = (
                    min(low, float(np.min(data.ratings))),
                    max(high, float(np.max(data.ratings))),
                )

    # ------------------------------------------------------ on a dask cluster
    def _data_vocabulary(self, X, y, sample_weight):
        # The ids (and a categorical likelihood's rating values) of every
        # block, so that each block encodes its ids as a fit in memory does.
        data = raw_ratings(self, X, y, True, sample_weight, labels=self._categorical)
        vocabulary = {
            "users": Distinct(as_id_array(data.users)),
            "items": Distinct(as_id_array(data.items)),
        }
        if self._categorical:
            vocabulary["ratings"] = Distinct(data.ratings)
        return vocabulary

    def _data_summary(self, data, local=None):
        if local is not None:
            # After a step: what the ordinal thresholds' step needs.
            return self._strategy.hyperparameter_statistics(self, local)
        # At the start: ratings per node (which nodes start at random means), the
        # ratings' weighted mean and variance (the start of mu and tau) and
        # their smallest and largest (predict's clip): a union over the
        # blocks of each block's two extremes.
        ratings = data.ratings
        extremes = ratings[[np.argmin(ratings), np.argmax(ratings)]] if ratings.size else ratings
        return (
            np.bincount(data.users, minlength=len(self._user_ids)).astype(float),
            np.bincount(data.items, minlength=len(self._item_ids)).astype(float),
            DataMoments.of(ratings[:, None], data.weights, full=False),
            Distinct(extremes),
        )

    def _adopt_data_summary(self, summary):
        # The engine keeps the counts N_i from here on (before the start).
        self.user_counts_, self.item_counts_, self._rating_moments, extremes = summary
        self.n_users_ = self.user_counts_.shape[0]
        self.n_items_ = self.item_counts_.shape[0]
        values = extremes.values
        self._target_range = (
            (float(values[0]), float(values[-1])) if values.size else (np.inf, -np.inf)
        )

    # ------------------------------------------------------------- the steps
    def _node_ids(self, name, data):
        # A rating of weight 2 counts twice in its user's and item's N_i
        # (Ratings.weight), as it does in the minibatch's C_i (index_side),
        # so that N_i / C_i is the repeated ratings' ratio.
        return data.users if name == "users" else data.items

    def _new_nodes(self, name, n_new, rated, random_state):
        """Users or items seen for the first time by ``partial_fit``."""
        return self._initial_nodes(name, n_new, random_state, rated)

    def _local_draws(self, data, random_state):
        # The seed of a step's Monte Carlo draws (each factor draws from its
        # own generator of it): the same draws for a retried step.
        if self._strategy.closed_form:
            return None
        return int(random_state.randint(np.iinfo(np.int32).max))

    def _local_step(self, data, params, draws=None):
        # The minibatch indexed for aggregation, with the seed of the step's
        # draws (or, with expectation='gaussian', its pseudo-ratings).
        return self._strategy.local_step(self, data, params, draws)

    def _prep_of(self, data):
        """``prepare(data)`` of the fit's rows or the probe, kept while they are in use."""
        kept = getattr(self, "_prep", None) or {}
        hit = kept.get(id(data))
        if hit is not None and hit[0] is data:
            prep = hit[1]
            prep.pop("_agg", None)
            return prep
        prep = prepare(data)
        kept = {k: v for k, v in kept.items() if k != id(data)}
        if len(kept) >= 2:
            kept.pop(next(iter(kept)))
        kept[id(data)] = (data, prep)
        self._prep = kept
        return prep
