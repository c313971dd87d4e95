"""Small data sets that ship with skvi, and readers for standard formats."""

from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_newcomb"]


def load_newcomb(*, return_X_y=False):
    """Load Simon Newcomb's 1882 speed-of-light measurements.

    Sixty-six measurements of the time light took to travel 7442 metres,
    recorded as nanoseconds above 24800 ns (Stigler 1977, "Do robust
    estimators deal with real data?", Table 5).  Two of them (-44 and -2)
    are famous outliers.  The classic textbook example for inferring the
    mean and precision of a normal model; the data are in the public domain
    and ship with skvi as ``skvi/datasets/data/newcomb.csv``.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return only the data array.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or ndarray of shape (66, 1)
        A Bunch with ``data`` (float64 array of shape (66, 1)),
        ``feature_names`` and ``DESCR``; or just the array when
        ``return_X_y`` is True.

    Examples
    --------
    >>> from skvi.datasets import load_newcomb
    >>> X = load_newcomb(return_X_y=True)
    >>> X.shape, round(float(X.mean()), 3)
    ((66, 1), 26.212)
    """
    path = resources.files(__name__).joinpath("data", "newcomb.csv")
    with path.open("r") as fh:
        lines = [line.strip() for line in fh if not line.startswith("#")]
    header, values = lines[0], lines[1:]
    X = np.array([float(v) for v in values if v], dtype=np.float64)[:, None]
    if return_X_y:
        return X
    return Bunch(
        data=X,
        feature_names=[header],
        DESCR=load_newcomb.__doc__,
    )
