"""Correlated topic model: the per-document kernels of its variational E-step.

:mod:`skvi.models.ctm.kernels` holds the vectorised log-likelihood, its
gradient and Hessian in the logistic-normal topic logits, their Monte Carlo
expectations under a Gaussian ``q`` and the per-document bound.  This
package imports nothing itself; import the kernels module directly.
"""

__all__ = []
