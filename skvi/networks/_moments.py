"""The kinds of moments a node hands its children, and the moments of fixed values.

A parent and a child are conjugate when the child's density, as a function
of the parent, is an exponential family in the parent's sufficient
statistics.  Each parent slot of a node therefore names the kind of moments
it needs (:class:`MomentsKind`); a stochastic parent must hand over exactly
that kind, and an array is converted to it (its "fixed moments").  The
conventions follow BayesPy's, so that the lower bounds agree term by term.
"""

import numpy as np

from .. import expfam
from ..expfam.counts import category_in_support, count_in_support

__all__ = ["MomentsKind"]


def _show(v):
    """A value for an error message, on one line."""
    v = np.asarray(v)
    if v.ndim == 0:
        return repr(float(v))
    return np.array2string(v, precision=6, separator=", ").replace("\n", "")


def _require(ok, x, valid, event_ndim=0):
    """Raise a ValueError naming the first element of ``x`` where ``ok`` fails, and what is valid.

    ``ok`` has the shape of ``x`` less its last ``event_ndim`` axes (a
    vector's or a matrix's own).
    """
    ok = np.asarray(ok)
    if ok.all():
        return
    bad = tuple(int(i) for i in np.argwhere(~ok)[0]) if ok.ndim else ()
    x = np.asarray(x)
    lead = x.ndim - event_ndim
    value = x[(0,) * (lead - len(bad)) + bad] if lead >= len(bad) else x
    at = f" at index {bad}" if bad else ""
    raise ValueError(f"got {_show(value)}{at}, but it must be {valid}")


def _outer(x, ndim):
    """``x x^T`` over the last ``ndim`` axes of x: shape ``plates + shape + shape``."""
    if ndim == 0:
        return x * x
    shape = x.shape[x.ndim - ndim :]
    plates = x.shape[: x.ndim - ndim]
    flat = x.reshape(plates + (-1,))
    return (flat[..., :, None] * flat[..., None, :]).reshape(plates + shape + shape)


class FixedGaussianMoments(list):
    """``[x, x x^T]`` of a fixed Gaussian value, the outer products made when first read.

    A design matrix of ``n`` rows and ``d`` inputs as a :class:`SumMultiply`
    operand (a regression's ``SumMultiply('d,d->', X_rows, w)``) has
    ``n d^2`` second moments, more memory than the rows themselves by a
    factor ``d``; a sum of products needs only ``x`` twice
    (:attr:`first`), and reads them so.  Any other reader gets the
    products, computed once.
    """

    def __init__(self, x, ndim):
        super().__init__([x, None])
        self.first = x
        self._ndim = ndim

    @property
    def pending(self):
        """Whether the outer products are not made yet."""
        return list.__getitem__(self, 1) is None

    def _full(self):
        if self.pending:
            list.__setitem__(self, 1, _outer(self.first, self._ndim))
        return list(list.__iter__(self))

    def __getitem__(self, index):
        if index == 0:
            return self.first
        return self._full()[index]

    def __iter__(self):
        return iter(self._full())

    def __reduce__(self):
        return (FixedGaussianMoments, (self.first, self._ndim))


class MomentsKind:
    """What a node's moments are: a family name and the shape of each moment array.

    Parameters
    ----------
    name : str
        The family of moments ('gaussian', 'gamma', 'wishart', ...).
    dims : tuple of tuple of int
        The variable shape of each moment array (the plates come before).
    describe : str
        What a node of this kind is, for error messages.

    Examples
    --------
    >>> from skvi.networks._moments import MomentsKind
    >>> g = MomentsKind.gaussian((2,))
    >>> g.dims
    ((2,), (2, 2))
    >>> [u.shape for u in g.fixed(np.zeros((5, 2)))]
    [(5, 2), (5, 2, 2)]
    """

    def __init__(self, name, dims, describe, size=None):
        self.name = name
        self.size = size
        self.dims = tuple(tuple(d) for d in dims)
        self.describe = describe

    def __eq__(self, other):
        return isinstance(other, MomentsKind) and (self.name, self.dims) == (other.name, other.dims)

    def __hash__(self):
        return hash((self.name, self.dims))

    def __repr__(self):
        return f"MomentsKind({self.name!r}, {self.dims})"

    # ------------------------------------------------------------- kinds
    @classmethod
    def gaussian(cls, shape):
        shape = tuple(shape)
        return cls("gaussian", (shape, shape + shape), f"Gaussian of shape {shape}")

    @classmethod
    def gamma(cls):
        return cls("gamma", ((), ()), "Gamma (positive scalar)")

    @classmethod
    def gamma_shape(cls):
        return cls("gamma_shape", ((), ()), "fixed positive Gamma shape")

    @classmethod
    def wishart(cls, D):
        return cls("wishart", ((D, D), ()), f"Wishart ({D}x{D} positive definite)")

    @classmethod
    def wishart_dof(cls, D):
        return cls("wishart_dof", ((), ()), f"fixed Wishart degrees of freedom (> {D - 1})", size=D)

    @classmethod
    def dirichlet(cls, K):
        return cls("dirichlet", ((K,),), f"Dirichlet over {K} categories")

    @classmethod
    def concentration(cls, K):
        return cls("concentration", ((K,), ()), f"fixed positive concentration of size {K}")

    @classmethod
    def categorical(cls, K):
        return cls("categorical", ((K,),), f"Categorical over {K} categories")

    @classmethod
    def multinomial(cls, K):
        return cls("multinomial", ((K,),), f"Multinomial over {K} categories")

    @classmethod
    def beta(cls):
        return cls("beta", ((2,),), "Beta (probability)")

    @classmethod
    def bernoulli(cls):
        return cls("bernoulli", ((),), "Bernoulli (0 or 1)")

    @classmethod
    def poisson(cls):
        return cls("poisson", ((),), "Poisson (count)")

    @classmethod
    def gaussian_wishart(cls, D):
        return cls("gaussian_wishart", ((D,), (), (D, D), ()), f"Gaussian-Wishart of dimension {D}")

    # ------------------------------------------------------ fixed values
    def value_shape(self):
        """The variable shape of a fixed value of this kind."""
        if self.name in ("gaussian",):
            return self.dims[0]
        if self.name in ("wishart",):
            return self.dims[0]
        if self.name in ("dirichlet", "concentration", "multinomial"):
            return self.dims[0]
        return ()

    def fixed(self, x):
        """The moments of the fixed value x (a list of arrays), BayesPy's conventions."""
        x = np.asarray(x, dtype=np.float64)
        name = self.name
        if name == "gaussian":
            shape = self.dims[0]
            nd = len(shape)
            if x.ndim < nd or x.shape[x.ndim - nd :] != shape:
                try:
                    full = np.broadcast_shapes(x.shape, shape)
                except ValueError:
                    full = None
                if full is None or full[len(full) - nd :] != shape:
                    raise ValueError(f"a value of shape {x.shape} is not a {self.describe}")
                x = np.broadcast_to(x, full).copy()
            _require(expfam.UnivariateGaussian.in_support(x), x, "finite (a Gaussian's mean)")
            return FixedGaussianMoments(x, nd)
        if name in ("gamma", "gamma_shape", "wishart_dof", "poisson"):
            if name == "poisson":
                _require(count_in_support(x), x, "a count (a finite non-negative integer)")
                return [x]
            if name == "wishart_dof":
                D = self.size
                with np.errstate(invalid="ignore"):
                    ok = np.isfinite(x) & (x > D - 1)
                _require(ok, x, f"finite and above D - 1 = {D - 1} (a {self.describe})")
                return [x, expfam.WishartByScale.log_normalizer_df_term(x, D)]
            _require(expfam.Gamma.in_support(x), x, f"finite and positive (a {self.describe})")
            if name == "gamma":
                return [x, np.log(x)]
            return [x, expfam.Gamma.log_normalizer_shape_term(x)]
        if name == "wishart":
            D = self.dims[0][0]
            if x.ndim < 2 or x.shape[-2:] != (D, D):
                raise ValueError(f"a value of shape {x.shape} is not a {self.describe} matrix")
            _require(
                expfam.WishartByScale.in_support(x),
                x,
                f"a finite symmetric positive definite {D}x{D} matrix",
                event_ndim=2,
            )
            return list(expfam.WishartByScale.sufficient_stats(x))
        if name == "dirichlet":
            K = self.dims[0][0]
            if x.ndim < 1 or x.shape[-1] != K:
                raise ValueError(
                    f"a value of shape {x.shape} is not a probability vector of {K} categories"
                )
            _require(
                expfam.Dirichlet.in_support(x),
                x,
                f"a probability vector of {K} categories (finite, non-negative, summing to 1)",
                event_ndim=1,
            )
            with np.errstate(divide="ignore"):
                return [np.log(x)]
        if name == "beta":
            with np.errstate(invalid="ignore"):
                ok = np.isfinite(x) & (x >= 0) & (x <= 1)
            _require(ok, x, "a probability in [0, 1]")
            with np.errstate(divide="ignore"):
                return [np.stack([np.log(x), np.log1p(-x)], axis=-1)]
        if name == "concentration":
            K = self.dims[0][0]
            if x.ndim < 1 or x.shape[-1] != K:
                raise ValueError(f"a value of shape {x.shape} is not a {self.describe}")
            _require(
                np.all(expfam.Gamma.in_support(x), axis=-1),
                x,
                "finite and positive in every category (a Dirichlet's concentration)",
                event_ndim=1,
            )
            # The Dirichlet's log normaliser with a fixed concentration.
            return [x, -expfam.Dirichlet(x).log_normalizer()]
        if name == "categorical":
            K = self.dims[0][0]
            _require(category_in_support(x, K), x, f"a category, an integer in [0, {K})")
            return [np.eye(K)[x.astype(np.intp)]]
        if name == "multinomial":
            K = self.dims[0][0]
            if x.ndim < 1 or x.shape[-1] != K:
                raise ValueError(f"a value of shape {x.shape} is not counts of {K} categories")
            _require(
                np.all(count_in_support(x), axis=-1),
                x,
                "counts, finite non-negative integers",
                event_ndim=1,
            )
            return [x]
        if name == "bernoulli":
            _require(category_in_support(x, 2), x, "0 or 1")
            return [x]
        raise ValueError(f"no fixed value can stand for a {self.describe}")


class CategoricalMoments(MomentsKind):
    """The moments of a categorical variable over ``categories``: BayesPy's class of that name.

    A :class:`MomentsKind` that BayesPy's examples give :class:`Constant`
    for fixed categories (the document of each word in latent Dirichlet
    allocation, a :class:`Gate`'s ``Z``): the one-hot vectors.

    Parameters
    ----------
    categories : int
        The number of categories, at least 1.

    Examples
    --------
    >>> from skvi.networks import CategoricalMoments, Constant
    >>> docs = Constant(CategoricalMoments(3), [0, 2, 2], name="docs")
    >>> docs.plates, docs.get_moments()[0][1]
    ((3,), array([0., 0., 1.]))
    """

    def __init__(self, categories):
        K = np.asarray(categories)
        if K.ndim != 0 or not np.issubdtype(K.dtype, np.integer) or int(K) < 1:
            raise ValueError(f"categories must be a positive integer, got {categories!r}")
        K = int(K)
        super().__init__("categorical", ((K,),), f"Categorical over {K} categories")
