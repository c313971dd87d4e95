"""The Gaussian mixture's priors: the parameters' values checked, the defaults from the data."""

import numpy as np
from sklearn.utils import check_array

__all__ = ["resolve_priors"]


def resolve_priors(
    moments,
    covariance,
    *,
    n_components,
    weight_concentration_prior=None,
    mean_precision_prior=None,
    mean_prior=None,
    degrees_of_freedom_prior=None,
    covariance_prior=None,
    reg_covar=1e-6,
):
    """The priors' values; those left None come from the data's moments, as in scikit-learn.

    With row weights, the weighted mean and the covariance of the rows
    repeated by weight (``ddof=1`` on the weight sum).

    Parameters
    ----------
    moments : skvi.engine.DataMoments
        The weighted moments of the rows.
    covariance : skvi.models.mixture.covariance.CovarianceType
        The covariance type's strategy: the form of ``covariance_prior``.
    n_components : int
        Number of components.
    weight_concentration_prior, mean_precision_prior, mean_prior, \
degrees_of_freedom_prior, covariance_prior, reg_covar
        The estimator's parameters of these names.

    Returns
    -------
    dict
        ``weight_concentration_prior_``, ``mean_precision_prior_``,
        ``mean_prior_``, ``degrees_of_freedom_prior_`` and
        ``covariance_prior_``.

    Raises
    ------
    ValueError
        When a given prior does not fit the data's shape, or the default
        covariance is singular and ``reg_covar`` is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.engine import DataMoments
    >>> from skvi.models.mixture.gamma import DiagonalCovariance
    >>> from skvi.models.mixture.priors import resolve_priors
    >>> X = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 4.0]])
    >>> priors = resolve_priors(DataMoments.of(X), DiagonalCovariance(), n_components=2)
    >>> priors["mean_prior_"], priors["covariance_prior_"], priors["degrees_of_freedom_prior_"]
    (array([2., 2.]), array([4., 3.]), 2.0)
    """
    d = moments.mean.shape[0]
    priors = {
        "weight_concentration_prior_": (
            1.0 / n_components
            if weight_concentration_prior is None
            else float(weight_concentration_prior)
        ),
        "mean_precision_prior_": (
            1.0 if mean_precision_prior is None else float(mean_precision_prior)
        ),
    }
    if mean_prior is None:
        priors["mean_prior_"] = moments.mean.copy()
    else:
        mean = check_array(mean_prior, ensure_2d=False, dtype=np.float64)
        if mean.shape != (d,):
            raise ValueError(
                f"The parameter 'means' should have the shape of ({d},), but got {mean.shape}"
            )
        priors["mean_prior_"] = mean
    if degrees_of_freedom_prior is None:
        priors["degrees_of_freedom_prior_"] = float(d)
    elif degrees_of_freedom_prior > d - 1.0:
        priors["degrees_of_freedom_prior_"] = float(degrees_of_freedom_prior)
    else:
        raise ValueError(
            f"The parameter 'degrees_of_freedom_prior' should be greater than "
            f"{d - 1}, but got {degrees_of_freedom_prior:.3f}."
        )
    if covariance_prior is not None:
        priors["covariance_prior_"] = covariance.check_prior(covariance_prior, d)
        return priors
    if not moments.total > 1.0:
        raise ValueError(
            f"sample_weight sums to {moments.total:g}: the default covariance_prior (the "
            "covariance of the samples, ddof=1) needs a sum above 1, as weights "
            "count samples; scale the weights or pass covariance_prior."
        )
    cov, singular = covariance.empirical_covariance(moments)
    if singular:
        # Fewer samples than features, or a constant feature: the Wishart's
        # W0 = cov^-1 does not exist.  scikit-learn keeps the singular prior
        # (its posteriors are definite by the reg_covar it adds to the
        # covariances it estimates); the exact ELBO needs a proper prior, so
        # reg_covar goes on the prior's diagonal too.
        if not reg_covar > 0:
            raise ValueError(
                "The default covariance_prior (the empirical covariance of X) is "
                "singular: X has fewer samples than features or a constant feature. "
                "Pass covariance_prior, or a positive reg_covar (added to its "
                "diagonal)."
            )
        cov = covariance.add_to_diagonal(cov, reg_covar)
    priors["covariance_prior_"] = cov
    return priors
