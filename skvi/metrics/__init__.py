"""Held-out evaluation that means the same for every model and library.

:mod:`skvi.metrics.topics`
    Topic models: document-completion perplexity, the importance-sampled
    test likelihood and topic coherence.
:mod:`skvi.metrics.regression`
    Regression and ratings: RMSE, mean negative log predictive density of
    Gaussian predictions, and the coverage of central predictive intervals.
"""

from .regression import gaussian_interval_coverage, gaussian_nlpd, rmse
from .topics import (
    document_completion_perplexity,
    importance_sampled_nll,
    split_document_tokens,
    topic_coherence,
)

__all__ = [
    "document_completion_perplexity",
    "gaussian_interval_coverage",
    "gaussian_nlpd",
    "importance_sampled_nll",
    "rmse",
    "split_document_tokens",
    "topic_coherence",
]
