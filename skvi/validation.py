"""Input checks shared by every estimator."""

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array
from sklearn.utils.validation import check_non_negative

__all__ = [
    "MAX_FEATURE_MAGNITUDE",
    "check_counts",
    "check_feature_magnitude",
    "check_heldout_counts",
    "check_sparse_structure",
]

#: The largest feature magnitude ``|x_ij|`` the models with Gaussian sums
#: of squares accept: ``x^2 <= 1e200`` leaves a factor of 1e108 below the
#: float64 maximum (1.8e308) for the sums over rows, the row weights and
#: the ``N / |S|`` scaling.
MAX_FEATURE_MAGNITUDE = 1e100


def check_sparse_structure(X, name="X"):
    """Raise a ValueError when a scipy sparse matrix is structurally invalid.

    scikit-learn's ``check_array`` trusts a sparse matrix's index arrays; a
    hand-built or mutated one (an ``indptr`` past the stored entries, too
    short, not starting at 0, a column index out of range or negative,
    ``data`` shorter than ``indices``) would be misread or crash compiled
    code.  CSR, CSC and BSR get scipy's full structure check, COO a check of
    its coordinates; other formats keep their entries in Python containers
    and cannot hold such errors.  Dense input passes unchecked.

    Parameters
    ----------
    X : object
        The input to check.
    name : str, default="X"
        How the error message names the input.

    Returns
    -------
    X : object
        The input, unchanged.

    Raises
    ------
    ValueError
        When X is a sparse matrix whose structure is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.validation import check_sparse_structure
    >>> X = sp.csr_matrix(np.eye(3))
    >>> X.indices[0] = 7
    >>> check_sparse_structure(X)
    Traceback (most recent call last):
    ...
    ValueError: X is not a valid sparse matrix: ... must be < 3
    """
    if not sp.issparse(X):
        return X
    try:
        if X.format in ("csr", "csc", "bsr"):
            X.check_format(full_check=True)
        elif X.format == "coo":
            _check_coo(X)
    except (ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"{name} is not a valid sparse matrix: {exc}") from None
    return X


def check_feature_magnitude(X, whom, limit=MAX_FEATURE_MAGNITUDE, name="X"):
    """Raise a ValueError when a feature of X exceeds ``limit`` in magnitude.

    Models that sum squares and products of the features (Gram matrices,
    quadratic forms ``x^T V x``) overflow to infinity and then NaN for
    features near ``1e154``; they refuse any beyond ``limit`` instead.

    Parameters
    ----------
    X : ndarray or sparse matrix
        Validated, finite features.
    whom : str
        The estimator the error message names.
    limit : float, default=MAX_FEATURE_MAGNITUDE
        The largest magnitude accepted.
    name : str, default="X"
        How the error message names the input.

    Returns
    -------
    X : ndarray or sparse matrix
        The input, unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.validation import check_feature_magnitude
    >>> check_feature_magnitude(np.array([[1.0, -3e200]]), "Example")
    Traceback (most recent call last):
    ...
    ValueError: Example: the largest feature magnitude in X is 3e+200, above the 1e+100 ...
    """
    values = X.data if sp.issparse(X) else X
    if values.size == 0:
        return X
    largest = max(float(np.max(values)), -float(np.min(values)))
    if largest > limit:
        raise ValueError(
            f"{whom}: the largest feature magnitude in {name} is {largest:.3g}, above the "
            f"{limit:.0e} the model accepts (sums of squared features would overflow). "
            "Scale the features first, e.g. with sklearn.preprocessing.StandardScaler."
        )
    return X


def _check_coo(X):
    row, col, data = np.asarray(X.row), np.asarray(X.col), np.asarray(X.data)
    if not (row.shape == col.shape == data.shape) or row.ndim != 1:
        raise ValueError("row, col and data should have the same size")
    n_rows, n_cols = X.shape
    if row.size and (row.min() < 0 or row.max() >= n_rows):
        raise ValueError(f"row indices must be in [0, {n_rows})")
    if col.size and (col.min() < 0 or col.max() >= n_cols):
        raise ValueError(f"column indices must be in [0, {n_cols})")


def check_counts(X, whom, *, integer=False):
    """Validate a document-word count matrix; return canonical CSR float64.

    The result is a new matrix (the input is never modified) with summed
    duplicates, sorted indices and no explicit zeros.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_docs, n_words)
        Non-negative counts.
    whom : str
        The function the error messages name.
    integer : bool, default=False
        Whether the counts must be whole numbers.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.validation import check_counts
    >>> check_counts(np.array([[1, 0], [0, 2]]), "example").nnz
    2
    """
    check_sparse_structure(X)
    X = check_array(X, accept_sparse="csr", dtype=np.float64, input_name="X")
    X = X.copy() if sp.issparse(X) else sp.csr_matrix(X)
    X.sum_duplicates()
    X.eliminate_zeros()
    check_non_negative(X, whom)
    if integer and not np.array_equal(X.data, np.floor(X.data)):
        raise ValueError(
            f"X passed to {whom} must hold integer-valued word counts; found non-integer values."
        )
    return X


def check_heldout_counts(X_observed, X_heldout, n_words, whom):
    """Validate the observed and held-out parts of documents for document completion.

    Both parts must be non-negative, finite word counts of the same
    documents (the same number of rows) over the model's ``n_words`` words.
    The held-out part keeps its stored entries in their order (one
    probability is returned per stored entry).

    Parameters
    ----------
    X_observed, X_heldout : {array-like, sparse matrix} of shape (n_docs, n_words)
        The observed and the held-out word counts of each document.
    n_words : int
        The number of words (columns) of the fitted model.
    whom : str
        The function the error messages name.

    Returns
    -------
    X_observed : scipy.sparse.csr_matrix of float64
        As :func:`check_counts` returns it.
    X_heldout : scipy.sparse.csr_matrix of float64
        The held-out counts, their stored entries in the given order.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.validation import check_heldout_counts
    >>> check_heldout_counts(np.ones((2, 3)), np.ones((1, 3)), 3, "example")
    Traceback (most recent call last):
    ...
    ValueError: example: X_observed has 2 rows (documents) but X_heldout has 1; ...
    """
    X_observed = check_counts(X_observed, f"{whom} (X_observed)")
    check_sparse_structure(X_heldout, "X_heldout")
    X_heldout = check_array(
        X_heldout, accept_sparse="csr", dtype=np.float64, input_name="X_heldout"
    )
    X_heldout = sp.csr_matrix(X_heldout)
    check_non_negative(X_heldout, f"{whom} (X_heldout)")
    if X_observed.shape[0] != X_heldout.shape[0]:
        raise ValueError(
            f"{whom}: X_observed has {X_observed.shape[0]} rows (documents) but X_heldout "
            f"has {X_heldout.shape[0]}; they must be the two parts of the same documents."
        )
    for name, part in (("X_observed", X_observed), ("X_heldout", X_heldout)):
        if part.shape[1] != n_words:
            raise ValueError(
                f"{whom}: {name} has {part.shape[1]} words (columns), but the model "
                f"was fitted on {n_words}."
            )
    return X_observed, X_heldout
