"""The documents of the correlated topic model: their rows and their Gaussians' moments."""

import numpy as np
import scipy.sparse as sp


def _state_rows(state, rows):
    """The rows ``rows`` of an update rule's per-document state (a dict of arrays)."""
    if state is None:
        return None
    return {k: None if v is None else v[rows] for k, v in state.items()}


def _set_state_rows(state, rows, values):
    """``state`` with its rows ``rows`` replaced by ``values`` (a copy)."""
    if state is None or values is None:
        return state
    out = {}
    for k, v in state.items():
        if v is None or values.get(k) is None:
            out[k] = v
            continue
        v = v.copy()
        v[rows] = values[k]
        out[k] = v
    return out


def _gaussian_moments(eta1, eta2, diagonal):
    """Means and scales of Gaussians: standard deviations (diagonal) or Cholesky factors."""
    if diagonal:
        var = -0.5 / eta2
        return eta1 * var, np.sqrt(var)
    precision = -(eta2 + np.swapaxes(eta2, -1, -2))
    cov = np.linalg.inv(precision)
    cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    mean = (cov @ eta1[..., None])[..., 0]
    return mean, np.linalg.cholesky(cov)


def _covariances(scale, diagonal):
    return scale * scale if diagonal else scale @ np.swapaxes(scale, -1, -2)


def _document_moment(natural, diagonal, which):
    """The means (``which=0``) or covariances (1) of documents' natural parameters."""
    mean, scale = _gaussian_moments(*natural, diagonal)
    return mean if which == 0 else _covariances(scale, diagonal)


class Documents:
    """Rows of a CSR document-term matrix with their document numbers.

    The engine indexes it like an array (``docs[rows]``); ``ids`` are the
    documents' rows in the per-document factor group.
    """

    __slots__ = ("X", "ids")

    def __init__(self, X, ids):
        self.X = X
        self.ids = ids

    @property
    def shape(self):
        return self.X.shape

    def __getitem__(self, rows):
        return Documents(self.X[rows], self.ids[rows])

    @classmethod
    def concatenate(cls, parts):
        """Documents of several blocks stacked, numbered anew from 0."""
        X = sp.vstack([p.X for p in parts], format="csr")
        return cls(X, np.arange(X.shape[0]))
