"""The documents of the correlated topic model: their rows and their Gaussians' moments."""

import numpy as np
import scipy.sparse as sp

from ...expfam import gaussian_moments


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
    q = gaussian_moments(eta1, eta2, diagonal=diagonal, factor=True, logdet=False)
    return q.mean, q.factor


def _covariances(scale, diagonal):
    return scale * scale if diagonal else scale @ np.swapaxes(scale, -1, -2)


def _document_moment(natural, diagonal, which):
    """The means (``which=0``) or covariances (1) of documents' natural parameters."""
    mean, scale = _gaussian_moments(*natural, diagonal)
    return mean if which == 0 else _covariances(scale, diagonal)


class Documents:
    """Rows of a CSR document-term matrix with their document numbers and weights.

    The engine indexes it like an array (``docs[rows]``); ``ids`` are the
    documents' rows in the per-document factor group, and ``weight`` each
    document's weight (None: 1 each), which :meth:`count` sums.
    """

    __slots__ = ("X", "ids", "weight")

    def __init__(self, X, ids, weight=None):
        self.X = X
        self.ids = ids
        self.weight = weight

    @property
    def shape(self):
        return self.X.shape

    def __getitem__(self, rows):
        weight = None if self.weight is None else self.weight[rows]
        return Documents(self.X[rows], self.ids[rows], weight)

    def count(self):
        """The number of documents, or their total weight."""
        return self.X.shape[0] if self.weight is None else float(np.sum(self.weight))

    def weighted(self, values):
        """Each document's ``values`` times its weight (unchanged without weights)."""
        if self.weight is None:
            return values
        return values * self.weight.reshape((-1,) + (1,) * (np.ndim(values) - 1))

    @classmethod
    def concatenate(cls, parts):
        """Documents of several blocks stacked, numbered anew from 0."""
        X = sp.vstack([p.X for p in parts], format="csr")
        weights = [p.weight for p in parts]
        if all(w is None for w in weights):
            weight = None
        else:
            weight = np.concatenate(
                [np.ones(p.shape[0]) if w is None else w for p, w in zip(parts, weights)]
            )
        return cls(X, np.arange(X.shape[0]), weight)
