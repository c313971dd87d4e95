"""What a covariance type of the Gaussian mixture supplies: the strategies' interface.

:class:`~skvi.SVIBayesianGaussianMixture` chooses one strategy from its
``covariance_type`` (:mod:`~skvi.models.mixture.wishart` holds 'full' and
'tied', :mod:`~skvi.models.mixture.gamma` 'diag' and 'spherical') and asks it
for everything the form of the precisions changes; the estimator itself holds
no branch on the covariance type.
"""

__all__ = ["CovarianceType"]


class CovarianceType:
    """The part of the Gaussian mixture that the form of its precisions decides.

    A strategy is stateless: the estimator passes it what it needs (centred
    rows, responsibilities, the priors' values, the posterior's moments), so
    one instance serves every estimator and nothing of it is pickled.  Rows
    ``X`` given to a strategy are centred at the estimator's origin of the
    components' natural parameters (the first fit's ``mean_prior_``), as the
    posterior means are.

    The moments dict (:meth:`moments`) holds ``means`` (K, d), ``beta`` (K,),
    ``nu`` (the degrees of freedom, per component or shared), ``precision``
    (``E[Lambda_k]`` in the type's form), ``logdet`` (``E[log|Lambda_k|]``,
    (K,)), ``trace`` (``tr E[Lambda_k]``, (K,)), ``d``, and for the Gamma
    types the Gamma's ``a`` and ``b``.

    Attributes
    ----------
    name : str
        The ``covariance_type`` it implements.
    family : type
        The components' exponential family (:class:`skvi.expfam.NormalWishart`
        or :class:`skvi.expfam.NormalGamma`).
    full_moments : bool
        Whether the data's summary (the default priors) needs the full
        scatter matrix, or its diagonal only.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.mixture.gamma import SphericalCovariance
    >>> spherical = SphericalCovariance()
    >>> spherical.family.__name__, spherical.full_moments
    ('NormalGamma', False)
    >>> prior = spherical.prior(np.zeros(2), 1.0, 2.0, 0.5, 3)
    >>> prior.shape.tolist()  # Gamma(d nu / 2, rate=d cov / 2) per component
    [2.0, 2.0, 2.0]
    """

    name = None
    family = None
    full_moments = False

    # ------------------------------------------------------------ priors
    def empirical_covariance(self, moments):
        """The data's covariance in the type's form, and whether it is singular.

        Parameters
        ----------
        moments : skvi.engine.DataMoments
            The weighted moments of the rows.

        Returns
        -------
        covariance : ndarray or float
            The default ``covariance_prior_`` (``ddof=1``).
        singular : bool
            Whether it has no inverse (a Wishart's ``W0`` or a Gamma's rate).
        """
        raise NotImplementedError

    def add_to_diagonal(self, covariance, value):
        """``covariance`` with ``value`` added to its diagonal.

        Parameters
        ----------
        covariance : ndarray or float
            A covariance in the type's form.
        value : float
            What to add.

        Returns
        -------
        ndarray or float
            The new covariance.
        """
        return covariance + value

    def check_prior(self, covariance_prior, d):
        """The user's ``covariance_prior`` checked and converted.

        Parameters
        ----------
        covariance_prior : float or array-like
            The parameter's value.
        d : int
            Number of features.

        Returns
        -------
        ndarray or float
            The prior's covariance ``W0^-1`` in the type's form.

        Raises
        ------
        ValueError
            When its shape or value does not fit the type.
        """
        raise NotImplementedError

    def prior(self, m0, beta0, nu0, covariance0, K):
        """The components' prior, one factor per component (or one for 'tied').

        Parameters
        ----------
        m0 : ndarray of shape (d,)
            Prior mean (centred).
        beta0, nu0 : float
            Prior mean precision and degrees of freedom.
        covariance0 : ndarray or float
            ``covariance_prior_``.
        K : int
            Number of components.

        Returns
        -------
        skvi.expfam.NormalWishart or skvi.expfam.NormalGamma
            The prior.
        """
        raise NotImplementedError

    def from_sklearn(self, means, beta, nu, covariances):
        """The posterior of a scikit-learn mixture's components as skvi's factor.

        Parameters
        ----------
        means : ndarray of shape (K, d)
            Posterior means (centred).
        beta, nu : ndarray
            ``mean_precision_`` and ``degrees_of_freedom_``.
        covariances : ndarray or float
            ``covariances_`` (``E[Lambda]^-1``).

        Returns
        -------
        skvi.expfam.NormalWishart or skvi.expfam.NormalGamma
            The posterior.
        """
        raise NotImplementedError

    # ------------------------------------------------------------ statistics
    def statistics(self, X, resp, nk, sx, reg_covar):
        """Expected sufficient statistics of the components, natural coordinates.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Centred rows.
        resp : ndarray of shape (n, K)
            Responsibilities (times the rows' weights).
        nk : ndarray of shape (K,)
            ``resp.sum(axis=0)``.
        sx : ndarray of shape (K, d)
            ``resp.T @ X``.
        reg_covar : float
            Added to the diagonal of every row's outer product.

        Returns
        -------
        tuple of ndarray
            The statistics, in the order of the family's natural parameters.
        """
        raise NotImplementedError

    def moments(self, q, K):
        """The posterior's moments in scikit-learn's terms (see the class).

        Parameters
        ----------
        q : skvi.expfam.NormalWishart or skvi.expfam.NormalGamma
            The components' posterior.
        K : int
            Number of components.

        Returns
        -------
        dict
            The moments.
        """
        raise NotImplementedError

    # ------------------------------------------------------------ densities
    def quadratic(self, X, means, precision):
        """``(x - m_k)^T P_k (x - m_k)`` for every row and component, shape (n, K).

        One matrix product for all components; the rows are centred as the
        means are, so that the expanded squares do not cancel for data far
        from the origin.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Centred rows.
        means : ndarray of shape (K, d)
            Centred means.
        precision : ndarray
            ``P_k`` in the type's form.

        Returns
        -------
        ndarray of shape (n, K)
            The quadratic forms.
        """
        raise NotImplementedError

    def log_det_precision(self, m):
        """``log|E[Lambda_k]|`` for every component, shape (K,).

        Parameters
        ----------
        m : dict
            The moments.

        Returns
        -------
        ndarray of shape (K,)
            The log-determinants.
        """
        raise NotImplementedError

    def predictive_log_density(self, X, m):
        """Log posterior predictive density of every row under every component.

        The Student-t densities of Bishop's "Pattern recognition and machine
        learning", eq. 10.81, and their Gamma analogues.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Centred rows.
        m : dict
            The moments.

        Returns
        -------
        ndarray of shape (n, K)
            The log densities.
        """
        raise NotImplementedError

    # ------------------------------------------------------------ attributes
    def point_estimates(self, m):
        """The fitted attributes that depend on the type, in scikit-learn's convention.

        Parameters
        ----------
        m : dict
            The moments.

        Returns
        -------
        dict
            ``degrees_of_freedom_``, ``covariances_`` (``E[Lambda]^-1``),
            ``precisions_`` (``E[Lambda]``) and ``precisions_cholesky_``.
        """
        raise NotImplementedError

    def draw(self, random_state, means, covariances, counts):
        """Samples of the plug-in mixture, grouped by component.

        Parameters
        ----------
        random_state : numpy.random.RandomState
            The generator.
        means : ndarray of shape (K, d)
            ``means_``.
        covariances : ndarray
            ``covariances_``.
        counts : ndarray of shape (K,)
            Samples to draw from each component.

        Returns
        -------
        list of ndarray
            The samples of each component.
        """
        raise NotImplementedError
