"""Estimators: one module per model, each built on :mod:`skvi.engine`."""

from .gaussian_gamma import GaussianGammaVB

__all__ = ["GaussianGammaVB"]
