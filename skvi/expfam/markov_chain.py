"""Markov chains as exponential families: a discrete chain and a Gaussian (linear) chain.

A chain ``x_0, ..., x_{N-1}`` whose joint density is an exponential family
in the one-step statistics has natural parameters on the states and on the
neighbouring pairs only; its moments and log-normaliser come from a
recursion along the chain rather than from the joint's full ``N``-state
form.  Two such chains, each vectorised over any leading axes (plates),
with a Python loop over the time steps only:

* a categorical chain, natural parameters ``(log p_0, log P_t)`` over the
  first state's one-hot vector and each pair's outer product: the
  forward-backward (alpha-beta) recursion of Baum and Welch, in Rabiner's
  scaled form ("A tutorial on hidden Markov models and selected
  applications in speech recognition");
* a Gaussian chain, natural parameters ``(h_n, -J_nn / 2, -J_{n,n+1})``
  over ``x_n``, ``x_n x_n^T`` and ``x_n x_{n+1}^T`` of a block-tridiagonal
  precision ``J``: the block ``LDL^T`` factorisation of ``J`` (forward
  elimination, the information form of the Kalman filter) and the
  backward recursion of the Rauch-Tung-Striebel smoother ("Maximum
  likelihood estimates of linear dynamic systems"), which gives each
  state's covariance, the covariance of neighbours and ``log|J|``.

The nodes :class:`skvi.networks.CategoricalMarkovChain` and
:class:`skvi.networks.GaussianMarkovChain` call these in BayesPy's
convention.
"""

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "categorical_chain_moments",
    "categorical_chain_sample",
    "gaussian_chain_moments",
    "gaussian_chain_sample",
]


def _chain_arrays(log_p0, log_P):
    """``log_p0`` of shape ``plates + (K,)`` and ``log_P`` of ``plates + (T, K, K)``, broadcast."""
    log_p0 = np.asarray(log_p0, dtype=np.float64)
    log_P = np.asarray(log_P, dtype=np.float64)
    if log_p0.ndim < 1 or log_P.ndim < 3:
        raise ValueError(
            f"log_p0 of shape {log_p0.shape} and log_P of shape {log_P.shape} are not "
            "a chain's (..., K) and (..., N - 1, K, K)"
        )
    K = log_p0.shape[-1]
    if log_P.shape[-2:] != (K, K) or log_P.shape[-3] < 1:
        raise ValueError(f"log_P of shape {log_P.shape} is not (..., N - 1, {K}, {K}) with N >= 2")
    plates = np.broadcast_shapes(log_p0.shape[:-1], log_P.shape[:-3])
    T = log_P.shape[-3]
    return (
        np.broadcast_to(log_p0, plates + (K,)),
        np.broadcast_to(log_P, plates + (T, K, K)),
    )


def categorical_chain_moments(log_p0, log_P):
    """The marginals, pairwise marginals and log-normaliser of a categorical chain.

    ``q(z) = exp(log_p0[z_0] + sum_t log_P[t, z_t, z_{t+1}] - A)``: the
    forward-backward recursion with the forward messages scaled at each step
    (their log scales sum to ``A``), in the log domain so that
    unnormalised log potentials of any size keep their digits.

    Parameters
    ----------
    log_p0 : array_like of shape (..., K)
        Log potentials of the first state (need not be normalised).
    log_P : array_like of shape (..., N - 1, K, K)
        Log potentials of each transition, ``[t, i, j]`` for
        ``z_t = i, z_{t+1} = j`` (need not be normalised; they may include
        each state's evidence).

    Returns
    -------
    z0 : ndarray of shape (..., K)
        ``q(z_0)``.
    zz : ndarray of shape (..., N - 1, K, K)
        ``q(z_t, z_{t+1})``.
    log_normalizer : ndarray of shape (...)
        ``A = log sum_z exp(...)``.

    Examples
    --------
    Two states, two steps: the normaliser is the sum over the four paths.

    >>> import numpy as np
    >>> from skvi.expfam.markov_chain import categorical_chain_moments
    >>> p0, P = np.array([0.6, 0.4]), np.array([[0.7, 0.3], [0.4, 0.6]])
    >>> z0, zz, A = categorical_chain_moments(np.log(p0), np.log(P)[None])
    >>> print(np.round(zz[0], 2), round(float(A), 12))
    [[0.42 0.18]
     [0.16 0.24]] 0.0
    """
    log_p0, log_P = _chain_arrays(log_p0, log_P)
    T = log_P.shape[-3]
    # Forward: log_alpha[t] is log q(z_t | evidence up to t), normalised;
    # c[t] its log scale.
    c0 = logsumexp(log_p0, axis=-1)
    log_alpha = np.empty(log_P.shape[:-3] + (T + 1, log_p0.shape[-1]))
    log_alpha[..., 0, :] = log_p0 - c0[..., None]
    scales = np.empty(log_P.shape[:-3] + (T,))
    for t in range(T):
        v = log_alpha[..., t, :, None] + log_P[..., t, :, :]
        c = logsumexp(v, axis=(-2, -1))
        scales[..., t] = c
        log_alpha[..., t + 1, :] = logsumexp(v - c[..., None, None], axis=-2)
    log_normalizer = c0 + scales.sum(axis=-1)
    # Backward, with the same scales: alpha[t] * beta[t] is q(z_t).
    log_beta = np.zeros_like(log_alpha)
    for t in range(T - 1, -1, -1):
        v = log_P[..., t, :, :] + log_beta[..., t + 1, None, :]
        log_beta[..., t, :] = logsumexp(v, axis=-1) - scales[..., t, None]
    v = log_alpha[..., :-1, :, None] + log_P + log_beta[..., 1:, None, :] - scales[..., None, None]
    zz = np.exp(v - logsumexp(v, axis=(-2, -1), keepdims=True))
    # Normalised once more, as the exponentials of the rounded logs need.
    zz /= zz.sum(axis=(-2, -1), keepdims=True)
    z0 = zz[..., 0, :, :].sum(axis=-1)
    z0 /= z0.sum(axis=-1, keepdims=True)
    return z0, zz, log_normalizer


def _categorical_draw(p, rng):
    """One category per row of probabilities ``p`` (..., K), from one uniform each.

    The draws BayesPy makes from the same state: the cumulative sums of the
    normalised probabilities searched for one ``rand`` per row.
    """
    p = p / np.sum(p, axis=-1, keepdims=True)
    c = np.cumsum(p, axis=-1)
    r = rng.random_sample(p.shape[:-1])
    return np.minimum((c < r[..., None]).sum(axis=-1), p.shape[-1] - 1)


def categorical_chain_sample(log_p0, log_P, plates, N, random_state=None):
    """A draw of categorical chains of length ``N`` from their normalised log probabilities.

    The first state from ``softmax(log_p0)``, each next one from the row of
    ``softmax(log_P[t])`` its predecessor selects (the transitions are not
    conditioned on later states: this draws the prior chain of BayesPy's
    ``CategoricalMarkovChain.random``, one uniform per state and plate
    element, in BayesPy's order).

    Parameters
    ----------
    log_p0 : array_like of shape (..., K)
        Log probabilities of the first state (normalised here).
    log_P : array_like of shape (..., T, K, K)
        Log probabilities of the transitions, rows normalised here; ``T``
        is ``N - 1`` or 1 (the same transitions at every step).
    plates : tuple of int
        The shape of the draws less the time axis.
    N : int
        The length of the chains.
    random_state : int, RandomState or None, default=None
        The randomness (None: numpy's global state).

    Returns
    -------
    ndarray of int of shape plates + (N,)
        The states.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.markov_chain import categorical_chain_sample
    >>> P = np.log([[[1e-12, 1.0], [1.0, 1e-12]]])     # almost always switch
    >>> categorical_chain_sample(np.log([1.0, 1e-12]), P, (2,), 5, random_state=0)
    array([[0, 1, 0, 1, 0],
           [0, 1, 0, 1, 0]])
    """
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    plates = tuple(plates)
    log_p0 = np.asarray(log_p0, dtype=np.float64)
    log_P = np.asarray(log_P, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        p0 = np.exp(log_p0 - logsumexp(log_p0, axis=-1, keepdims=True))
        P = np.exp(log_P - logsumexp(log_P, axis=-1, keepdims=True))
    P = P * np.ones(plates)[..., None, None, None]
    z = np.zeros(plates + (N,), dtype=np.int64)
    z[..., 0] = _categorical_draw(np.broadcast_to(p0, plates + p0.shape[-1:]), rng)
    index = np.indices(plates, sparse=True) if plates else ()
    for n in range(N - 1):
        t = min(n, P.shape[-3] - 1)
        rows = P[tuple(index) + (t, z[..., n], Ellipsis)]
        z[..., n + 1] = _categorical_draw(rows, rng)
    return z


def _factor(h, J_diag, J_off):
    """The forward elimination of a block-tridiagonal system: ``(S^-1, G, y, log|J|, chol(S^-1))``.

    ``J = L D L^T`` with ``D = diag(S_n)``, ``S_0 = J_00``,
    ``S_{n+1} = J_{n+1,n+1} - J_{n,n+1}^T S_n^-1 J_{n,n+1}``;
    ``G_n = S_n^-1 J_{n,n+1}`` and the eliminated right-hand side
    ``y_{n+1} = h_{n+1} - G_n^T y_n``.
    """
    h = np.asarray(h, dtype=np.float64)
    J_diag = np.asarray(J_diag, dtype=np.float64)
    J_off = np.asarray(J_off, dtype=np.float64)
    N, D = J_diag.shape[-3], J_diag.shape[-1]
    if J_diag.shape[-2:] != (D, D) or h.shape[-2:] != (N, D):
        raise ValueError(
            f"h of shape {h.shape} and J_diag of shape {J_diag.shape} are not "
            "(..., N, D) and (..., N, D, D)"
        )
    if N > 1 and J_off.shape[-3:] != (N - 1, D, D):
        raise ValueError(f"J_off of shape {J_off.shape} is not (..., {N - 1}, {D}, {D})")
    plates = np.broadcast_shapes(h.shape[:-2], J_diag.shape[:-3], J_off.shape[:-3])
    h = np.broadcast_to(h, plates + (N, D))
    J_diag = np.broadcast_to(J_diag, plates + (N, D, D))
    J_off = np.broadcast_to(J_off, plates + (max(N - 1, 0), D, D))
    S_inv = np.empty(plates + (N, D, D))
    root = np.empty(plates + (N, D, D))
    G = np.empty(plates + (max(N - 1, 0), D, D))
    y = np.empty(plates + (N, D))
    logdet = np.zeros(plates)
    eye = np.eye(D)
    S, y_n = J_diag[..., 0, :, :], h[..., 0, :]
    for n in range(N):
        S = 0.5 * (S + np.swapaxes(S, -1, -2))
        try:
            L = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            raise ValueError(
                f"the precision is not positive definite (its pivot block at step {n})"
            ) from None
        logdet += 2.0 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(axis=-1)
        L_inv = np.linalg.solve(L, np.broadcast_to(eye, L.shape))
        root[..., n, :, :] = np.swapaxes(L_inv, -1, -2)
        S_inv[..., n, :, :] = np.swapaxes(L_inv, -1, -2) @ L_inv
        y[..., n, :] = y_n
        if n + 1 < N:
            U = J_off[..., n, :, :]
            G[..., n, :, :] = S_inv[..., n, :, :] @ U
            S = J_diag[..., n + 1, :, :] - np.swapaxes(U, -1, -2) @ G[..., n, :, :]
            y_n = h[..., n + 1, :] - np.einsum("...ij,...i->...j", G[..., n, :, :], y_n)
    return S_inv, G, y, logdet, root


def gaussian_chain_moments(h, J_diag, J_off):
    """The means, covariances, neighbours' covariances and ``log|J|`` of a Gaussian chain.

    ``q(x) ∝ exp(sum_n h_n^T x_n - x^T J x / 2)`` with ``J`` block
    tridiagonal: diagonal blocks ``J_diag[n] = J_nn``, upper blocks
    ``J_off[n] = J_{n,n+1}``.  The block factorisation runs forward and the
    smoother backward: ``mean_n = S_n^-1 y_n - G_n mean_{n+1}``,
    ``Cov_n = S_n^-1 + G_n Cov_{n+1} G_n^T`` and
    ``Cov(x_n, x_{n+1}) = -G_n Cov_{n+1}`` (see :func:`_factor` for ``S``,
    ``G``, ``y``); the joint's covariance is never formed.

    Parameters
    ----------
    h : array_like of shape (..., N, D)
        The linear term.
    J_diag : array_like of shape (..., N, D, D)
        The precision's diagonal blocks.
    J_off : array_like of shape (..., N - 1, D, D)
        The precision's blocks above the diagonal.

    Returns
    -------
    mean : ndarray of shape (..., N, D)
        ``E[x_n]``.
    cov : ndarray of shape (..., N, D, D)
        ``Cov(x_n)``.
    cross : ndarray of shape (..., N - 1, D, D)
        ``Cov(x_n, x_{n+1})``.
    logdet : ndarray of shape (...)
        ``log|J|``.

    Raises
    ------
    ValueError
        The precision is not positive definite.

    Examples
    --------
    A chain of two scalar states against the inverse of its 2 x 2 precision.

    >>> import numpy as np
    >>> from skvi.expfam.markov_chain import gaussian_chain_moments
    >>> J = np.array([[2.0, -1.0], [-1.0, 2.0]])
    >>> mean, cov, cross, logdet = gaussian_chain_moments(
    ...     [[1.0], [0.0]], J.diagonal().reshape(2, 1, 1), [[[-1.0]]]
    ... )
    >>> print(np.round(mean.ravel(), 6), np.round(np.linalg.solve(J, [1.0, 0.0]), 6))
    [0.666667 0.333333] [0.666667 0.333333]
    >>> print(round(float(cross.ravel()[0]), 6), round(float(logdet), 6), round(np.log(3.0), 6))
    0.333333 1.098612 1.098612
    """
    S_inv, G, y, logdet, _ = _factor(h, J_diag, J_off)
    N = y.shape[-2]
    mean = np.empty(y.shape)
    cov = np.empty(S_inv.shape)
    cross = np.empty(G.shape)
    mean[..., N - 1, :] = np.einsum("...ij,...j->...i", S_inv[..., N - 1, :, :], y[..., N - 1, :])
    cov[..., N - 1, :, :] = S_inv[..., N - 1, :, :]
    for n in range(N - 2, -1, -1):
        Gn = G[..., n, :, :]
        mean[..., n, :] = np.einsum(
            "...ij,...j->...i", S_inv[..., n, :, :], y[..., n, :]
        ) - np.einsum("...ij,...j->...i", Gn, mean[..., n + 1, :])
        GC = Gn @ cov[..., n + 1, :, :]
        cross[..., n, :, :] = -GC
        C = S_inv[..., n, :, :] + GC @ np.swapaxes(Gn, -1, -2)
        cov[..., n, :, :] = 0.5 * (C + np.swapaxes(C, -1, -2))
    return mean, cov, cross, logdet


def gaussian_chain_sample(h, J_diag, J_off, random_state=None):
    """A draw from the Gaussian chain of :func:`gaussian_chain_moments`, backward in time.

    ``x_{N-1} ~ N(S_{N-1}^-1 y_{N-1}, S_{N-1}^-1)`` and
    ``x_n | x_{n+1} ~ N(S_n^-1 y_n - G_n x_{n+1}, S_n^-1)``: the joint's
    exact draw from its block factorisation, from one standard normal per
    element (drawn at once, of shape ``plates + (N, D)``).

    Parameters
    ----------
    h : array_like of shape (..., N, D)
        The linear term.
    J_diag : array_like of shape (..., N, D, D)
        The precision's diagonal blocks.
    J_off : array_like of shape (..., N - 1, D, D)
        The precision's blocks above the diagonal.
    random_state : int, RandomState or None, default=None
        The randomness (None: numpy's global state).

    Returns
    -------
    ndarray of shape (..., N, D)
        The draw.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.expfam.markov_chain import gaussian_chain_sample
    >>> J = np.array([[2.0, -1.0], [-1.0, 2.0]])
    >>> x = gaussian_chain_sample(
    ...     np.zeros((20000, 2, 1)), J.diagonal().reshape(2, 1, 1), [[[-1.0]]], random_state=0
    ... )
    >>> print(np.round(np.cov(x[..., 0].T), 1), np.round(np.linalg.inv(J), 1))
    [[0.7 0.3]
     [0.3 0.7]] [[0.7 0.3]
     [0.3 0.7]]
    """
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    S_inv, G, y, _, root = _factor(h, J_diag, J_off)
    eps = rng.standard_normal(y.shape)
    N = y.shape[-2]
    x = np.empty(y.shape)
    nxt = None
    for n in range(N - 1, -1, -1):
        m = np.einsum("...ij,...j->...i", S_inv[..., n, :, :], y[..., n, :])
        if nxt is not None:
            m = m - np.einsum("...ij,...j->...i", G[..., n, :, :], nxt)
        # root[n] = L_n^-T, whose outer product is S_n^-1.
        nxt = m + np.einsum("...ij,...j->...i", root[..., n, :, :], eps[..., n, :])
        x[..., n, :] = nxt
    return x
