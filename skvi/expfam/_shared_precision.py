"""What the Normal-Wishart and Normal-Gamma families share: J Gaussian means under one precision."""

import numpy as np

from .base import _LOG_2PI


class _SharedPrecisionMeans:
    """Mixin of a family of ``J`` means ``mu_j | precision ~ N(m_j, (beta_j precision)^-1)``.

    The class using it stores ``loc`` (batch + (J, d)) and ``beta``
    (batch + (J,)) and defines :meth:`precision`.
    """

    @property
    def batch_shape(self):
        """Shape of the batch of factors."""
        return self.beta.shape[:-1]

    @property
    def dtype(self):
        """Floating dtype of the parameters."""
        return self.loc.dtype

    @property
    def dim(self):
        """Dimension ``d`` of each mean."""
        return self.loc.shape[-1]

    @property
    def n_means(self):
        """Number ``J`` of means sharing each precision."""
        return self.loc.shape[-2]

    def _cast(self, a):
        return np.asarray(a).astype(self.dtype, copy=False)

    def _gauss_log_normalizer(self):
        """``sum_j (d log(2 pi) / 2 - d log(beta_j) / 2)``, batch shape."""
        return np.sum(0.5 * self.dim * (_LOG_2PI - np.log(self.beta)), axis=-1)
