"""Batched exponential-family factors.

This module provides the vectorised exponential-family distributions used by
the SVI engine as variational posteriors and as priors.  Every class is
*batched*: its parameter arrays carry a leading ``batch_shape`` (one factor
per feature, per user, per topic, ...) followed by the event shape of a
single draw, and every method operates on the whole batch at once without a
Python loop over batch elements.

Conventions
-----------
Each family is written in the canonical form

    p(x | eta) = h(x) exp(<eta, t(x)> - A(eta)),    h(x) = 1,

with the sufficient statistics t(x) and natural parameters eta ordered as
below (``.natural`` and ``.expected_stats()`` always return tuples in exactly
this order, with matching shapes):

* :class:`Gaussian`: ``t(x) = (x, x**2)``,
  ``eta = (precision * loc, -precision / 2)``.
* :class:`MultivariateGaussian`: ``t(x) = (x, x x^T)``,
  ``eta = (Lambda m, -Lambda / 2)``.
* :class:`Gamma`: ``t(x) = (x, log x)``, ``eta = (-rate, shape - 1)``.
* :class:`Wishart`: ``t(X) = (X, log|X|)``,
  ``eta = (-W^{-1} / 2, (df - d - 1) / 2)``.
* :class:`Dirichlet`: ``t(x) = (log x,)``, ``eta = (concentration - 1,)``.

Because h(x) = 1 for every family (constants such as log(2 pi) / 2 live in
A), the following identities hold
for every class:

* ``entropy = A(eta) - <eta, E[t(x)]>``
* ``KL(q || p) = <eta_q - eta_p, E_q[t(x)]> - A(eta_q) + A(eta_p)``
* ``grad A(eta) = E[t(x)]``

where ``<., .>`` sums over the event axes of each natural parameter.  The
classes implement numerically stable closed forms of these quantities.

Dtypes
------
Parameters are stored as floating arrays: ``float32`` when every NumPy input
is ``float32`` (plain Python scalars do not force an upcast), ``float64``
otherwise.

Instances are meant to be treated as immutable: derived quantities (for
example the Cholesky factor of a precision matrix) are cached on first use.
"""

import numbers

import numpy as np
from scipy import special

__all__ = [
    "ExponentialFamily",
    "Gaussian",
    "MultivariateGaussian",
    "Gamma",
    "Wishart",
    "Dirichlet",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def _float_dtype(*values):
    """Common floating dtype of the inputs.

    ``float32`` if every input that carries a dtype (NumPy arrays, NumPy
    scalars, sequences) is ``float32``; plain Python ``int``/``float`` scalars
    are "weak" and do not take part.  ``float64`` otherwise.
    """
    strong = []
    for v in values:
        if isinstance(v, np.generic) or isinstance(v, np.ndarray):
            strong.append(v.dtype)
        elif isinstance(v, (bool, numbers.Number)):
            continue
        else:
            strong.append(np.asarray(v).dtype)
    if strong and all(dt == np.float32 for dt in strong):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _as_float(a):
    """Array view of ``a`` with a floating dtype (float64 unless float32)."""
    a = np.asarray(a)
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    return a


def _check_random_state(random_state):
    """Turn ``random_state`` into a random generator.

    Follows :func:`sklearn.utils.check_random_state` for ``None`` (the global
    ``RandomState`` singleton), integers (a new seeded ``RandomState``) and
    ``RandomState`` instances (returned as is); a
    :class:`numpy.random.Generator` is returned unchanged as well.
    """
    if random_state is None or random_state is np.random:
        return np.random.mtrand._rand
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return random_state
    if isinstance(random_state, numbers.Integral):
        return np.random.RandomState(int(random_state))
    raise ValueError(
        f"{random_state!r} cannot be used to seed a numpy.random.RandomState "
        "instance; pass None, an int, a RandomState or a Generator."
    )


def _size_tuple(size):
    if size is None:
        return ()
    if isinstance(size, numbers.Integral):
        return (int(size),)
    return tuple(int(s) for s in size)


def _uniform_open0(rng, size):
    """Uniform draws on the half-open interval (0, 1]."""
    return 1.0 - rng.random(size)


def _symmetric_mask(a):
    """Elementwise (over the batch) test that square matrices are symmetric.

    A matrix counts as symmetric when ``max|a - a^T| <= sqrt(eps) * max|a|``.
    Non-finite matrices give False.
    """
    eps = np.finfo(a.dtype).eps
    with np.errstate(invalid="ignore"):
        asym = np.max(np.abs(a - np.swapaxes(a, -1, -2)), axis=(-2, -1))
        scale = np.max(np.abs(a), axis=(-2, -1))
        return asym <= np.sqrt(eps) * scale


def _pd_mask(a, ok):
    """Elementwise test that the symmetric matrices ``a`` are positive definite.

    Parameters
    ----------
    a : ndarray of shape (..., d, d)
        Matrices; only elements where ``ok`` is True are examined (they must be
        finite). ``a`` must broadcast to ``ok.shape + (d, d)``.
    ok : ndarray of bool
        Batch mask of elements to test.

    Returns
    -------
    ndarray of bool with the shape of ``ok``.

    A single batched Cholesky factorisation is attempted first; only when it
    fails (some element is not positive definite) are the eigenvalues used to
    locate the failures, and the candidates are confirmed with Cholesky again
    (elementwise only if that confirmation itself fails, which happens for
    matrices on the edge of definiteness).
    """
    d = a.shape[-1]
    ok = np.asarray(ok, dtype=bool)
    flat_ok = ok.reshape(-1)
    a = np.broadcast_to(a, ok.shape + (d, d)).reshape(-1, d, d)
    eye = np.eye(d, dtype=a.dtype)
    work = np.where(flat_ok[:, None, None], a, eye)
    try:
        np.linalg.cholesky(work)
        return ok.copy()
    except np.linalg.LinAlgError:
        pass
    w = np.linalg.eigvalsh(work)
    pd = flat_ok & (w[:, 0] > 0)
    idx = np.flatnonzero(pd)
    try:
        np.linalg.cholesky(work[idx])
    except np.linalg.LinAlgError:
        for i in idx:
            try:
                np.linalg.cholesky(work[i])
            except np.linalg.LinAlgError:
                pd[i] = False
    return pd.reshape(ok.shape)


def _cholesky_logdet(chol):
    """``log|A|`` of symmetric positive definite matrices from their Cholesky factors."""
    return 2.0 * np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)


def _event_sum(a, ndim):
    if ndim == 0:
        return a
    return np.sum(a, axis=tuple(range(-ndim, 0)))


# --------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------
class ExponentialFamily:
    """Base class of the batched exponential-family factors.

    Subclasses define ``natural``, ``from_natural``, ``valid_natural``,
    ``expected_stats`` and ``log_normalizer``; this base class derives the
    generic entropy and KL divergence from them (subclasses override these
    with closed forms that are more accurate), plus ``batch_shape`` and
    ``dtype``.

    Examples
    --------
    >>> q = Gamma(2.0, 3.0)
    >>> isinstance(q, ExponentialFamily)
    True
    >>> print(round(float(ExponentialFamily.entropy(q)), 6))  # generic formula
    0.478603
    >>> print(round(float(q.entropy()), 6))  # closed form
    0.478603
    """

    #: number of event axes of each natural parameter (and sufficient stat)
    _event_ndims = ()

    # -- to be provided by subclasses --------------------------------------
    @property
    def natural(self):  # pragma: no cover - abstract
        """Natural parameters, a tuple of arrays."""
        raise NotImplementedError

    @classmethod
    def from_natural(cls, *eta):  # pragma: no cover - abstract
        """Build an instance from natural parameters.

        Parameters
        ----------
        *eta : array_like
            The natural parameters, one positional argument each, in the order
            of :attr:`natural`: ``(eta1, eta2)`` of shapes ``batch_shape``
            for :class:`Gaussian` and :class:`Gamma`, ``(eta1, eta2)`` of shapes
            ``batch_shape + (d,)`` and ``batch_shape + (d, d)`` for
            :class:`MultivariateGaussian`, and the single ``eta`` of shape
            ``batch_shape + (K,)`` for :class:`Dirichlet`.

        Returns
        -------
        ExponentialFamily
            A new instance of ``cls`` whose natural parameters are ``eta``.
        """
        raise NotImplementedError

    @staticmethod
    def valid_natural(*eta):  # pragma: no cover - abstract
        """Mask of batch elements whose natural parameters are valid.

        Parameters
        ----------
        *eta : array_like
            The natural parameters, one positional argument each, in the order
            and with the shapes described in :meth:`from_natural`.

        Returns
        -------
        ndarray of bool
            True where the natural parameters are finite and inside the natural
            parameter space; it has the broadcast batch shape.
        """
        raise NotImplementedError

    def expected_stats(self):  # pragma: no cover - abstract
        """Expected sufficient statistics, a tuple of arrays.

        Returns
        -------
        tuple of ndarray
            ``E[t(x)]``, in the same order and with the same shapes as
            :attr:`natural`.
        """
        raise NotImplementedError

    def log_normalizer(self):  # pragma: no cover - abstract
        """Log-partition function A(eta), batch shape.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser ``A(eta)`` of each factor.
        """
        raise NotImplementedError

    @property
    def batch_shape(self):  # pragma: no cover - abstract
        """Shape of the batch of factors."""
        raise NotImplementedError

    @property
    def dtype(self):  # pragma: no cover - abstract
        """Floating dtype of the parameters."""
        raise NotImplementedError

    # -- generic implementations -------------------------------------------
    def _inner(self, a, b):
        """Sum over event axes of the parameter-wise products of a and b."""
        total = 0.0
        for ai, bi, nd in zip(a, b, self._event_ndims):
            total = total + _event_sum(ai * bi, nd)
        return total

    def entropy(self):
        """Differential entropy, ``A(eta) - <eta, E[t(x)]>``, batch shape.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor, from the generic exponential-family
            identity.
        """
        return self.log_normalizer() - self._inner(
            self.natural, self.expected_stats()
        )

    def kl(self, other):
        """KL(self || other), ``<eta_q - eta_p, E_q[t]> - A_q + A_p``.

        Parameters
        ----------
        other : ExponentialFamily
            Distribution ``p`` of the same class as ``self``; its batch shape
            must broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            KL divergence of each factor, with the broadcast batch shape.

        Raises
        ------
        TypeError
            If ``other`` is not an instance of the class of ``self``.
        """
        self._check_other(other)
        diff = [eq - ep for eq, ep in zip(self.natural, other.natural)]
        return (
            self._inner(diff, self.expected_stats())
            - self.log_normalizer()
            + other.log_normalizer()
        )

    def _check_other(self, other):
        if not isinstance(other, type(self)):
            raise TypeError(
                f"KL divergence of a {type(self).__name__} is only defined "
                f"against another {type(self).__name__}, got "
                f"{type(other).__name__}."
            )

    def __repr__(self):
        return (
            f"{type(self).__name__}(batch_shape={self.batch_shape}, "
            f"dtype={np.dtype(self.dtype).name})"
        )


# --------------------------------------------------------------------------
# univariate Gaussian
# --------------------------------------------------------------------------
class Gaussian(ExponentialFamily):
    """Batch of univariate Gaussians parameterised by mean and precision.

    A diagonal Gaussian is simply a batch of these.  Sufficient statistics
    ``t(x) = (x, x**2)``, natural parameters
    ``eta = (precision * loc, -precision / 2)`` and log-normaliser
    ``A(eta) = -eta1**2 / (4 eta2) - log(-2 eta2) / 2 + log(2 pi) / 2``.

    Parameters
    ----------
    mean : array_like
        Means; broadcast against ``precision``.
    precision : array_like
        Precisions (inverse variances), positive.

    Attributes
    ----------
    loc : ndarray
        Means, with the batch shape.
    precision : ndarray
        Precisions, with the batch shape.

    Examples
    --------
    >>> q = Gaussian([0.0, 1.0], [1.0, 4.0])
    >>> q.batch_shape
    (2,)
    >>> print(q.variance)
    [1.   0.25]
    >>> eta1, eta2 = q.natural
    >>> print(eta1, eta2)
    [0. 4.] [-0.5 -2. ]
    >>> print(np.round(q.entropy(), 4))
    [1.4189 0.7258]
    >>> print(np.round(q.kl(Gaussian(0.0, 1.0)), 4))
    [0.     0.8181]
    """

    _event_ndims = (0, 0)

    def __init__(self, mean, precision):
        dtype = _float_dtype(mean, precision)
        loc, prec = np.broadcast_arrays(
            np.asarray(mean, dtype=dtype), np.asarray(precision, dtype=dtype)
        )
        self.loc = np.array(loc)
        self.precision = np.array(prec)

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.loc.shape

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.loc.dtype

    @property
    def variance(self):
        """Variances ``1 / precision``."""
        return 1.0 / self.precision

    @property
    def natural(self):
        """Natural parameters ``(precision * loc, -precision / 2)``."""
        return (self.precision * self.loc, -0.5 * self.precision)

    @classmethod
    def from_natural(cls, eta1, eta2):
        """Build from natural parameters ``(precision * loc, -precision / 2)``.

        Parameters
        ----------
        eta1 : array_like
            First natural parameter, ``precision * loc``, with the batch shape;
            broadcast against ``eta2``.
        eta2 : array_like
            Second natural parameter, ``-precision / 2``, with the batch shape;
            must be negative.

        Returns
        -------
        Gaussian
            The Gaussian with these natural parameters.
        """
        dtype = _float_dtype(eta1, eta2)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        precision = -2.0 * eta2
        return cls(eta1 / precision, precision)

    @staticmethod
    def valid_natural(eta1, eta2):
        """True where ``(eta1, eta2)`` define a Gaussian (finite, eta2 < 0).

        Parameters
        ----------
        eta1 : array_like
            First natural parameter, ``precision * loc``, with the batch shape.
        eta2 : array_like
            Second natural parameter, ``-precision / 2``, with the batch shape;
            broadcast against ``eta1``.

        Returns
        -------
        ndarray of bool
            True where both parameters are finite and ``eta2 < 0``; it has the
            broadcast batch shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        return np.isfinite(eta1) & np.isfinite(eta2) & (eta2 < 0)

    def validate(self):
        """Raise ``ValueError`` unless the parameters are finite and valid.

        Returns
        -------
        Gaussian
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a mean or precision is not finite or a precision is not strictly
            positive.
        """
        if not np.all(np.isfinite(self.loc)):
            raise ValueError("Gaussian: mean must be finite.")
        if not np.all(np.isfinite(self.precision)):
            raise ValueError("Gaussian: precision must be finite.")
        if not np.all(self.precision > 0):
            raise ValueError("Gaussian: precision must be strictly positive.")
        return self

    def expected_stats(self):
        """Expected statistics ``(E[x], E[x**2]) = (loc, loc**2 + 1 / precision)``.

        Returns
        -------
        tuple of ndarray
            ``(E[x], E[x**2])``, each of shape ``batch_shape``.
        """
        return (self.loc.copy(), self.loc**2 + 1.0 / self.precision)

    def log_normalizer(self):
        """Log-normaliser ``A(eta)`` of each factor.

        ``A = precision * loc**2 / 2 - log(precision) / 2 + log(2 pi) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        return 0.5 * (
            self.precision * self.loc**2 - np.log(self.precision) + _LOG_2PI
        )

    def entropy(self):
        """Differential entropy ``(1 + log(2 pi) - log(precision)) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        return 0.5 * (1.0 + _LOG_2PI - np.log(self.precision))

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`Gaussian`.

        Parameters
        ----------
        other : Gaussian
            Distribution ``p``; its batch shape must broadcast against
            :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Non-negative KL divergence of each factor, with the broadcast batch
            shape.

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`Gaussian`.
        """
        self._check_other(other)
        ratio = other.precision / self.precision
        kl = 0.5 * (
            ratio
            - 1.0
            - np.log(ratio)
            + other.precision * (self.loc - other.loc) ** 2
        )
        return np.maximum(kl, 0.0)

    def log_prob(self, x):
        """Log density at ``x`` (broadcast against the batch shape).

        Parameters
        ----------
        x : array_like
            Points at which to evaluate the density; broadcast against
            :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x`` and the batch shape.
        """
        x = np.asarray(x)
        return 0.5 * (
            np.log(self.precision)
            - _LOG_2PI
            - self.precision * (x - self.loc) ** 2
        )

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape``.

        Parameters
        ----------
        size : int, tuple of int or None, default=None
            Leading sample shape, prepended to the batch shape; ``None`` draws
            a single sample per factor.
        random_state : None, int, RandomState or Generator, default=None
            Source of randomness: ``None`` uses the global ``RandomState``, an
            int seeds a new ``RandomState``, and ``RandomState`` or
            :class:`numpy.random.Generator` instances are used as is.

        Returns
        -------
        ndarray of shape size + batch_shape
            Samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.batch_shape
        z = rng.standard_normal(shape)
        return (self.loc + z / np.sqrt(self.precision)).astype(
            self.dtype, copy=False
        )

    def mean(self):
        """Mean ``E[x] = loc``.

        Returns
        -------
        ndarray of shape batch_shape
            A copy of :attr:`loc`.
        """
        return self.loc.copy()


# --------------------------------------------------------------------------
# multivariate Gaussian
# --------------------------------------------------------------------------
class MultivariateGaussian(ExponentialFamily):
    """Batch of full-covariance Gaussians parameterised by mean and precision.

    Sufficient statistics ``t(x) = (x, x x^T)``, natural parameters
    ``eta = (Lambda m, -Lambda / 2)`` and log-normaliser
    ``A = m^T Lambda m / 2 - log|Lambda| / 2 + d log(2 pi) / 2``; the
    expected statistics are ``(m, Sigma + m m^T)``.

    Parameters
    ----------
    mean : array_like of shape (..., d)
        Means.
    precision : array_like of shape (..., d, d)
        Symmetric positive definite precision matrices.  The batch shapes
        ``mean.shape[:-1]`` and ``precision.shape[:-2]`` broadcast.

    Attributes
    ----------
    loc : ndarray of shape batch_shape + (d,)
    precision : ndarray of shape batch_shape + (d, d)

    Notes
    -----
    The Cholesky factor of ``precision`` (and its inverse) is computed once,
    on first use, and cached; treat instances as immutable.

    Examples
    --------
    >>> q = MultivariateGaussian([1.0, -1.0], [[2.0, 0.5], [0.5, 1.0]])
    >>> q.batch_shape
    ()
    >>> print(np.round(q.covariance, 4))
    [[ 0.5714 -0.2857]
     [-0.2857  1.1429]]
    >>> print(np.round(q.natural[0], 4))
    [ 1.5 -0.5]
    >>> print(round(float(q.entropy()), 4))
    2.5581
    """

    _event_ndims = (1, 2)

    def __init__(self, mean, precision):
        dtype = _float_dtype(mean, precision)
        mean = np.asarray(mean, dtype=dtype)
        precision = np.asarray(precision, dtype=dtype)
        if mean.ndim < 1 or precision.ndim < 2:
            raise ValueError(
                "MultivariateGaussian: mean must have shape (..., d) and "
                "precision shape (..., d, d); got shapes "
                f"{mean.shape} and {precision.shape}."
            )
        d = mean.shape[-1]
        if precision.shape[-2:] != (d, d):
            raise ValueError(
                "MultivariateGaussian: precision must have shape (..., d, d) "
                f"with d = mean.shape[-1] = {d}; got {precision.shape}."
            )
        batch = np.broadcast_shapes(mean.shape[:-1], precision.shape[:-2])
        self.loc = np.array(np.broadcast_to(mean, batch + (d,)))
        self.precision = np.array(np.broadcast_to(precision, batch + (d, d)))
        self._chol_cache = None

    # -- cached factorisations ----------------------------------------------
    def _factors(self):
        """``(L, L^{-1})`` with ``precision = L L^T``, cached."""
        cache = self._chol_cache
        if cache is None or cache[0] is not self.precision:
            chol = np.linalg.cholesky(self.precision)
            chol_inv = np.linalg.inv(chol)
            cache = (self.precision, chol, chol_inv)
            self._chol_cache = cache
        return cache[1], cache[2]

    def _logdet_precision(self):
        chol, _ = self._factors()
        return _cholesky_logdet(chol)

    # -- properties -----------------------------------------------------------
    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.loc.shape[:-1]

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.loc.dtype

    @property
    def dim(self):
        """Event dimension ``d``."""
        return self.loc.shape[-1]

    @property
    def covariance(self):
        """Covariance matrices ``Lambda^{-1} = L^{-T} L^{-1}`` (via Cholesky)."""
        _, chol_inv = self._factors()
        cov = np.swapaxes(chol_inv, -1, -2) @ chol_inv
        return 0.5 * (cov + np.swapaxes(cov, -1, -2))

    @property
    def variance(self):
        """Marginal variances, the diagonal of :attr:`covariance`."""
        _, chol_inv = self._factors()
        return np.sum(chol_inv**2, axis=-2)

    @property
    def natural(self):
        """Natural parameters ``(Lambda m, -Lambda / 2)``."""
        eta1 = (self.precision @ self.loc[..., None])[..., 0]
        return (eta1, -0.5 * self.precision)

    # -- constructors / validity ------------------------------------------------
    @classmethod
    def from_natural(cls, eta1, eta2):
        """Build from natural parameters ``(Lambda m, -Lambda / 2)``.

        ``eta2`` is symmetrised before use.

        Parameters
        ----------
        eta1 : array_like of shape (..., d)
            First natural parameter, ``Lambda m`` (precision times mean).
        eta2 : array_like of shape (..., d, d)
            Second natural parameter, ``-Lambda / 2``; ``-eta2`` must be
            symmetric positive definite.  The batch shapes ``eta1.shape[:-1]``
            and ``eta2.shape[:-2]`` broadcast.

        Returns
        -------
        MultivariateGaussian
            The Gaussian with these natural parameters (its Cholesky factors are
            cached).
        """
        dtype = _float_dtype(eta1, eta2)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        d = eta2.shape[-1]
        batch = np.broadcast_shapes(eta1.shape[:-1], eta2.shape[:-2])
        precision = -(eta2 + np.swapaxes(eta2, -1, -2))
        precision = np.broadcast_to(precision, batch + (d, d))
        eta1 = np.broadcast_to(eta1, batch + (d,))
        chol = np.linalg.cholesky(precision)
        chol_inv = np.linalg.inv(chol)
        # m = Lambda^{-1} eta1 = L^{-T} (L^{-1} eta1)
        half = (chol_inv @ eta1[..., None])[..., 0]
        mean = (np.swapaxes(chol_inv, -1, -2) @ half[..., None])[..., 0]
        out = cls(mean, precision)
        out._chol_cache = (out.precision, chol, chol_inv)
        return out

    @staticmethod
    def valid_natural(eta1, eta2):
        """True where ``(eta1, eta2)`` define a Gaussian.

        Valid means: all entries finite and ``-eta2`` symmetric positive
        definite.  A single batched Cholesky factorisation is tried first;
        only on failure are the offending elements located.

        Parameters
        ----------
        eta1 : array_like of shape (..., d)
            First natural parameter, ``Lambda m`` (precision times mean).
        eta2 : array_like of shape (..., d, d)
            Second natural parameter, ``-Lambda / 2``.  The batch shapes
            ``eta1.shape[:-1]`` and ``eta2.shape[:-2]`` broadcast.

        Returns
        -------
        ndarray of bool
            True where the parameters are valid; it has the broadcast batch
            shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        batch = np.broadcast_shapes(eta1.shape[:-1], eta2.shape[:-2])
        ok = np.all(np.isfinite(eta1), axis=-1) & np.all(
            np.isfinite(eta2), axis=(-2, -1)
        )
        ok = np.broadcast_to(ok & _symmetric_mask(eta2), batch)
        # Test the very matrix from_natural factorises, so that a factor
        # called valid can always be built (it matters at the edge of
        # definiteness, where rounding decides).
        return _pd_mask(-(eta2 + np.swapaxes(eta2, -1, -2)), ok)

    def validate(self):
        """Raise ``ValueError`` unless the parameters are finite and valid.

        Returns
        -------
        MultivariateGaussian
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a mean or precision entry is not finite, or a precision matrix is
            not symmetric positive definite.
        """
        name = "MultivariateGaussian"
        if not np.all(np.isfinite(self.loc)):
            raise ValueError(f"{name}: mean must be finite.")
        if not np.all(np.isfinite(self.precision)):
            raise ValueError(f"{name}: precision must be finite.")
        sym = _symmetric_mask(self.precision)
        if not np.all(sym):
            raise ValueError(
                f"{name}: precision must be symmetric "
                f"({np.size(sym) - np.count_nonzero(sym)} of {np.size(sym)} "
                "matrices are not)."
            )
        pd = _pd_mask(self.precision, np.ones(self.batch_shape, dtype=bool))
        if not np.all(pd):
            raise ValueError(
                f"{name}: precision must be positive definite "
                f"({np.size(pd) - np.count_nonzero(pd)} of {np.size(pd)} "
                "matrices are not)."
            )
        return self

    # -- expectations -------------------------------------------------------------
    def expected_stats(self):
        """Expected statistics ``(E[x], E[x x^T]) = (m, Sigma + m m^T)``.

        Returns
        -------
        tuple of ndarray
            ``(E[x], E[x x^T])`` of shapes ``batch_shape + (d,)`` and
            ``batch_shape + (d, d)``.
        """
        m = self.loc
        return (m.copy(), self.covariance + m[..., :, None] * m[..., None, :])

    def log_normalizer(self):
        """Log-normaliser ``A = m^T Lambda m / 2 - log|Lambda| / 2 + d log(2 pi) / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        quad = np.einsum("...i,...ij,...j->...", self.loc, self.precision, self.loc)
        return 0.5 * (quad - self._logdet_precision() + self.dim * _LOG_2PI)

    def entropy(self):
        """Differential entropy ``d (1 + log(2 pi)) / 2 - log|Lambda| / 2``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        return 0.5 * (self.dim * (1.0 + _LOG_2PI) - self._logdet_precision())

    def kl(self, other):
        """KL(self || other) for another (broadcastable) MultivariateGaussian.

        ``(tr(Lambda_p Sigma_q) + (m_p - m_q)^T Lambda_p (m_p - m_q) - d
        + log|Lambda_q| - log|Lambda_p|) / 2``.

        Parameters
        ----------
        other : MultivariateGaussian
            Distribution ``p`` of the same dimension ``d``; its batch shape must
            broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Non-negative KL divergence of each factor, with the broadcast batch
            shape.

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`MultivariateGaussian`.
        """
        self._check_other(other)
        trace = np.sum(other.precision * self.covariance, axis=(-2, -1))
        diff = other.loc - self.loc
        quad = np.einsum("...i,...ij,...j->...", diff, other.precision, diff)
        kl = 0.5 * (
            trace
            + quad
            - self.dim
            + self._logdet_precision()
            - other._logdet_precision()
        )
        return np.maximum(kl, 0.0)

    def log_prob(self, x):
        """Log density at ``x`` of shape ``(..., batch_shape, d)``.

        Parameters
        ----------
        x : array_like of shape (..., d)
            Points at which to evaluate the density; ``x.shape[:-1]`` is
            broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x.shape[:-1]`` and the
            batch shape.
        """
        diff = np.asarray(x) - self.loc
        quad = np.einsum("...i,...ij,...j->...", diff, self.precision, diff)
        return 0.5 * (self._logdet_precision() - self.dim * _LOG_2PI - quad)

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape + (d,)``.

        ``x = m + L^{-T} z`` with ``z`` standard normal and
        ``precision = L L^T``.

        Parameters
        ----------
        size : int, tuple of int or None, default=None
            Leading sample shape, prepended to the batch shape; ``None`` draws
            a single sample per factor.
        random_state : None, int, RandomState or Generator, default=None
            Source of randomness: ``None`` uses the global ``RandomState``, an
            int seeds a new ``RandomState``, and ``RandomState`` or
            :class:`numpy.random.Generator` instances are used as is.

        Returns
        -------
        ndarray of shape size + batch_shape + (d,)
            Samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        _, chol_inv = self._factors()
        shape = _size_tuple(size) + self.batch_shape + (self.dim,)
        z = rng.standard_normal(shape)
        x = self.loc + (z[..., None, :] @ chol_inv)[..., 0, :]
        return x.astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[x] = loc``.

        Returns
        -------
        ndarray of shape batch_shape + (d,)
            A copy of :attr:`loc`.
        """
        return self.loc.copy()


# --------------------------------------------------------------------------
# Gamma
# --------------------------------------------------------------------------
class Gamma(ExponentialFamily):
    """Batch of Gamma distributions parameterised by shape and rate.

    Sufficient statistics ``t(x) = (x, log x)``, natural parameters
    ``eta = (-rate, shape - 1)`` and log-normaliser
    ``A = gammaln(shape) - shape * log(rate)``; the expected statistics are
    ``(shape / rate, digamma(shape) - log(rate))``.

    Parameters
    ----------
    shape : array_like
        Shape parameters (alpha), positive.
    rate : array_like
        Rate parameters (beta, inverse scale), positive; broadcast against
        ``shape``.

    Attributes
    ----------
    shape : ndarray
        Shape parameters with the batch shape (use :attr:`batch_shape` for
        the shape of the batch).
    rate : ndarray
        Rates with the batch shape.

    Examples
    --------
    >>> print(Gamma(2.0, 3.0).mean())
    0.666...
    >>> q = Gamma([1.0, 2.0], [1.0, 3.0])
    >>> print(q.natural[0], q.natural[1])
    [-1. -3.] [0. 1.]
    >>> print(np.round(q.expected_log(), 4))
    [-0.5772 -0.6758]
    >>> print(np.round(q.kl(Gamma(1.0, 1.0)), 4))
    [0.     0.1881]
    """

    _event_ndims = (0, 0)

    def __init__(self, shape, rate):
        dtype = _float_dtype(shape, rate)
        a, b = np.broadcast_arrays(
            np.asarray(shape, dtype=dtype), np.asarray(rate, dtype=dtype)
        )
        self.shape = np.array(a)
        self.rate = np.array(b)

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.rate.shape

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.rate.dtype

    @property
    def variance(self):
        """Variances ``shape / rate**2``."""
        return self.shape / self.rate**2

    @property
    def natural(self):
        """Natural parameters ``(-rate, shape - 1)``."""
        return (-self.rate, self.shape - 1.0)

    @classmethod
    def from_natural(cls, eta1, eta2):
        """Build from natural parameters ``(-rate, shape - 1)``.

        Parameters
        ----------
        eta1 : array_like
            First natural parameter, ``-rate``, with the batch shape; must be
            negative.
        eta2 : array_like
            Second natural parameter, ``shape - 1``, with the batch shape; must
            be greater than -1.  Broadcast against ``eta1``.

        Returns
        -------
        Gamma
            The Gamma distribution with these natural parameters.
        """
        dtype = _float_dtype(eta1, eta2)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        return cls(eta2 + 1.0, -eta1)

    @staticmethod
    def valid_natural(eta1, eta2):
        """True where ``(eta1, eta2)`` define a Gamma (finite, eta1 < 0, eta2 > -1).

        Parameters
        ----------
        eta1 : array_like
            First natural parameter, ``-rate``, with the batch shape.
        eta2 : array_like
            Second natural parameter, ``shape - 1``, with the batch shape;
            broadcast against ``eta1``.

        Returns
        -------
        ndarray of bool
            True where both parameters are finite, ``eta1 < 0`` and
            ``eta2 > -1``; it has the broadcast batch shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        return np.isfinite(eta1) & np.isfinite(eta2) & (eta1 < 0) & (eta2 > -1)

    def validate(self):
        """Raise ``ValueError`` unless the parameters are finite and positive.

        Returns
        -------
        Gamma
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a shape or rate is not finite or not strictly positive.
        """
        for name, value in (("shape", self.shape), ("rate", self.rate)):
            if not np.all(np.isfinite(value)):
                raise ValueError(f"Gamma: {name} must be finite.")
            if not np.all(value > 0):
                raise ValueError(f"Gamma: {name} must be strictly positive.")
        return self

    def expected_log(self):
        """Expected logarithm ``E[log x] = digamma(shape) - log(rate)``.

        Returns
        -------
        ndarray of shape batch_shape
            ``E[log x]`` of each factor.
        """
        return special.digamma(self.shape) - np.log(self.rate)

    def expected_stats(self):
        """Expected statistics ``(E[x], E[log x])``.

        ``(E[x], E[log x]) = (shape / rate, digamma(shape) - log(rate))``.

        Returns
        -------
        tuple of ndarray
            ``(E[x], E[log x])``, each of shape ``batch_shape``.
        """
        return (self.shape / self.rate, self.expected_log())

    def log_normalizer(self):
        """Log-normaliser ``A = gammaln(shape) - shape * log(rate)``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        return special.gammaln(self.shape) - self.shape * np.log(self.rate)

    def entropy(self):
        """Differential entropy of each factor.

        ``shape - log(rate) + gammaln(shape) + (1 - shape) digamma(shape)``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        a = self.shape
        return (
            a
            - np.log(self.rate)
            + special.gammaln(a)
            + (1.0 - a) * special.digamma(a)
        )

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`Gamma`.

        Parameters
        ----------
        other : Gamma
            Distribution ``p``; its batch shape must broadcast against
            :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Non-negative KL divergence of each factor, with the broadcast batch
            shape.

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`Gamma`.
        """
        self._check_other(other)
        a1, b1 = self.shape, self.rate
        a2, b2 = other.shape, other.rate
        kl = (
            (a1 - a2) * special.digamma(a1)
            - special.gammaln(a1)
            + special.gammaln(a2)
            + a2 * (np.log(b1) - np.log(b2))
            + a1 * (b2 - b1) / b1
        )
        return np.maximum(kl, 0.0)

    def log_prob(self, x):
        """Log density at ``x`` (broadcast against the batch shape).

        ``-inf`` for negative ``x``.

        Parameters
        ----------
        x : array_like
            Points at which to evaluate the density; broadcast against
            :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x`` and the batch shape.
        """
        x = np.asarray(x)
        a, b = self.shape, self.rate
        with np.errstate(invalid="ignore", divide="ignore"):
            xpos = np.where(x >= 0, x, 1.0)
            lp = (
                a * np.log(b)
                - special.gammaln(a)
                + special.xlogy(a - 1.0, xpos)
                - b * xpos
            )
        return np.where(x >= 0, lp, -np.inf)

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape``.

        Parameters
        ----------
        size : int, tuple of int or None, default=None
            Leading sample shape, prepended to the batch shape; ``None`` draws
            a single sample per factor.
        random_state : None, int, RandomState or Generator, default=None
            Source of randomness: ``None`` uses the global ``RandomState``, an
            int seeds a new ``RandomState``, and ``RandomState`` or
            :class:`numpy.random.Generator` instances are used as is.

        Returns
        -------
        ndarray of shape size + batch_shape
            Positive samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.batch_shape
        g = rng.standard_gamma(np.broadcast_to(self.shape, shape), size=shape)
        return (g / self.rate).astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[x] = shape / rate``.

        Returns
        -------
        ndarray of shape batch_shape
            The mean of each factor.
        """
        return self.shape / self.rate


# --------------------------------------------------------------------------
# Wishart
# --------------------------------------------------------------------------
def _log_multigamma(a, d):
    """``log Gamma_d(a)``, elementwise over an array ``a``."""
    j = np.arange(d, dtype=np.float64)
    return 0.25 * d * (d - 1) * np.log(np.pi) + np.sum(
        special.gammaln(np.asarray(a)[..., None] - 0.5 * j), axis=-1
    )


def _multi_digamma(a, d):
    """``sum_j digamma(a - j / 2)`` for ``j = 0 .. d - 1``, elementwise over ``a``."""
    j = np.arange(d, dtype=np.float64)
    return np.sum(special.digamma(np.asarray(a)[..., None] - 0.5 * j), axis=-1)


class Wishart(ExponentialFamily):
    """Batch of Wishart distributions over ``d x d`` precision matrices.

    Density ``|X|^((df - d - 1) / 2) exp(-tr(W^{-1} X) / 2) / (2^(df d / 2)
    |W|^(df / 2) Gamma_d(df / 2))`` with ``df > d - 1`` degrees of freedom
    and scale matrix ``W``.  Sufficient statistics ``t(X) = (X, log|X|)``,
    natural parameters ``eta = (-W^{-1} / 2, (df - d - 1) / 2)`` and
    log-normaliser ``A = df d log(2) / 2 + df log|W| / 2 + log Gamma_d(df / 2)``;
    the expected statistics are ``E[X] = df W`` and
    ``E[log|X|] = sum_j digamma((df - j) / 2) + d log 2 + log|W|``.

    With ``d = 1`` it is ``Gamma(df / 2, rate=1 / (2 W))``, and natural
    parameters ``(-b I, a - 1)`` give, for every ``d``, the Wishart whose
    ``d = 1`` case is ``Gamma(a, rate=b)``: ``df = d - 1 + 2 a`` and
    ``W = I / (2 b)``.

    Parameters
    ----------
    df : array_like
        Degrees of freedom, greater than ``d - 1``; broadcast against the
        batch shape of ``scale``.
    scale : array_like of shape (..., d, d)
        Symmetric positive definite scale matrices ``W``.

    Attributes
    ----------
    df : ndarray of shape batch_shape
    scale : ndarray of shape batch_shape + (d, d)

    Examples
    --------
    >>> q = Wishart(5.0, [[1.0, 0.2], [0.2, 0.5]])
    >>> print(np.round(q.mean(), 4))
    [[5.  1. ]
     [1.  2.5]]
    >>> print(round(float(q.expected_log_det()), 4))
    1.7357
    >>> print(round(float(q.kl(Wishart(3.0, np.eye(2)))), 4))
    0.6353
    >>> g = Wishart.from_natural(-3.0 * np.eye(1), 1.0)  # Gamma(2, rate=3)
    >>> print(round(float(g.mean()[0, 0]), 4), round(float(g.entropy()), 4))
    0.6667 0.4786
    """

    _event_ndims = (2, 0)

    def __init__(self, df, scale):
        dtype = _float_dtype(df, scale)
        scale = np.asarray(scale, dtype=dtype)
        if scale.ndim < 2 or scale.shape[-1] != scale.shape[-2]:
            raise ValueError(
                f"Wishart: scale must have shape (..., d, d); got {scale.shape}."
            )
        df = np.asarray(df, dtype=dtype)
        d = scale.shape[-1]
        batch = np.broadcast_shapes(df.shape, scale.shape[:-2])
        self.df = np.array(np.broadcast_to(df, batch))
        self.scale = np.array(np.broadcast_to(scale, batch + (d, d)))

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.df.shape

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.scale.dtype

    @property
    def dim(self):
        """Event dimension ``d`` (matrices are ``d x d``)."""
        return self.scale.shape[-1]

    def _logdet_scale(self):
        return _cholesky_logdet(np.linalg.cholesky(self.scale))

    @property
    def natural(self):
        """Natural parameters ``(-W^{-1} / 2, (df - d - 1) / 2)``."""
        inv = np.linalg.inv(self.scale)
        inv = 0.5 * (inv + np.swapaxes(inv, -1, -2))
        return (-0.5 * inv, 0.5 * (self.df - self.dim - 1.0))

    @classmethod
    def from_natural(cls, eta1, eta2):
        """Build from natural parameters ``(-W^{-1} / 2, (df - d - 1) / 2)``.

        ``eta1`` is symmetrised before use.

        Parameters
        ----------
        eta1 : array_like of shape (..., d, d)
            First natural parameter, ``-W^{-1} / 2``; ``-eta1`` must be
            symmetric positive definite.
        eta2 : array_like
            Second natural parameter, ``(df - d - 1) / 2``, greater than -1;
            broadcast against the batch shape of ``eta1``.

        Returns
        -------
        Wishart
            The Wishart distribution with these natural parameters.
        """
        dtype = _float_dtype(eta1, eta2)
        eta1 = np.asarray(eta1, dtype=dtype)
        eta2 = np.asarray(eta2, dtype=dtype)
        d = eta1.shape[-1]
        scale = np.linalg.inv(-(eta1 + np.swapaxes(eta1, -1, -2)))
        scale = 0.5 * (scale + np.swapaxes(scale, -1, -2))
        return cls(2.0 * eta2 + d + 1.0, scale)

    @staticmethod
    def valid_natural(eta1, eta2):
        """True where ``(eta1, eta2)`` define a Wishart.

        Valid means: all entries finite, ``-eta1`` symmetric positive
        definite and ``eta2 > -1`` (``df > d - 1``).

        Parameters
        ----------
        eta1 : array_like of shape (..., d, d)
            First natural parameter, ``-W^{-1} / 2``.
        eta2 : array_like
            Second natural parameter, ``(df - d - 1) / 2``; broadcast against
            the batch shape of ``eta1``.

        Returns
        -------
        ndarray of bool
            True where the parameters are valid; it has the broadcast batch
            shape.
        """
        eta1 = _as_float(eta1)
        eta2 = _as_float(eta2)
        batch = np.broadcast_shapes(eta1.shape[:-2], eta2.shape)
        ok = np.all(np.isfinite(eta1), axis=(-2, -1)) & _symmetric_mask(eta1)
        ok = np.broadcast_to(ok & np.isfinite(eta2) & (eta2 > -1), batch)
        return _pd_mask(-(eta1 + np.swapaxes(eta1, -1, -2)), ok)

    def validate(self):
        """Raise ``ValueError`` unless ``df > d - 1`` and every scale is valid.

        Returns
        -------
        Wishart
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a degree of freedom is not finite or not above ``d - 1``, or a
            scale matrix is not finite, symmetric and positive definite.
        """
        if not np.all(np.isfinite(self.df) & (self.df > self.dim - 1)):
            raise ValueError(f"Wishart: df must be finite and greater than d - 1 = {self.dim - 1}.")
        if not np.all(np.isfinite(self.scale)):
            raise ValueError("Wishart: scale must be finite.")
        ok = _symmetric_mask(self.scale)
        if not np.all(ok) or not np.all(_pd_mask(self.scale, ok)):
            raise ValueError("Wishart: scale must be symmetric positive definite.")
        return self

    def expected_log_det(self):
        """``E[log|X|] = sum_j digamma((df - j) / 2) + d log 2 + log|W|``.

        Returns
        -------
        ndarray of shape batch_shape
            The expected log-determinant of each factor.
        """
        d = self.dim
        return _multi_digamma(0.5 * self.df, d) + d * np.log(2.0) + self._logdet_scale()

    def expected_stats(self):
        """Expected statistics ``(E[X], E[log|X|]) = (df W, ...)``.

        Returns
        -------
        tuple of ndarray
            ``(E[X], E[log|X|])`` of shapes ``batch_shape + (d, d)`` and
            ``batch_shape``.
        """
        return (self.mean(), self.expected_log_det())

    def log_normalizer(self):
        """Log-normaliser ``df d log(2) / 2 + df log|W| / 2 + log Gamma_d(df / 2)``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        d, df = self.dim, self.df
        return (
            0.5 * df * d * np.log(2.0)
            + 0.5 * df * self._logdet_scale()
            + _log_multigamma(0.5 * df, d)
        )

    def log_prob(self, x):
        """Log density at the matrices ``x`` of shape ``(..., d, d)``.

        Parameters
        ----------
        x : array_like of shape (..., d, d)
            Symmetric positive definite points; ``x.shape[:-2]`` is broadcast
            against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x.shape[:-2]`` and the
            batch shape.
        """
        x = np.asarray(x, dtype=self.dtype)
        eta1, eta2 = self.natural
        _, logdet = np.linalg.slogdet(x)
        return np.sum(eta1 * x, axis=(-2, -1)) + eta2 * logdet - self.log_normalizer()

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape + (d, d)``.

        Bartlett's decomposition: ``X = L A A^T L^T`` with ``W = L L^T``,
        ``A`` lower triangular, ``A_jj^2 ~ chi2(df - j)`` and standard normal
        entries below the diagonal.

        Parameters
        ----------
        size : int, tuple of int or None, default=None
            Leading sample shape, prepended to the batch shape; ``None`` draws
            a single sample per factor.
        random_state : None, int, RandomState or Generator, default=None
            Source of randomness: ``None`` uses the global ``RandomState``, an
            int seeds a new ``RandomState``, and ``RandomState`` or
            :class:`numpy.random.Generator` instances are used as is.

        Returns
        -------
        ndarray of shape size + batch_shape + (d, d)
            Symmetric positive definite samples, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        d = self.dim
        shape = _size_tuple(size) + self.batch_shape
        a = np.tril(rng.standard_normal(shape + (d, d)), k=-1)
        dof = np.broadcast_to(self.df, shape)[..., None] - np.arange(d)
        idx = np.arange(d)
        a[..., idx, idx] = np.sqrt(rng.chisquare(dof))
        la = np.linalg.cholesky(self.scale) @ a
        x = la @ np.swapaxes(la, -1, -2)
        return x.astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[X] = df W``.

        Returns
        -------
        ndarray of shape batch_shape + (d, d)
            The mean of each factor.
        """
        return self.df[..., None, None] * self.scale


# --------------------------------------------------------------------------
# Dirichlet
# --------------------------------------------------------------------------
class Dirichlet(ExponentialFamily):
    """Batch of Dirichlet distributions over the last axis.

    Sufficient statistics ``t(x) = (log x,)``, natural parameters
    ``eta = (concentration - 1,)`` and log-normaliser
    ``A = sum(gammaln(alpha)) - gammaln(sum(alpha))``; the expected statistics
    are ``(digamma(alpha) - digamma(sum(alpha)),)``.

    Parameters
    ----------
    concentration : array_like of shape (..., K)
        Positive concentrations; the last axis indexes the categories.

    Attributes
    ----------
    concentration : ndarray of shape batch_shape + (K,)

    Examples
    --------
    >>> q = Dirichlet([[1.0, 1.0, 1.0], [2.0, 3.0, 5.0]])
    >>> q.batch_shape
    (2,)
    >>> print(np.round(q.mean(), 4))
    [[0.3333 0.3333 0.3333]
     [0.2    0.3    0.5   ]]
    >>> print(np.round(q.expected_stats()[0][1], 4))
    [-1.829  -1.329  -0.7456]
    >>> print(np.round(q.kl(Dirichlet([1.0, 1.0, 1.0])), 4))
    [0.    0.768]
    """

    _event_ndims = (1,)

    def __init__(self, concentration):
        dtype = _float_dtype(concentration)
        alpha = np.array(concentration, dtype=dtype)
        if alpha.ndim < 1:
            raise ValueError(
                "Dirichlet: concentration must have shape (..., K) with the "
                "categories on the last axis."
            )
        self.concentration = alpha

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.concentration.shape[:-1]

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.concentration.dtype

    @property
    def n_categories(self):
        """Number of categories ``K``."""
        return self.concentration.shape[-1]

    @property
    def variance(self):
        """Marginal variances ``alpha_k (alpha_0 - alpha_k) / (alpha_0**2 (alpha_0 + 1))``."""
        alpha = self.concentration
        a0 = np.sum(alpha, axis=-1, keepdims=True)
        return alpha * (a0 - alpha) / (a0**2 * (a0 + 1.0))

    @property
    def natural(self):
        """Natural parameters ``(concentration - 1,)``."""
        return (self.concentration - 1.0,)

    @classmethod
    def from_natural(cls, eta):
        """Build from the natural parameter ``concentration - 1``.

        Parameters
        ----------
        eta : array_like of shape (..., K)
            The single natural parameter, ``concentration - 1``, with the
            categories on the last axis; every entry must be greater than -1.

        Returns
        -------
        Dirichlet
            The Dirichlet distribution with this natural parameter.
        """
        eta = np.asarray(eta, dtype=_float_dtype(eta))
        return cls(eta + 1.0)

    @staticmethod
    def valid_natural(eta):
        """True where ``eta`` defines a Dirichlet (all finite and > -1).

        Parameters
        ----------
        eta : array_like of shape (..., K)
            The single natural parameter, ``concentration - 1``, with the
            categories on the last axis.

        Returns
        -------
        ndarray of bool of shape eta.shape[:-1]
            True where every entry along the last axis is finite and greater
            than -1.
        """
        eta = _as_float(eta)
        return np.all(np.isfinite(eta) & (eta > -1), axis=-1)

    def validate(self):
        """Raise ``ValueError`` unless concentrations are finite and positive.

        Returns
        -------
        Dirichlet
            ``self``, unchanged, so that calls can be chained.

        Raises
        ------
        ValueError
            If a concentration is not finite or not strictly positive.
        """
        if not np.all(np.isfinite(self.concentration)):
            raise ValueError("Dirichlet: concentration must be finite.")
        if not np.all(self.concentration > 0):
            raise ValueError("Dirichlet: concentration must be strictly positive.")
        return self

    def expected_log(self):
        """Expected logarithm ``E[log x] = digamma(alpha) - digamma(sum(alpha))``.

        Returns
        -------
        ndarray of shape batch_shape + (K,)
            ``E[log x_k]`` for each factor and category.
        """
        alpha = self.concentration
        return special.digamma(alpha) - special.digamma(
            np.sum(alpha, axis=-1, keepdims=True)
        )

    def expected_stats(self):
        """Expected statistics ``(E[log x],)``.

        Returns
        -------
        tuple of ndarray
            The one-element tuple ``(E[log x],)``, of shape
            ``batch_shape + (K,)``.
        """
        return (self.expected_log(),)

    def log_normalizer(self):
        """Log-normaliser ``A = sum(gammaln(alpha)) - gammaln(sum(alpha))``.

        Returns
        -------
        ndarray of shape batch_shape
            The log-normaliser of each factor.
        """
        alpha = self.concentration
        return np.sum(special.gammaln(alpha), axis=-1) - special.gammaln(
            np.sum(alpha, axis=-1)
        )

    def entropy(self):
        """Differential entropy ``A - sum((alpha - 1) E[log x])``.

        Returns
        -------
        ndarray of shape batch_shape
            Entropy of each factor.
        """
        alpha = self.concentration
        return self.log_normalizer() - np.sum(
            (alpha - 1.0) * self.expected_log(), axis=-1
        )

    def kl(self, other):
        """KL(self || other) for another (broadcastable) :class:`Dirichlet`.

        Parameters
        ----------
        other : Dirichlet
            Distribution ``p`` with the same number of categories ``K``; its
            batch shape must broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Non-negative KL divergence of each factor, with the broadcast batch
            shape.

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`Dirichlet`.
        """
        self._check_other(other)
        a1 = self.concentration
        a2 = other.concentration
        kl = (
            -self.log_normalizer()
            + other.log_normalizer()
            + np.sum((a1 - a2) * self.expected_log(), axis=-1)
        )
        return np.maximum(kl, 0.0)

    def log_prob(self, x):
        """Log density at ``x`` of shape ``(..., batch_shape, K)``.

        ``-inf`` where a coordinate of ``x`` is negative; ``x`` is not checked
        to sum to one.

        Parameters
        ----------
        x : array_like of shape (..., K)
            Points of the simplex at which to evaluate the density;
            ``x.shape[:-1]`` is broadcast against :attr:`batch_shape`.

        Returns
        -------
        ndarray
            Log densities, with the broadcast shape of ``x.shape[:-1]`` and the
            batch shape.
        """
        x = np.asarray(x)
        neg = np.any(x < 0, axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            xpos = np.where(x >= 0, x, 1.0)
            lp = (
                np.sum(special.xlogy(self.concentration - 1.0, xpos), axis=-1)
                - self.log_normalizer()
            )
        return np.where(neg, -np.inf, lp)

    def sample(self, size=None, random_state=None):
        """Draw samples of shape ``size + batch_shape + (K,)``.

        Normalised Gamma variates, generated in log space
        (``log G(a) = log G(a + 1) + log(U) / a``) so that small
        concentrations do not underflow to ``0 / 0``.

        Parameters
        ----------
        size : int, tuple of int or None, default=None
            Leading sample shape, prepended to the batch shape; ``None`` draws
            a single sample per factor.
        random_state : None, int, RandomState or Generator, default=None
            Source of randomness: ``None`` uses the global ``RandomState``, an
            int seeds a new ``RandomState``, and ``RandomState`` or
            :class:`numpy.random.Generator` instances are used as is.

        Returns
        -------
        ndarray of shape size + batch_shape + (K,)
            Samples on the simplex, with dtype :attr:`dtype`.
        """
        rng = _check_random_state(random_state)
        shape = _size_tuple(size) + self.concentration.shape
        alpha = np.broadcast_to(self.concentration, shape).astype(np.float64)
        log_g = np.log(rng.standard_gamma(alpha + 1.0, size=shape)) + np.log(
            _uniform_open0(rng, shape)
        ) / alpha
        log_g -= np.max(log_g, axis=-1, keepdims=True)
        g = np.exp(log_g)
        x = g / np.sum(g, axis=-1, keepdims=True)
        return x.astype(self.dtype, copy=False)

    def mean(self):
        """Mean ``E[x] = alpha / sum(alpha)``.

        Returns
        -------
        ndarray of shape batch_shape + (K,)
            The mean of each factor.
        """
        alpha = self.concentration
        return alpha / np.sum(alpha, axis=-1, keepdims=True)
