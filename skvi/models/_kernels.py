"""Gradients of scikit-learn kernels' cross-covariances, contracted on the fly.

scikit-learn's kernels give the gradient of ``K(X, X)`` in their log
hyperparameters ``theta``, but not of a cross-covariance ``K(X, Z)``, and
the gradient they return is an ``(n, n, len(theta))`` array (for an ARD
RBF, after an ``(n, n, d)`` one).  A sparse GP needs only contractions
``sum_ij W_ij dK(X, Z)_ij / d theta``: for the kernels built from
``ConstantKernel``, ``RBF`` and ``WhiteKernel`` by sums and products,
:func:`cross_covariance` gives them at the cost of a few ``(n, m)``
products.  Other kernels return ``None`` and the caller falls back on
``K([X; Z])``'s gradient.
"""

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Product, Sum, WhiteKernel


def cross_covariance(kernel, X, Z):
    """``K(X, Z)`` and a function ``W -> sum_ij W_ij dK_ij / d theta``, or None.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d)

    Returns
    -------
    (K, backward) or None
        ``K`` of shape (n, m); ``backward(W)`` for ``W`` of shape (n, m)
        returns an array of shape ``kernel.theta.shape`` (the gradient in
        the log hyperparameters, in ``theta``'s order).  None when the
        kernel is not built from the kernels above.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skvi.models._kernels import cross_covariance
    >>> k = ConstantKernel(2.0) * RBF(1.5)
    >>> X, Z = np.array([[0.0], [1.0]]), np.array([[0.5]])
    >>> K, backward = cross_covariance(k, X, Z)
    >>> bool(np.allclose(K, k(X, Z)))
    True
    >>> backward(np.ones((2, 1))).shape
    (2,)
    """
    if isinstance(kernel, (Sum, Product)):
        left = cross_covariance(kernel.k1, X, Z)
        right = cross_covariance(kernel.k2, X, Z)
        if left is None or right is None:
            return None
        (K1, back1), (K2, back2) = left, right
        if isinstance(kernel, Sum):
            return K1 + K2, lambda W: np.concatenate([back1(W), back2(W)])
        return K1 * K2, lambda W: np.concatenate([back1(W * K2), back2(W * K1)])
    if isinstance(kernel, ConstantKernel):
        value = kernel.constant_value
        K = np.full((X.shape[0], Z.shape[0]), value)
        if kernel.hyperparameter_constant_value.fixed:
            return K, lambda W: np.empty(0)
        return K, lambda W: np.array([value * np.sum(W)])
    if isinstance(kernel, WhiteKernel):  # white noise: no covariance between inputs
        K = np.zeros((X.shape[0], Z.shape[0]))
        fixed = kernel.hyperparameter_noise_level.fixed
        return K, lambda W: np.empty(0) if fixed else np.zeros(1)
    if type(kernel) is RBF:
        scale = np.broadcast_to(np.asarray(kernel.length_scale, dtype=np.float64), (X.shape[1],))
        Xs, Zs = X / scale, Z / scale
        K = np.exp(-0.5 * cdist(Xs, Zs, "sqeuclidean"))
        if kernel.hyperparameter_length_scale.fixed:
            return K, lambda W: np.empty(0)

        def backward(W):
            # d K / d log l_k = K (x_k - z_k)^2 / l_k^2, summed against W
            # without forming the (n, m, d) array.
            WK = W * K
            per_dim = (
                np.sum(WK, axis=1) @ Xs**2
                + np.sum(WK, axis=0) @ Zs**2
                - 2.0 * np.sum(Xs * (WK @ Zs), axis=0)
            )
            return per_dim if kernel.anisotropic else np.array([np.sum(per_dim)])

        return K, backward
    return None


def diagonal_gradient(kernel, X):
    """``d k(x, x) / d theta``, the same for every ``x``; None unless the kernel is stationary.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skvi.models._kernels import diagonal_gradient
    >>> diagonal_gradient(ConstantKernel(2.0) * RBF(1.5), np.zeros((3, 1)))
    array([2., 0.])
    """
    if not kernel.is_stationary():
        return None
    return kernel(X[:1], eval_gradient=True)[1][0, 0]
