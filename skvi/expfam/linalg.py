"""The Gaussian natural-to-moments map and the factorisations the families and the models share.

Every map from a Gaussian's natural parameters ``(Lambda m, -Lambda / 2)``
to its mean, covariance and ``log|Lambda|`` is :func:`gaussian_moments`,
with the options its callers need: a diagonal precision, the lower
Cholesky factor of the covariance (for draws), and for one large precision
the LAPACK route with a memo of factorisations.  The other functions are
the factorisations of symmetric positive definite matrices that the
models' mathematics uses (a factor with or without jitter, a
log-determinant, an inverse, the eigenvalues, the nearest positive
semi-definite matrix, a square root of a semi-definite one), and the inverse
and log-determinant of a general square matrix, so that the models hold no linear algebra of their
own.
"""

from collections import namedtuple

import numpy as np
from scipy.linalg import lapack

from .base import _cholesky_logdet, _float_dtype, _pd_mask, _renamed, _symmetric_mask, same_array

try:
    from . import _gaussian_batch
except ImportError:  # pragma: no cover - exercised where it is not built
    _gaussian_batch = None

__all__ = [
    "GaussianMeanCovariance",
    "SmallGaussianMoments",
    "cholesky_factor",
    "gaussian_moments",
    "inverse_and_logdet",
    "psd_projection",
    "psd_root",
    "small_gaussian_moments",
    "spd_inverse",
    "spd_logdet",
    "symmetric_eigenvalues",
]

#: Factorisations of precisions that a memo of :func:`gaussian_moments` keeps
#: (a GLM's batch pass extrapolated from a start visits three).
MEMO_SIZE = 3
#: Largest precision that the LAPACK route inverts by solves of the identity
#: rather than ``potri``.
SMALL_INVERSE = 64
#: Largest dimension whose Gaussians :func:`small_gaussian_moments` maps in
#: its compiled loop; larger ones go through numpy's batched LAPACK.
SMALL_DIMENSION = 32
#: Relative jitters :func:`cholesky_factor` tries, after none, on a matrix
#: that does not factorise.
_JITTERS = (1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0)

GaussianMeanCovariance = namedtuple(
    "GaussianMeanCovariance", ["mean", "covariance", "logdet_precision", "factor"]
)
GaussianMeanCovariance.__doc__ = """Moments of Gaussians, as :func:`gaussian_moments` returns them.

A named tuple ``(mean, covariance, logdet_precision, factor)``.  Formerly
``GaussianMoments``, the name of BayesPy's class of a Gaussian node's
moments (the kind :mod:`skvi.networks` calls a ``MomentsKind``).

Parameters
----------
mean : ndarray of shape batch_shape + (d,)
    ``m = Lambda^{-1} eta1``.
covariance : ndarray of shape batch_shape + (d, d), or batch_shape + (d,)
    ``Sigma = Lambda^{-1}``, symmetric; its diagonal (the variances) for a
    diagonal Gaussian.
logdet_precision : ndarray of shape batch_shape, or float
    ``log|Lambda|`` (a float on the LAPACK route).
factor : ndarray or None
    The lower Cholesky factor of ``Sigma`` (the standard deviations for a
    diagonal Gaussian) when asked for, else None.

Examples
--------
>>> import numpy as np
>>> from skvi.expfam import gaussian_moments
>>> gaussian_moments(np.array([2.0]), np.array([-1.0]), diagonal=True).mean
array([1.])
"""


def _check_natural(eta1, eta2, diagonal):
    """``(eta1, eta2)`` as floating arrays; ValueError naming a wrong shape (finiteness apart)."""
    eta1 = np.asarray(eta1)
    eta2 = np.asarray(eta2)
    if eta1.dtype not in (np.float32, np.float64):
        eta1 = eta1.astype(np.float64)
    if eta2.dtype not in (np.float32, np.float64):
        eta2 = eta2.astype(np.float64)
    event = 1 if diagonal else 2
    if eta1.ndim < 1 or eta2.ndim < event:
        raise ValueError(
            "gaussian_moments: eta1 must have shape (..., d) and eta2 shape "
            f"{'(..., d)' if diagonal else '(..., d, d)'}; got shapes {eta1.shape} and "
            f"{eta2.shape}."
        )
    d = eta1.shape[-1]
    if eta2.shape[eta2.ndim - event :] != (d,) * event:
        raise ValueError(
            f"gaussian_moments: eta2 must end in {(d,) * event} with d = eta1.shape[-1] = {d}; "
            f"got {eta2.shape}."
        )
    if eta1.shape[:-1] != eta2.shape[: eta2.ndim - event]:
        try:
            np.broadcast_shapes(eta1.shape[:-1], eta2.shape[: eta2.ndim - event])
        except ValueError:
            raise ValueError(
                f"gaussian_moments: the batch shapes of eta1 {eta1.shape} and eta2 "
                f"{eta2.shape} do not broadcast."
            ) from None
    return eta1, eta2


def _not_finite():
    return ValueError("gaussian_moments: the natural parameters must be finite.")


def _natural_factors(eta1, eta2):
    """``(precision, L, L^{-1}, mean)`` from natural parameters ``(Lambda m, -Lambda / 2)``.

    ``eta2`` is symmetrised, ``precision = L L^T`` factorised once
    (``LinAlgError`` when a precision is not positive definite) and
    ``m = L^{-T} (L^{-1} eta1)``, batched over the leading axes.
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
    return precision, chol, chol_inv, mean


def _covariance(chol_inv):
    """``Lambda^{-1} = L^{-T} L^{-1}`` from the inverse Cholesky factor, symmetrised."""
    cov = np.swapaxes(chol_inv, -1, -2) @ chol_inv
    return 0.5 * (cov + np.swapaxes(cov, -1, -2))


def _diagonal_moments(eta1, eta2, factor, logdet):
    var = -0.5 / eta2
    # log|Lambda| = sum log(-2 eta2)
    logdet = np.sum(np.log(-2.0 * eta2), axis=-1) if logdet else None
    return GaussianMeanCovariance(eta1 * var, var, logdet, np.sqrt(var) if factor else None)


def _lapack_moments(eta1, eta2, memo, memo_size):
    """One float64 precision by ``potrf``: the mean by ``potrs``, the covariance by solves or ``potri``.

    The family's batched route inverts the triangular factor as a general
    matrix and multiplies, four times the work.  ``memo`` (a list, or
    None) keeps the last ``memo_size`` factorisations: a precision equal
    to a kept one (a step that left it as it was) only solves for the mean.
    """
    eta1 = np.asarray(eta1, dtype=np.float64)
    eta2 = np.asarray(eta2, dtype=np.float64)
    for known, (chol, cov, logdet) in memo or ():
        if same_array(known, eta2):
            return lapack.dpotrs(chol, eta1, lower=1)[0], cov, logdet
    precision = -(eta2 + eta2.T)
    diagonal = np.diagonal(precision)
    if np.all(diagonal > 0) and np.count_nonzero(precision) == np.count_nonzero(diagonal):
        # A diagonal precision (a prior's, a start's): no factorisation.
        return eta1 / diagonal, np.diag(1.0 / diagonal), float(np.sum(np.log(diagonal)))
    chol, info = lapack.dpotrf(precision, lower=1, clean=1)
    if info != 0:  # not positive definite: the batched route decides (it raises)
        _, chol, chol_inv, mean = _natural_factors(eta1, eta2)
        return mean, _covariance(chol_inv), float(_cholesky_logdet(chol))
    mean = lapack.dpotrs(chol, eta1, lower=1)[0]
    if chol.shape[0] <= SMALL_INVERSE:
        # Two triangular solves of the identity: OpenBLAS's threaded
        # ``potri`` of a small matrix waits on its threads, longer than
        # the solves take (``docs/glm_benchmark.md``, "Measurements
        # behind the implementation").
        cov = lapack.dpotrs(chol, np.eye(chol.shape[0]), lower=1)[0]
        cov = 0.5 * (cov + cov.T)
    else:
        cov = lapack.dpotri(chol, lower=1)[0]
        cov = np.tril(cov) + np.tril(cov, -1).T
    logdet = float(2.0 * np.sum(np.log(np.diag(chol))))
    if memo is not None:  # Fortran order: ``potrs`` would copy it at every call
        memo.insert(0, (eta2.copy(), (np.asfortranarray(chol), cov, logdet)))
        del memo[memo_size:]
    return mean, cov, logdet


def gaussian_moments(
    eta1,
    eta2,
    *,
    diagonal=False,
    factor=False,
    logdet=True,
    lapack=False,
    memo=None,
    memo_size=MEMO_SIZE,
):
    """Mean, covariance and ``log|Lambda|`` of Gaussians from their natural parameters.

    The one natural-to-moments map of the Gaussian family, for natural
    parameters ``(eta1, eta2) = (Lambda m, -Lambda / 2)`` batched over the
    leading axes: ``m = Lambda^{-1} eta1``, ``Sigma = Lambda^{-1}`` and
    ``log|Lambda|``.  A full precision is factorised once,
    ``Lambda = L L^T`` (``eta2`` symmetrised first); the mean comes from
    two triangular solves and the covariance from ``L^{-1}``.  Asked for
    the covariance's factor without the log-determinant, the map inverts
    each precision directly instead (the cheaper route when no factor of
    the precision is needed).

    Parameters
    ----------
    eta1 : array_like of shape (..., d)
        First natural parameter, ``Lambda m``.
    eta2 : array_like of shape (..., d, d), or (..., d) if ``diagonal``
        Second natural parameter, ``-Lambda / 2`` (its diagonal if
        ``diagonal``); ``-eta2`` positive definite.  The batch shapes of
        ``eta1`` and ``eta2`` broadcast.
    diagonal : bool, default=False
        Diagonal precisions given by their diagonals: the covariance
        returned is the variances, shape (..., d).
    factor : bool, default=False
        Also return the lower Cholesky factor of each covariance (what a
        draw ``m + F z`` needs), or the standard deviations if
        ``diagonal``.
    logdet : bool, default=True
        Return ``log|Lambda|``; False leaves it out (None), for a caller
        that does not need it (it costs a logarithm per entry of a
        diagonal precision).
    lapack : bool, default=False
        One large float64 precision (``eta1`` of shape (d,), ``eta2`` of
        shape (d, d)): LAPACK's ``potrf``, then ``potrs`` for the mean and
        the covariance (solves of the identity up to :data:`SMALL_INVERSE`
        dimensions, ``potri`` above), half the work of the batched route;
        a precision with no off-diagonal entries is not factorised.  The
        log-determinant is then a float.
    memo : list or None, default=None
        With ``lapack``: a list in which the last ``memo_size``
        factorisations are kept; a precision equal to a kept one (as a
        step that leaves it unchanged gives) only solves for the mean.
        Start it empty and pass the same list at every call.
    memo_size : int, default=MEMO_SIZE
        How many factorisations ``memo`` keeps.

    Returns
    -------
    GaussianMeanCovariance
        ``(mean, covariance, logdet_precision, factor)``; ``factor`` is
        None unless asked for, ``logdet_precision`` None if not.

    Raises
    ------
    ValueError
        If the shapes do not match or an entry is not finite.
    numpy.linalg.LinAlgError
        If a precision ``-2 eta2`` is not positive definite.

    See Also
    --------
    MultivariateGaussian.moments_from_natural : the same map, for the family's callers.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import gaussian_moments
    >>> precision = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> q = gaussian_moments(precision @ np.array([1.0, -1.0]), -0.5 * precision, factor=True)
    >>> print(np.round(q.mean, 12), round(float(q.logdet_precision), 4))
    [ 1. -1.] 0.5596
    >>> bool(np.allclose(q.covariance @ precision, np.eye(2)))
    True
    >>> bool(np.allclose(q.factor @ q.factor.T, q.covariance))
    True
    >>> lapack = gaussian_moments(precision @ np.array([1.0, -1.0]), -0.5 * precision,
    ...                           lapack=True)
    >>> bool(np.allclose(lapack.covariance, q.covariance))
    True
    """
    eta1, eta2 = _check_natural(eta1, eta2, diagonal)
    if diagonal:
        # -inf < eta2 < 0 and a finite mean: finite natural parameters
        # (inf * var is not finite), and positive precisions.
        if not np.all((eta2 < 0) & (eta2 > -np.inf)):
            if not np.all(np.isfinite(eta2)):
                raise _not_finite()
            raise np.linalg.LinAlgError("gaussian_moments: a precision is not positive.")
        q = _diagonal_moments(eta1, eta2, factor, logdet)
        if not np.all(np.isfinite(q.mean)):
            raise _not_finite()
        return q
    if not (np.all(np.isfinite(eta1)) and np.all(np.isfinite(eta2))):
        raise _not_finite()
    if lapack:
        if np.ndim(eta1) != 1 or np.ndim(eta2) != 2:
            raise ValueError(
                "gaussian_moments: the LAPACK route takes one Gaussian, eta1 of shape (d,) "
                f"and eta2 of shape (d, d); got {np.shape(eta1)} and {np.shape(eta2)}."
            )
        mean, cov, value = _lapack_moments(eta1, eta2, memo, memo_size)
    elif factor and not logdet:
        # The covariance's factor and no log-determinant (a caller that
        # draws): one inverse of each precision (LU), half the work of
        # factorising it, inverting the factor and multiplying.
        precision = -(eta2 + np.swapaxes(eta2, -1, -2))
        cov = np.linalg.inv(precision)
        cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
        mean = (cov @ eta1[..., None])[..., 0]
        return GaussianMeanCovariance(mean, cov, None, np.linalg.cholesky(cov))
    else:
        _, chol, chol_inv, mean = _natural_factors(eta1, eta2)
        cov, value = _covariance(chol_inv), _cholesky_logdet(chol) if logdet else None
    return GaussianMeanCovariance(
        mean, cov, value if logdet else None, np.linalg.cholesky(cov) if factor else None
    )


SmallGaussianMoments = namedtuple(
    "SmallGaussianMoments", ["mean", "second_moment", "logdet_precision", "valid"]
)
SmallGaussianMoments.__doc__ = """Moments of many Gaussians, as :func:`small_gaussian_moments` returns them.

A named tuple ``(mean, second_moment, logdet_precision, valid)``.

Parameters
----------
mean : ndarray of shape batch_shape + (d,)
    ``m = Lambda^{-1} eta1``.
second_moment : ndarray of shape batch_shape + (d, d)
    ``E[x x^T] = Lambda^{-1} + m m^T``.
logdet_precision : ndarray of shape batch_shape
    ``log|Lambda|``.
valid : ndarray of bool of shape batch_shape
    Whether each Gaussian's natural parameters are valid (finite, ``eta2``
    symmetric, ``-eta2`` positive definite); the moments of an invalid one
    are NaN.

Examples
--------
>>> import numpy as np
>>> from skvi.expfam import small_gaussian_moments
>>> small_gaussian_moments(np.array([[2.0]]), np.array([[[-1.0]]])).second_moment
array([[[1.5]]])
"""


def _small_moments_numpy(eta1, eta2):
    """:func:`small_gaussian_moments` by numpy's batched LAPACK (the compiled loop's reference)."""
    ok = np.all(np.isfinite(eta1), axis=-1) & np.all(np.isfinite(eta2), axis=(-2, -1))
    ok &= _symmetric_mask(eta2)
    factors = None
    if np.all(ok):
        try:
            factors = _natural_factors(eta1, eta2)
        except np.linalg.LinAlgError:
            pass
    if factors is None:
        ok = _pd_mask(-(eta2 + np.swapaxes(eta2, -1, -2)), ok)
        # The invalid Gaussians replaced by standard ones, their moments NaN.
        eye = np.eye(eta2.shape[-1])
        factors = _natural_factors(
            np.where(ok[..., None], eta1, 0.0), np.where(ok[..., None, None], eta2, -0.5 * eye)
        )
    _, chol, chol_inv, mean = factors
    second = _covariance(chol_inv)
    second += mean[..., :, None] * mean[..., None, :]
    logdet = _cholesky_logdet(chol)
    if not np.all(ok):
        mean[~ok] = np.nan
        second[~ok] = np.nan
        logdet[~ok] = np.nan
    return SmallGaussianMoments(mean, second, logdet, ok)


def small_gaussian_moments(eta1, eta2):
    """Means, second moments and ``log|Lambda|`` of many small Gaussians, and which are valid.

    :func:`gaussian_moments` for callers that hold many Gaussians of a few
    dimensions each (one per user or item of a factor model) and need
    their second moments ``E[x x^T]`` and whether each is valid (a step's
    safety test), without an error: each precision is factorised once for
    both, in a compiled loop over the batch (numpy's batched routines cost
    more per small matrix than its arithmetic).  ``eta2`` is symmetrised
    first, as :func:`gaussian_moments` does.  Without the compiled kernel,
    or above :data:`SMALL_DIMENSION` dimensions, numpy's batched LAPACK
    gives the same numbers to rounding.

    Parameters
    ----------
    eta1 : array_like of shape (..., d)
        First natural parameter, ``Lambda m``.
    eta2 : array_like of shape (..., d, d)
        Second natural parameter, ``-Lambda / 2``, with ``eta1``'s batch
        shape.

    Returns
    -------
    SmallGaussianMoments
        ``(mean, second_moment, logdet_precision, valid)``: float64 arrays,
        NaN where ``valid`` is False.

    Raises
    ------
    ValueError
        If the shapes do not match.

    See Also
    --------
    gaussian_moments : the map with a covariance, a factor or one large precision.
    MultivariateGaussian.valid_natural : the same test of validity.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import small_gaussian_moments
    >>> precision = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])
    >>> eta1 = np.einsum("nij,j->ni", precision, np.array([1.0, -1.0]))
    >>> q = small_gaussian_moments(eta1, -0.5 * precision)
    >>> q.valid                  # the second precision is not positive definite
    array([ True, False])
    >>> print(np.round(q.mean[0], 12), round(float(q.logdet_precision[0]), 4))
    [ 1. -1.] 0.5596
    >>> bool(np.isnan(q.mean[1]).all())
    True
    """
    eta1 = np.asarray(eta1, dtype=np.float64)
    eta2 = np.asarray(eta2, dtype=np.float64)
    if eta1.ndim < 1 or eta2.shape != eta1.shape + eta1.shape[-1:]:
        raise ValueError(
            "small_gaussian_moments: eta1 must have shape (..., d) and eta2 shape (..., d, d) "
            f"with the same batch shape; got {eta1.shape} and {eta2.shape}."
        )
    d = eta1.shape[-1]
    if _gaussian_batch is None or d > SMALL_DIMENSION or d == 0:
        return _small_moments_numpy(eta1, eta2)
    batch = eta1.shape[:-1]
    n = int(np.prod(batch))
    mean = np.empty(batch + (d,))
    second = np.empty(batch + (d, d))
    logdet = np.empty(batch)
    valid = np.empty(batch, dtype=np.uint8)
    _gaussian_batch.moments_batch(
        np.ascontiguousarray(eta1).reshape(n, d),
        np.ascontiguousarray(eta2).reshape(n, d, d),
        mean.reshape(n, d),
        second.reshape(n, d, d),
        logdet.reshape(n),
        valid.reshape(n),
    )
    return SmallGaussianMoments(mean, second, logdet, valid.view(bool))


def _check_square(a, name):
    a = np.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected square matrices of shape (..., d, d); got {a.shape}.")
    if a.dtype.kind not in "fiub":
        raise ValueError(f"{name}: expected real matrices; got dtype {a.dtype}.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: the matrices must be finite.")
    return a


def cholesky_factor(a, *, jitter=False):
    """Lower Cholesky factors ``L`` (``a = L L^T``) of symmetric positive definite matrices.

    Parameters
    ----------
    a : array_like of shape (..., d, d)
        Symmetric positive definite matrices (their lower triangles are
        read).
    jitter : bool, default=False
        On a matrix that does not factorise, add ``j * s I`` and try
        again, ``s`` each matrix's largest diagonal entry and ``j`` from
        ``1e-12`` up by factors of 100 to 1: the factor of a positive
        semi-definite matrix that rounding left just indefinite.

    Returns
    -------
    ndarray of shape (..., d, d)
        The lower triangular factors.

    Raises
    ------
    ValueError
        If ``a`` is not a finite stack of square matrices.
    numpy.linalg.LinAlgError
        If a matrix is not positive definite (with ``jitter``: not even
        with the largest jitter).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import cholesky_factor
    >>> cholesky_factor(np.array([[4.0, 2.0], [2.0, 2.0]]))
    array([[2., 0.],
           [1., 1.]])
    >>> L = cholesky_factor(np.ones((2, 2)), jitter=True)  # singular: a jitter of 1e-12
    >>> bool(np.allclose(L @ L.T, np.ones((2, 2)))), bool(L[1, 1] > 0)
    (True, True)
    """
    a = _check_square(a, "cholesky_factor")
    if not jitter:
        return np.linalg.cholesky(a)
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    scale = np.maximum(np.max(np.diagonal(a, axis1=-2, axis2=-1), axis=-1), 1e-300)
    eye = np.eye(a.shape[-1])
    for j in _JITTERS:
        try:
            return np.linalg.cholesky(a + (j * scale)[..., None, None] * eye)
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("cholesky_factor: a matrix is not positive semi-definite.")


def spd_logdet(a):
    """``log|A|`` of symmetric positive definite matrices, from their Cholesky factors.

    Parameters
    ----------
    a : array_like of shape (..., d, d)
        Symmetric positive definite matrices.

    Returns
    -------
    ndarray of shape (...)
        The log-determinants.

    Raises
    ------
    ValueError
        If ``a`` is not a finite stack of square matrices.
    numpy.linalg.LinAlgError
        If a matrix is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import spd_logdet
    >>> round(float(spd_logdet(np.array([[4.0, 2.0], [2.0, 2.0]]))), 6)  # log 4
    1.386294
    """
    return _cholesky_logdet(cholesky_factor(a))


def spd_inverse(a):
    """Inverses of symmetric positive definite matrices by their Cholesky factors.

    ``A^{-1} = L^{-T} L^{-1}``, from two triangular solves of the identity.

    Parameters
    ----------
    a : array_like of shape (..., d, d)
        Symmetric positive definite matrices.

    Returns
    -------
    ndarray of shape (..., d, d)
        The inverses.

    Raises
    ------
    ValueError
        If ``a`` is not a finite stack of square matrices.
    numpy.linalg.LinAlgError
        If a matrix is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import spd_inverse
    >>> spd_inverse(np.array([[4.0, 2.0], [2.0, 2.0]]))
    array([[ 0.5, -0.5],
           [-0.5,  1. ]])
    """
    chol = cholesky_factor(a)
    eye = np.broadcast_to(np.eye(chol.shape[-1]), chol.shape)
    return np.linalg.solve(np.swapaxes(chol, -1, -2), np.linalg.solve(chol, eye))


def symmetric_eigenvalues(a):
    """Eigenvalues of symmetric matrices, in ascending order.

    Parameters
    ----------
    a : array_like of shape (..., d, d)
        Symmetric matrices (their lower triangles are read).

    Returns
    -------
    ndarray of shape (..., d)
        The eigenvalues of each matrix, ascending.

    Raises
    ------
    ValueError
        If ``a`` is not a finite stack of square matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import symmetric_eigenvalues
    >>> symmetric_eigenvalues(np.array([[2.0, 1.0], [1.0, 2.0]]))
    array([1., 3.])
    """
    return np.linalg.eigvalsh(_check_square(a, "symmetric_eigenvalues"))


def psd_projection(a):
    """Frobenius-nearest positive semi-definite matrices of symmetric matrices.

    Clips the negative eigenvalues of each matrix's symmetric part to 0.

    Parameters
    ----------
    a : array_like of shape (..., d, d)
        Square matrices; only their symmetric parts are used.

    Returns
    -------
    ndarray of shape (..., d, d)
        ``Q max(W, 0) Q^T`` for ``(a + a^T) / 2 = Q W Q^T``; symmetric.

    Raises
    ------
    ValueError
        If ``a`` is not a finite stack of square matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import psd_projection
    >>> psd_projection(np.array([[[1.0, 2.0], [2.0, 1.0]]])).round(3)
    array([[[1.5, 1.5],
            [1.5, 1.5]]])
    """
    a = np.asarray(_check_square(a, "psd_projection"), dtype=np.float64)
    a = 0.5 * (a + np.swapaxes(a, -1, -2))
    w, q = np.linalg.eigh(a)
    p = np.matmul(q * np.maximum(w, 0.0)[..., None, :], np.swapaxes(q, -1, -2))
    return 0.5 * (p + np.swapaxes(p, -1, -2))


def psd_root(a):
    """Square roots ``R`` with ``R R^T = a`` of a stack of positive semi-definite matrices.

    The lower Cholesky factors, in one batched factorisation; where a
    matrix is singular and Cholesky fails, that matrix's root is
    ``U sqrt(max(lambda, 0))`` from its eigendecomposition ``a = U diag(lambda)
    U^T``.  A quadrature rule whose points are symmetric and whitened is exact
    to the same degree through any root, so the mixture of the two kinds is
    harmless there.

    Parameters
    ----------
    a : ndarray of shape (n, d, d)
        Symmetric positive semi-definite matrices (a zero matrix included).

    Returns
    -------
    ndarray of shape (n, d, d)
        The roots: the Cholesky factor of each matrix where every matrix
        factorises, else of each one clearly positive definite.

    Raises
    ------
    ValueError
        If ``a`` is not a finite real stack of square matrices of shape
        (n, d, d).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import psd_root
    >>> a = np.array([[[4.0, 2.0], [2.0, 2.0]], [[1.0, 1.0], [1.0, 1.0]]])  # the second singular
    >>> R = psd_root(a)
    >>> bool(np.allclose(R @ np.swapaxes(R, -1, -2), a))
    True
    """
    a = _check_square(a, "psd_root")
    if a.ndim != 3:
        raise ValueError(f"psd_root: expected a stack of shape (n, d, d); got {a.shape}.")
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    root = np.empty_like(a)
    # Only the matrices whose smallest eigenvalue is not clearly positive go
    # through the eigendecomposition; the rest keep their Cholesky factor.
    values = np.linalg.eigvalsh(a)
    scale = np.maximum(values[:, -1], np.finfo(float).tiny)
    singular = values[:, 0] <= 1e-10 * scale
    good = ~singular
    if np.any(good):
        try:
            root[good] = np.linalg.cholesky(a[good])
        except np.linalg.LinAlgError:
            singular = np.ones_like(singular)
    values, vectors = np.linalg.eigh(a[singular])
    root[singular] = vectors * np.sqrt(np.maximum(values, 0.0))[..., None, :]
    return root


def inverse_and_logdet(R):
    """``R^{-1}`` and ``log|det R|`` of a square matrix, or ``(None, -inf)`` when it is singular.

    A general (not symmetric) matrix: the linear maps of a Gaussian
    variable (:mod:`skvi.expfam.linear_map`) need both for the map and its
    inverse.

    Parameters
    ----------
    R : array_like of shape (d, d)
        The map.

    Returns
    -------
    inverse : ndarray of shape (d, d) or None
        ``R^{-1}``; None where ``R`` is singular or not finite (a rotation
        the caller then refuses).
    logdet : float
        ``log|det R|`` (the rise of a Gaussian's entropy under ``x -> R x``).

    Raises
    ------
    ValueError
        If ``R`` is not one real square matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam import inverse_and_logdet
    >>> inv, logdet = inverse_and_logdet(np.array([[2.0, 1.0], [0.0, 0.5]]))
    >>> inv
    array([[ 0.5, -1. ],
           [ 0. ,  2. ]])
    >>> float(logdet)
    0.0
    """
    R = np.asarray(R)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.dtype.kind not in "fiub":
        raise ValueError(
            f"inverse_and_logdet: expected one real square matrix; got shape {R.shape} "
            f"and dtype {R.dtype}."
        )
    R = R.astype(np.float64)
    if not np.all(np.isfinite(R)):
        return None, -np.inf
    sign, logdet = np.linalg.slogdet(R)
    if sign == 0 or not np.isfinite(logdet):
        return None, -np.inf
    return np.linalg.inv(R), float(logdet)


# The old name, for one release.
_RENAMED = {"GaussianMoments": "GaussianMeanCovariance"}


def __getattr__(name):
    return _renamed(__name__, _RENAMED, name)
