"""Monte-Carlo statistics of non-conjugate matrix factorization (seed 002, 3.6).

For a user node ``w = (u, b)`` and one of its ratings of item ``n`` the
linear predictor is ``f = mu + w . x + c`` with ``x = (v_n, 1)``.  Given a
draw of the item node ``(v_n, c_n)`` from its Gaussian posterior, ``f`` is
Gaussian under ``q(w) q(mu)``::

    f | v ~ N(m_w . x + E[mu] + c,  x^T S_w x + Var[mu])

so the rating is a GLM example with descriptor ``x`` (eqs. 48-50).  The
fixed-point (natural-gradient) target of the node is::

    Lambda_hat = Lambda_0 - sum_j E_v[ E_f[l''] x x^T ]
    eta1_hat   = Lambda_0 m_0 + sum_j E_v[ (E_f[l'] - E_f[l''] m_w . x) x ]

with ``E_v`` estimated from ``n_partner_samples`` draws of the partner per
rating (eq. 52) and ``E_f`` by the likelihood's Monte Carlo or
Gauss-Hermite rule.  For a Gaussian likelihood ``l'' = -tau`` and the
target is the conjugate closed form with ``E[x x^T]`` replaced by its
sample average.  Items are the mirror image.  Everything is vectorised
over chunks of ratings; the only loop is over chunks.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["partner_factors", "side_statistics"]

#: Rating-draw pairs per chunk: bounds the (chunk, samples, d)-sized temporaries.
_CHUNK = 40960


def partner_factors(mean, second, diagonal):
    """Mean and a square root of the covariance of each partner node.

    Returns ``(mean, root)`` with ``root`` of shape (n, d, d) (lower
    Cholesky factor) or (n, d) (standard deviations) when ``diagonal``.
    """
    cov = second - mean[:, :, None] * mean[:, None, :]
    if diagonal:
        return mean, np.sqrt(np.maximum(np.diagonal(cov, axis1=1, axis2=2), 0.0))
    cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
    jitter = 0.0
    scale = np.maximum(np.max(np.diagonal(cov, axis1=1, axis2=2), axis=1), 1e-300)
    eye = np.eye(cov.shape[-1])
    for _ in range(8):
        try:
            return mean, np.linalg.cholesky(cov + (jitter * scale)[:, None, None] * eye)
        except np.linalg.LinAlgError:
            jitter = 1e-12 if jitter == 0.0 else 100.0 * jitter
    raise np.linalg.LinAlgError("a partner covariance is not positive semi-definite")


def side_statistics(
    likelihood,
    y,
    row,
    col,
    node_mean,
    node_cov,
    partner_mean,
    partner_root,
    mu,
    var_mu,
    n_partner_samples,
    method,
    n_f,
    rng,
    n_nodes,
    want_node_stats=True,
):
    """Per-node fixed-point statistics and per-rating expectations.

    Parameters
    ----------
    likelihood : skvi.likelihoods.Likelihood
    y : ndarray of shape (n_ratings,)
        Encoded targets.
    row, col : ndarray of shape (n_ratings,)
        Index of each rating's node into ``node_*`` and of its partner into
        ``partner_*``.
    node_mean : ndarray of shape (n_nodes, d)
    node_cov : ndarray of shape (n_nodes, d, d) or (n_nodes, d)
        Covariances of the nodes (diagonal: variances).
    partner_mean, partner_root : ndarray
        From :func:`partner_factors`.
    mu, var_mu : float
        Mean and variance of the global mean.
    n_partner_samples : int
        Draws of the partner node per rating (``S1``).
    method : {'mc', 'quadrature'}
        How ``E_f`` is computed given a partner draw.
    n_f : int
        Draws of ``f`` (``'mc'``) or Gauss-Hermite nodes.
    rng : numpy.random.Generator or RandomState
    n_nodes : int
    want_node_stats : bool, default=True
        Also aggregate the node statistics (the costly part).

    Returns
    -------
    h : ndarray of shape (n_nodes, d) or None
        ``sum_j E_v[(E[l'] - E[l''] m_w . x) x]``.
    P : ndarray of shape (n_nodes, d, d) or None
        ``-sum_j E_v[E[l''] x x^T]``.
    e_log, e_d1, e_d2 : ndarray of shape (n_ratings,)
        ``E_q[log p]``, ``E_q[l']`` and ``E_q[l'']`` of every rating, the
        expectation over the partner by the same draws.
    """
    n_r = y.shape[0]
    d = node_mean.shape[1]
    k = d - 1
    s1 = int(n_partner_samples)
    diagonal = node_cov.ndim == 2
    e_log = np.empty(n_r)
    e_d1 = np.empty(n_r)
    e_d2 = np.empty(n_r)
    h = np.zeros((n_nodes, d)) if want_node_stats else None
    P = np.zeros((n_nodes, d * d)) if want_node_stats else None
    chunk = max(1, _CHUNK // s1)
    for start in range(0, n_r, chunk):
        sl = slice(start, min(start + chunk, n_r))
        r, c = row[sl], col[sl]
        n_c = r.shape[0]
        eps = rng.standard_normal((n_c, s1, d))
        if partner_root.ndim == 2:
            draws = partner_mean[c][:, None, :] + partner_root[c][:, None, :] * eps
        else:
            draws = partner_mean[c][:, None, :] + np.matmul(eps, np.swapaxes(partner_root[c], 1, 2))
        offset = draws[..., k].copy()
        x = draws
        x[..., k] = 1.0
        m_w = node_mean[r]
        if diagonal:
            sx = node_cov[r][:, None, :] * x
        else:
            sx = np.matmul(x, node_cov[r])  # node covariances are symmetric
        var_f = np.sum(x * sx, axis=2) + var_mu
        m_f = np.matmul(x, m_w[:, :, None])[..., 0]
        yy = np.broadcast_to(y[sl][:, None], (n_c, s1))
        lg, d1, d2 = likelihood.expectations(
            yy, m_f + mu + offset, var_f, method=method, n_samples=n_f, random_state=rng
        )
        e_log[sl] = lg.mean(axis=1)
        e_d1[sl] = d1.mean(axis=1)
        e_d2[sl] = d2.mean(axis=1)
        if not want_node_stats:
            continue
        w_h = (d1 - d2 * m_f) / s1
        w_p = -d2 / s1
        h_rows = np.matmul(w_h[:, None, :], x)[:, 0, :]
        p_rows = np.matmul(np.swapaxes(x * w_p[..., None], 1, 2), x).reshape(n_c, d * d)
        ind = sp.csr_matrix(
            (np.ones(n_c), (r, np.arange(n_c))), shape=(n_nodes, n_c)
        )
        h += ind @ h_rows
        P += ind @ p_rows
    if want_node_stats:
        P = P.reshape(n_nodes, d, d)
        P = 0.5 * (P + np.swapaxes(P, 1, 2))
    return h, P, e_log, e_d1, e_d2
