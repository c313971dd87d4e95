"""Bayesian networks of your own: nodes with plates, variational message passing, SVI.

Declare a conjugate-exponential network with BayesPy's node names and
signatures, fit it by variational message passing (:class:`VB`), or as a
scikit-learn estimator on the shared engine (:class:`SVIBayesianNetwork`)
with batch, online and streaming fits.  The algorithms are those of
Langseth and Nielsen, "Variational inference: scalable solutions", and
Paquet, "On the convergence of stochastic variational inference in Bayesian
networks".  Link nodes (:class:`Logistic`, :class:`Exp`, :class:`Softmax`,
:class:`Ordinal`) put Bernoulli, Poisson and categorical observations under
Gaussian predictors, fitted by Monte Carlo structured SVI.
"""

from ._deterministic import Dot, SumMultiply
from ._dirichlet import Beta, Dirichlet
from ._discrete import Bernoulli, Categorical, Multinomial, Poisson
from ._gamma import Gamma
from ._gaussian import Gaussian, GaussianARD, GaussianWishart
from ._mixture import Mixture
from ._node import Constant, Node
from ._stochastic import Stochastic
from ._wishart import Wishart
from ._estimator import SVIBayesianNetwork
from ._plates import NetworkError
from ._vb import VB
from ._markov_chain import CategoricalMarkovChain, GaussianMarkovChain

__all__ = [
    "Bernoulli",
    "Beta",
    "Categorical",
    "Constant",
    "Dot",
    "Dirichlet",
    "Gamma",
    "Gaussian",
    "GaussianARD",
    "GaussianWishart",
    "Mixture",
    "Multinomial",
    "NetworkError",
    "Node",
    "Poisson",
    "SVIBayesianNetwork",
    "Stochastic",
    "SumMultiply",
    "VB",
    "Wishart",
    "CategoricalMarkovChain",
    "GaussianMarkovChain",
]

from ._indexing import Add, Gate, Take  # noqa: E402
from ._moments import CategoricalMoments  # noqa: E402

__all__ += ["Add", "CategoricalMoments", "Gate", "Take"]

from ._gaussian_gamma import GaussianGamma  # noqa: E402

__all__ += ["GaussianGamma"]

from ._links import Exp, Logistic, Ordinal, Softmax  # noqa: E402

__all__ += ["Exp", "Logistic", "Ordinal", "Softmax"]
