"""A global factor's current value: natural parameters that know their moments."""

import numpy as np

__all__ = ["Factor"]


class Factor(tuple):
    """The current value of a global factor, with its moments cached.

    A tuple of the natural parameters (so ``eta1, eta2 = factor`` works as
    for a plain tuple) that also carries its exponential family from
    :mod:`skvi.expfam`.  :attr:`distribution` is the family instance built
    from the natural parameters, and :meth:`cached` keeps any other derived
    quantity a model needs (the moments of many small Gaussians, a column
    total); both are computed once per value.  A step creates a new value,
    so nothing is ever keyed on the identity of an array, and a model never
    converts natural parameters inline.

    Parameters
    ----------
    natural : iterable of array-like
        The natural parameters, in the family's order.
    family : type or None, default=None
        The :class:`skvi.expfam.ExponentialFamily` subclass, or None.
    cache : dict or None, default=None
        Derived quantities already known (e.g. moments computed while the
        update tested its validity).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import Factor
    >>> from skvi.expfam import Gamma
    >>> f = Factor((np.array([-2.0]), np.array([2.0])), Gamma)   # Gamma(3, rate=2)
    >>> rate, shape_m1 = f
    >>> f.distribution.mean()
    array([1.5])
    >>> f.cached("twice", lambda g: 2 * g.distribution.mean())
    array([3.])
    """

    def __new__(cls, natural, family=None, cache=None):
        self = super().__new__(cls, (np.asarray(a) for a in natural))
        self.family = family
        self._cache = {} if cache is None else dict(cache)
        return self

    @property
    def natural(self):
        """The natural parameters as a plain tuple of arrays."""
        return tuple(self)

    @property
    def distribution(self):
        """The :mod:`skvi.expfam` instance of these natural parameters (cached)."""
        return self.cached("distribution", lambda f: f.family.from_natural(*f))

    def mean_parameters(self, which=None):
        """The family's mean parameters (``expected_stats()``), those at indices ``which``.

        They pair with the natural parameters (extrapolated passes and
        :func:`~skvi.engine.check_model` measure steps with them).

        Parameters
        ----------
        which : iterable of int or None, default=None
            Indices of the natural parameters whose mean parameters are
            wanted (None: all).

        Returns
        -------
        list of ndarray
            The mean parameters.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.engine import Factor
        >>> from skvi.expfam import Gamma
        >>> Factor((np.array([-2.0]), np.array([2.0])), Gamma).mean_parameters([0])
        [array([1.5])]
        """
        means = self.cached("mean_parameters", lambda f: f.distribution.expected_stats())
        return list(means) if which is None else [means[j] for j in which]

    def cached(self, key, compute):
        """``compute(self)``, computed on the first call for ``key`` only.

        Parameters
        ----------
        key : hashable
            Name of the derived quantity.
        compute : callable
            Called with this factor when the quantity is not cached yet.

        Returns
        -------
        object
            The cached value.
        """
        try:
            return self._cache[key]
        except KeyError:
            value = self._cache[key] = compute(self)
            return value

    def __reduce__(self):
        # Pickle the parameters, not the cache (it is rebuilt on demand).
        return (Factor, (tuple(self), self.family))

    def __copy__(self):
        return Factor(tuple(self), self.family, self._cache)

    def __deepcopy__(self, memo):
        return Factor(tuple(np.array(a) for a in self), self.family)
