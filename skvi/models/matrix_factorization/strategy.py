"""What the likelihood strategies of matrix factorization share by default."""

from .nodes import prepare

__all__ = ["RatingsStrategy"]


class RatingsStrategy:
    """The defaults of a likelihood strategy of :class:`~skvi.SVIMatrixFactorization`.

    A strategy (:mod:`~skvi.models.matrix_factorization.conjugate`,
    :mod:`~skvi.models.matrix_factorization.nonconjugate`,
    :mod:`~skvi.models.matrix_factorization.moment_matched`) says how the ratings
    enter the node updates; these are the hooks most of them leave as they
    are.

    Examples
    --------
    >>> from skvi.models.matrix_factorization.strategy import RatingsStrategy
    >>> RatingsStrategy().closed_form
    False
    """

    #: Whether nodes are updated in closed form (coordinate ascent: a batch
    #: fit starts them tight) and draw no random numbers.
    closed_form = False

    def local_step(self, mf, data, params, draws=None):
        """The batch indexed for aggregation, with the seed of the step's draws (or None)."""
        prep = prepare(data)
        prep["seed"] = draws
        return prep

    def start_nodes(self, mf, data, params, random_state):
        """The start of a batch fit's nodes in closed form: ``params`` as they are."""
        return params
