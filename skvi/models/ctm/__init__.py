"""The correlated topic model: the estimator and its per-document kernels.

``estimator`` holds the estimator, its public API and the engine's hooks of
input and structure; ``documents`` the documents' rows and Gaussians,
``steps`` their steps and fold-in, ``model_step`` the topics, ``mu`` and
``Sigma``, ``bounds`` the ELBO, ``kernels`` the numerical kernels and
``evidence`` the importance-sampled test likelihood.
"""

from .estimator import SVICorrelatedTopicModel

__all__ = ["SVICorrelatedTopicModel"]
