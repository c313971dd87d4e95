"""The test likelihood of topic models by importance sampling.

The measure of "Monte Carlo structured SVI for two-level non-conjugate
models" (Sheth and Khardon; its eq. 105): a held-out document's evidence
``p(w_d) = E_{p(theta)}[p(w_d | theta)]``, with the document's topic
proportions integrated out, is estimated by importance sampling::

    log p(w_d) ~ log mean_s p(w_d | theta_s) p(theta_s) / r(theta_s),  theta_s ~ r,

where the proposal ``r`` is the document's posterior fitted with the model
held fixed, widened so that its tails cover the integrand's.  The estimate
is unbiased for ``p(w_d)``, so its logarithm is a lower bound in
expectation, tightening as ``n_samples`` grows.

Two functions compute it from a model's parameters alone, so that any
library's fitted topics can be scored by the same code (they live beside
their models, in :mod:`skvi.models.lda.evidence` and
:mod:`skvi.models.ctm.evidence`, whose estimators use them):

* :func:`lda_log_evidence`: a Dirichlet prior ``alpha`` and topics
  ``beta``; the proposal is the document's variational Dirichlet (the LDA
  E-step with the topics fixed), its concentration divided by ``1 +
  inflation``.
* :func:`ctm_log_evidence`: Blei and Lafferty's logistic-normal prior
  ``N(mu, Sigma)`` on the logits ``eta`` (``theta = softmax([eta, 0])``) and
  topics ``beta``; the proposal is a Gaussian posterior of ``eta`` (by
  default the Laplace approximation at the posterior mode), its covariance
  plus ``inflation`` on the diagonal.

:func:`importance_sampled_nll` averages ``-log p(w_d) / N_d`` over the
documents, for any model with a ``log_evidence`` method (skvi's LDA and
correlated topic model).
"""

import numpy as np

from ..models.ctm.evidence import ctm_log_evidence
from ..models.lda.evidence import lda_log_evidence
from ..validation import check_counts

__all__ = ["ctm_log_evidence", "importance_sampled_nll", "lda_log_evidence"]


def importance_sampled_nll(model, X, *, n_samples=1000, inflation=1.0, random_state=None):
    """Per-word test negative log-likelihood by importance sampling.

    The measure of "Monte Carlo structured SVI for two-level non-conjugate
    models" (its eq. 105): each document's ``log p(w_d)`` is estimated by
    the model's ``log_evidence`` (importance sampling from its posterior of
    the document's topics, widened), divided by the document's number of
    words, and averaged over the documents with at least one word.

    Parameters
    ----------
    model : object
        A fitted topic model with the method ``log_evidence(X, n_samples=,
        inflation=, random_state=)`` (:class:`skvi.SVICorrelatedTopicModel`,
        :class:`skvi.SVILatentDirichletAllocation`).
    X : {array-like, sparse matrix} of shape (n_docs, n_words)
        Word counts of held-out documents.
    n_samples : int, default=1000
        Importance samples per document.
    inflation : float, default=1.0
        How much the proposal widens each document's posterior (see the
        model's ``log_evidence``).
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    nll : float
        ``mean_d -log p(w_d) / N_d`` (lower is better).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVICorrelatedTopicModel
    >>> from skvi.metrics import importance_sampled_nll
    >>> X = np.random.RandomState(0).poisson(1.0, size=(40, 6))
    >>> ctm = SVICorrelatedTopicModel(n_components=2, max_iter=3, random_state=0).fit(X[:30])
    >>> nll = importance_sampled_nll(ctm, X[30:], n_samples=200, random_state=0)
    >>> bool(0 < nll < np.log(6) + 1)
    True
    """
    if not callable(getattr(model, "log_evidence", None)):
        raise TypeError(
            f"importance_sampled_nll needs a model with log_evidence; {type(model).__name__} "
            "has none."
        )
    X = check_counts(X, "importance_sampled_nll")
    words = np.asarray(X.sum(axis=1)).ravel()
    keep = np.flatnonzero(words > 0)
    if keep.size == 0:
        raise ValueError("X passed to importance_sampled_nll has no document with a word.")
    log_p = model.log_evidence(
        X[keep], n_samples=n_samples, inflation=inflation, random_state=random_state
    )
    return float(np.mean(-np.asarray(log_p) / words[keep]))
