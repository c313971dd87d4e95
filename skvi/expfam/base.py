"""The base class of the exponential families and the helpers they share."""

import numbers
import sys
import warnings

import numpy as np

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


def same_array(a, b):
    """Whether two arrays have the same shape and entries: a sample of entries first, a cheap 'no'.

    Where a step may have left a parameter unchanged (the engine's
    extrapolated passes, a family's ``valid_step``, a model's cached
    factorisations), most changed arrays differ in a sample of 64 entries,
    and the full comparison runs only for those that agree there.

    Parameters
    ----------
    a, b : ndarray
        The arrays.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.base import same_array
    >>> same_array(np.eye(3), np.eye(3)), same_array(np.eye(3), 2 * np.eye(3))
    (True, False)
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    step = max(1, flat_a.size // 64)
    return bool(np.array_equal(flat_a[::step], flat_b[::step]) and np.array_equal(a, b))


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


def _renamed(module_name, renamed, name):
    """The object a deprecated name of a module stands for, with a FutureWarning naming the new one.

    A module's ``__getattr__`` calls it (PEP 562), so that the old names
    still import, for one release, but say what to write instead.
    ``renamed`` maps each old name to its new one in the same module.
    """
    if name not in renamed:
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    new = renamed[name]
    warnings.warn(
        f"{module_name}.{name} is deprecated and will be removed in the next release: "
        f"it is now called {new}",
        FutureWarning,
        stacklevel=3,
    )
    return getattr(sys.modules[module_name], new)


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
    >>> from skvi.expfam import Gamma
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

    @classmethod
    def valid_step(cls, current, new):
        """:meth:`valid_natural` of ``new``, given that ``current`` is valid.

        A family may test only what a step changed; this one tests all of
        ``new``.

        Parameters
        ----------
        current : tuple of array_like
            Valid natural parameters (a factor before a step).
        new : tuple of array_like
            The natural parameters after the step.

        Returns
        -------
        ndarray of bool
            As :meth:`valid_natural` of ``new``.

        Examples
        --------
        >>> import numpy as np
        >>> from skvi.expfam import Gamma
        >>> Gamma.valid_step((np.array([1.0]), np.array([-1.0])),
        ...                  (np.array([1.0]), np.array([0.0])))
        array([False])
        """
        return cls.valid_natural(*new)

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
        return self.log_normalizer() - self._inner(self.natural, self.expected_stats())

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
