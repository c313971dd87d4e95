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
        fixed = kernel.hyperparameter_length_scale.fixed
        return _rbf_cross(X / scale, Z / scale, fixed, kernel.anisotropic)
    return None


def _rbf_cross(Xs, Zs, fixed, anisotropic):
    """An RBF kernel's values between scaled inputs, and its backward map in ``log l``."""
    K = np.exp(-0.5 * cdist(Xs, Zs, "sqeuclidean"))
    if fixed:
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
        return per_dim if anisotropic else np.array([np.sum(per_dim)])

    return K, backward


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


def kernel_evaluator(kernel):
    """The kernel as a function of ``theta``, with no kernel objects built; None if unsupported.

    An optimiser evaluates the kernel at many ``theta``: ``clone_with_theta``
    and reading ``theta`` walk scikit-learn's hyperparameter lists each time,
    which costs more than the covariances of a few hundred rows.  For the
    kernels built from ``ConstantKernel``, ``RBF`` and ``WhiteKernel`` by
    sums and products, the returned object ``f`` gives ``f(theta, X, Z)``,
    the cross-covariance and its ``backward`` as :func:`cross_covariance`
    does (``Z=None``: ``K(X, X)``, white noise on the diagonal, as
    ``kernel(X)``), and ``f.diag(theta)``, the prior variance ``k(x, x)``
    (the same for every ``x``) and its gradient in ``theta``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skvi.models._kernels import kernel_evaluator
    >>> k = ConstantKernel(2.0) * RBF(1.5)
    >>> f = kernel_evaluator(k)
    >>> X = np.array([[0.0], [1.0]])
    >>> K, backward = f(np.log([3.0, 0.5]), X)
    >>> bool(np.allclose(K, k.clone_with_theta(np.log([3.0, 0.5]))(X)))
    True
    >>> value, grad = f.diag(np.log([3.0, 0.5]))
    >>> round(value, 12), grad.round(12)
    (3.0, array([3., 0.]))
    """
    node = _compile(kernel)
    return None if node is None else _Evaluator(kernel, node)


class _Evaluator:
    def __init__(self, kernel, node):
        self._kernel = kernel
        self._node = node

    def with_kernel(self, kernel):
        """The evaluator of ``kernel``, a ``clone_with_theta`` of this one's (the same functions)."""
        return _Evaluator(kernel, self._node)

    # Pickled (with a fitted estimator) as its kernel: closures do not pickle.
    def __getstate__(self):
        return {"_kernel": self._kernel}

    def __setstate__(self, state):
        self.__init__(state["_kernel"], _compile(state["_kernel"]))

    def __call__(self, theta, X, Z=None):
        return self._node[1](np.asarray(theta, dtype=np.float64), X, Z)

    def diag(self, theta):
        value, grad = self._node[2](np.asarray(theta, dtype=np.float64))
        return float(value), grad


def _compile(kernel):
    """``(n_theta, cross(theta, X, Z), diag(theta))`` of a supported kernel, or None."""
    if isinstance(kernel, (Sum, Product)):
        left, right = _compile(kernel.k1), _compile(kernel.k2)
        if left is None or right is None:
            return None
        n1, cross1, diag1 = left
        n2, cross2, diag2 = right
        product = isinstance(kernel, Product)

        def cross(theta, X, Z):
            (K1, back1), (K2, back2) = cross1(theta[:n1], X, Z), cross2(theta[n1:], X, Z)
            if not product:
                return K1 + K2, lambda W: np.concatenate([back1(W), back2(W)])
            return K1 * K2, lambda W: np.concatenate([back1(W * K2), back2(W * K1)])

        def diag(theta):
            (v1, g1), (v2, g2) = diag1(theta[:n1]), diag2(theta[n1:])
            if not product:
                return v1 + v2, np.concatenate([g1, g2])
            return v1 * v2, np.concatenate([g1 * v2, g2 * v1])

        return n1 + n2, cross, diag
    if isinstance(kernel, (ConstantKernel, WhiteKernel)):
        white = isinstance(kernel, WhiteKernel)
        hyper = kernel.hyperparameter_noise_level if white else kernel.hyperparameter_constant_value
        fixed = hyper.fixed
        given = kernel.noise_level if white else kernel.constant_value
        n = 0 if fixed else 1

        def value_at(theta):
            return given if fixed else np.exp(theta[0])

        def cross(theta, X, Z):
            value = value_at(theta)
            rows = X.shape[0]
            if white:  # no covariance between inputs; kernel(X) has it on the diagonal
                if Z is not None:
                    return np.zeros((rows, Z.shape[0])), lambda W: np.zeros(n)
                return value * np.eye(rows), lambda W: np.full(n, value * np.trace(W))
            K = np.full((rows, rows if Z is None else Z.shape[0]), value)
            return K, lambda W: np.full(n, value * np.sum(W))

        def diag(theta):
            value = value_at(theta)
            return value, np.full(n, value)

        return n, cross, diag
    if type(kernel) is RBF:
        fixed = kernel.hyperparameter_length_scale.fixed
        given = np.asarray(kernel.length_scale, dtype=np.float64)
        anisotropic = kernel.anisotropic
        n = 0 if fixed else given.size

        def cross(theta, X, Z):
            scale = np.broadcast_to(given if fixed else np.exp(theta), (X.shape[1],))
            Xs = X / scale
            return _rbf_cross(Xs, Xs if Z is None else Z / scale, fixed, anisotropic)

        def diag(theta):
            return 1.0, np.zeros(n)

        return n, cross, diag
    return None
