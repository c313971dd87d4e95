"""Held-out evaluation that means the same for every model and library.

:mod:`skvi.metrics.topics`
    Topic models: document-completion perplexity and topic coherence.
:mod:`skvi.metrics.evidence`
    Topic models: the test likelihood ``log p(w_d)`` by importance sampling,
    from a model or from LDA's or the correlated topic model's parameters.
:mod:`skvi.metrics.regression`
    Regression and ratings: RMSE, mean negative log predictive density of
    Gaussian predictions, and the coverage of central predictive intervals.
"""

from .evidence import ctm_log_evidence, importance_sampled_nll, lda_log_evidence
from .regression import gaussian_interval_coverage, gaussian_nlpd, rmse
from .topics import (
    document_completion_perplexity,
    split_document_tokens,
    topic_coherence,
)

__all__ = [
    "ctm_log_evidence",
    "document_completion_perplexity",
    "gaussian_interval_coverage",
    "gaussian_nlpd",
    "importance_sampled_nll",
    "lda_log_evidence",
    "rmse",
    "split_document_tokens",
    "topic_coherence",
]
