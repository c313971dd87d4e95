"""User and item ids of any hashable kind, encoded as consecutive row numbers."""

import numpy as np

__all__ = ["IdEncoder", "as_id_array", "check_id_kind"]


def as_id_array(column):
    """A 1-d numpy array of ids that numpy can sort and compare.

    Integers, floats, strings and bytes stay as they are; an object column
    is converted to the type numpy infers for its values, and, when they are
    of mixed kinds, to strings.

    Parameters
    ----------
    column : array-like of shape (n,)
        Ids.

    Returns
    -------
    ndarray of shape (n,)
        The ids, with a sortable dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.ids import as_id_array
    >>> as_id_array(np.array(["b", "a"], dtype=object))
    array(['b', 'a'], dtype='<U1')
    """
    ids = np.asarray(column)
    if ids.dtype == object:
        values = ids.tolist()
        ids = np.asarray(values)
        if ids.dtype == object or ids.ndim != 1:
            ids = np.asarray([str(v) for v in values])
    if ids.dtype.kind == "c":
        raise ValueError("Complex data not supported as user or item ids.")
    if ids.dtype.kind == "f" and not np.all(np.isfinite(ids)):
        raise ValueError("Input X contains NaN or infinity: ids must be finite.")
    return ids


class IdEncoder:
    """Map ids of any sortable kind to rows ``0 .. n - 1``, growing as new ids come.

    The first ids (from ``fit``) take their sorted order, so integer ids
    ``0 .. n - 1`` keep their value as their row; ids first met later (in
    ``partial_fit``) are appended.  Memory grows with the number of
    distinct ids, never with their values.

    Parameters
    ----------
    ids : array-like of shape (n,)
        The first ids.

    Attributes
    ----------
    classes_ : ndarray
        The ids in row order: ``classes_[row]`` is the id of ``row``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.ids import IdEncoder
    >>> enc = IdEncoder(np.array(["bob", "ann", "bob"]))
    >>> enc.classes_
    array(['ann', 'bob'], dtype='<U3')
    >>> enc.encode(np.array(["bob", "cy"]))     # unknown ids are -1
    array([ 1, -1])
    >>> enc.encode(np.array(["cy", "ann"]), grow=True)
    array([2, 0])
    """

    def __init__(self, ids):
        ids = as_id_array(ids)
        self.classes_ = np.unique(ids)
        self._sorted = self.classes_
        self._rows = np.arange(self.classes_.shape[0])

    def __len__(self):
        return self.classes_.shape[0]

    def encode(self, ids, grow=False):
        """Rows of ``ids``: -1 for an unknown id, or a new row with ``grow``.

        Parameters
        ----------
        ids : array-like of shape (n,)
            Ids to encode.
        grow : bool, default=False
            Append the unknown ids (in sorted order) as new rows.

        Returns
        -------
        ndarray of int64, shape (n,)
            The row of each id.
        """
        ids = as_id_array(ids)
        n = self._sorted.shape[0]
        comparable = n > 0 and _same_kind(self._sorted, ids)
        if comparable:
            pos = np.minimum(np.searchsorted(self._sorted, ids), n - 1)
            known = self._sorted[pos] == ids
            rows = np.where(known, self._rows[pos], -1).astype(np.int64)
        else:
            known = np.zeros(ids.shape[0], dtype=bool)
            rows = np.full(ids.shape[0], -1, dtype=np.int64)
        if grow and not np.all(known):
            if n > 0 and not comparable:
                raise ValueError(
                    f"New ids of kind {ids.dtype} cannot be added to ids of kind "
                    f"{self.classes_.dtype}: use one kind of id (numbers or strings)."
                )
            new = np.unique(ids[~known])
            start = self.classes_.shape[0]
            self.classes_ = np.concatenate([self.classes_, new])
            order = np.argsort(self.classes_, kind="stable")
            self._sorted = self.classes_[order]
            self._rows = order
            rows[~known] = start + np.searchsorted(new, ids[~known])
        return rows


def check_id_kind(ids, encoder, side):
    """Refuse ids that can never equal the fitted ones (numbers against strings).

    Such ids would all read as unknown and be predicted from the prior,
    silently: integer ids asked as the strings ``'1'``, ``'2'``, ...  Only
    the ids a user asks to predict are checked; ids merely compared (seen
    pairs of :meth:`recommend`) are meant to match nothing when they differ.

    Parameters
    ----------
    ids : array-like of shape (n,)
        The ids asked.
    encoder : IdEncoder
        The fitted ids.
    side : str
        ``'user'`` or ``'item'``, for the message.

    Raises
    ------
    ValueError
        When there are ids and fitted ids and they are of different kinds.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.matrix_factorization.ids import IdEncoder, check_id_kind
    >>> check_id_kind(np.array([3, 4]), IdEncoder(np.array([1, 2])), "user")
    >>> check_id_kind(np.array(["1"]), IdEncoder(np.array([1, 2])), "user")
    Traceback (most recent call last):
    ...
    ValueError: The user ids asked are of kind <U1 and the fitted ones of kind int64: numbers and strings never compare, so every one would be predicted as an unknown id. Give the ids as the model was fitted with them.
    """
    ids = as_id_array(ids)
    if ids.shape[0] and len(encoder) and not _same_kind(encoder.classes_, ids):
        raise ValueError(
            f"The {side} ids asked are of kind {ids.dtype} and the fitted ones of kind "
            f"{encoder.classes_.dtype}: numbers and strings never compare, so every one "
            "would be predicted as an unknown id. Give the ids as the model was fitted "
            "with them."
        )


def _same_kind(a, b):
    """Whether ids of arrays a and b can be compared (both numbers or both text)."""
    numeric = "biuf"
    return (a.dtype.kind in numeric) == (b.dtype.kind in numeric)
