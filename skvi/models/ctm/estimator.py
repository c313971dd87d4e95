"""The correlated topic model by Monte Carlo structured SVI.

The model (Blei and Lafferty, "Correlated topic models")::

    eta_d ~ N(mu, Sigma)                    in R^(K-1), one per document
    theta_d = softmax([eta_d, 0])           topic proportions
    z_dn ~ Cat(theta_d),  w_dn ~ Cat(beta_{z_dn})

with ``mu``, ``Sigma`` and the topics ``beta`` point estimates.  The topic
assignments ``z`` are summed out exactly, and each document's ``q(eta_d)``
is a Gaussian (full or diagonal covariance): the optimal structured bound
of "Monte Carlo structured SVI for two-level non-conjugate models" (its
eq. 56)::

    sum_d E_q[ sum_v n_dv log(theta(eta_d) . beta_v) ] - KL(q(eta_d) || N(mu, Sigma))

The documents are the engine's per-row factor group: each document's
Gaussian keeps its own step counter and moves towards the fixed-point
target of that paper's eqs. 57-59 (the Monte Carlo mean gradient ``g`` and
Hessian ``Gamma`` of its log-likelihood, the latter projected onto the
positive semi-definite cone) by MC-SSVI, H-MC-SSVI or S-DSVI
(:mod:`skvi.update_rules`).  After each accepted step ``mu`` and ``Sigma``
take their closed forms over every document (eqs. 60-61) and the topics
move towards their expected word counts.
"""

import functools
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ...engine import Factor, ModelSettings, Moments, RowStatistics, SVIEstimator
from ...engine.rows import ResidentRows
from ...expfam import Gaussian, MultivariateGaussian
from ...schedules import make_schedule
from ...update_rules import (
    ALGORITHMS,
    UPDATE_RULE_PARAMETER_CONSTRAINTS,
    make_update_rule,
)
from ...validation import check_heldout_counts, check_sparse_structure
from ..lda import SVILatentDirichletAllocation
from ..lda.estep import mixture_probabilities
from . import kernels
from .evidence import ctm_log_evidence

__all__ = ["SVICorrelatedTopicModel"]

#: Seed of the common random numbers of the ELBO's Monte Carlo estimate.
_BOUND_SEED = 0x5EED
#: Draws of ``eta_d`` behind ``transform``'s ``E_q[theta_d]``.
_THETA_DRAWS = 500
#: The smallest eigenvalue of a document's precision, relative to its
#: largest, that a step may leave: its covariance is inverted and factorised
#: (an S-DSVI step through a nearly singular Cholesky factor left
#: precisions with eigenvalues from -6e5 to 4e21).
_MIN_PRECISION_RATIO = 1e-12
#: Halvings of a fold-in document's step before the document keeps its q.
_FOLD_IN_HALVINGS = 30
#: The largest magnitude of a document's logits' mean that a step may
#: leave (a bound on it: |m| <= |Lambda m| / lambda_min): an AdaGrad step of
#: gradient_learning_rate=1e300 left means of 1e300, and Sigma inf.
_MAX_LOGIT = 1e100
#: The largest word count of a document: its square (in the curvature and
#: the AdaGrad accumulators) stays far below the float64 maximum.
MAX_DOCUMENT_WORDS = 1e100


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


class SVICorrelatedTopicModel(ClassNamePrefixFeaturesOutMixin, TransformerMixin, SVIEstimator):
    """Correlated topic model by Monte Carlo structured SVI.

    Blei and Lafferty's correlated topic model: each document's topic
    proportions are ``softmax([eta_d, 0])`` with ``eta_d ~ N(mu, Sigma)``,
    so that topics can co-occur (``Sigma``'s correlations), which the
    Dirichlet of LDA cannot express.  Each document's posterior ``q(eta_d)``
    is a Gaussian with a full or diagonal covariance, fitted to the optimal
    structured bound of "Monte Carlo structured SVI for two-level
    non-conjugate models" (the topic assignments are summed out exactly).
    Shaped like :class:`skvi.SVILatentDirichletAllocation`: it takes a
    document-term count matrix (after ``CountVectorizer``) and
    :meth:`transform` returns topic proportions.

    Parameters
    ----------
    n_components : int, default=10
        Number of topics ``K``.
    algorithm : {'h-mc-ssvi', 'mc-ssvi', 's-dsvi'}, default='h-mc-ssvi'
        How a document's Gaussian moves towards its fixed-point target:
        natural-gradient covariance and AdaGrad mean (H-MC-SSVI, the
        paper's best), natural-gradient steps on both (MC-SSVI), or AdaGrad
        on the mean and the Cholesky factor (S-DSVI).
    covariance : {'full', 'diagonal'}, default='full'
        Covariance of each document's ``q(eta_d)``.
    bound : {'optimal', 'simple', 'mean_field'}, default='optimal'
        The variational bound: ``'optimal'`` sums each word's topic out
        exactly (the paper's eq. 56, ``q(eta_d)`` alone); ``'simple'`` keeps a
        factor ``q(z_d)`` of the words' topics (its appendix A.2, eqs.
        73-75), at its optimum given ``q(eta_d)``: a looser bound whose
        steps are cheaper (no per-word outer products); ``'mean_field'`` is
        Blei and Lafferty's: ``'simple'`` with a diagonal ``q(eta_d)``
        (``covariance='diagonal'`` is required) and ``E_q[lse]`` bounded in
        closed form, so that nothing is sampled.
    expectation : {'mc', 'quadrature'}, default='mc'
        How the expectations over ``q(eta_d)`` of a step and of the ELBO
        are computed: Monte Carlo with ``n_mc_samples`` draws (the paper),
        or a tensor-product Gauss-Hermite rule of ``n_mc_samples`` nodes per
        dimension, ``n_mc_samples ** (n_components - 1)`` in all, for
        ``n_components <= 4``: deterministic steps, so that a batch fit
        converges to its fixed point.  The mean-field bound needs neither.
    n_mc_samples : int, default=10
        Draws of ``eta_d`` per document and step for the expected gradient
        and Hessian (10 in the paper), or quadrature nodes per dimension.
    gradient_learning_rate : float, default=1.0
        AdaGrad rate of the ordinary-gradient parts of ``'h-mc-ssvi'`` and
        ``'s-dsvi'`` (1.0 in the paper).
    topic_word_prior : float, default=0.01
        Pseudo-count added to every topic's expected word counts before
        they are normalised into ``beta``.
    init : {'lda', 'random'}, default='lda'
        Start of the topics: a short batch LDA fit
        (:class:`skvi.SVILatentDirichletAllocation`, ``init_passes``
        passes), or each topic at the words of a few random documents
        (Blei and Lafferty's seeded start).  The documents start at the
        prior ``N(0, I)``.
    init_passes : int, default=5
        Passes of the LDA start.
    update_model_every : {'minibatch', 'pass'}, default='minibatch'
        When ``mu``, ``Sigma`` and the topics move in an online fit: after
        every minibatch's step (the paper's Fig. 8 updates them after each
        document), or once at the end of each pass, from the documents'
        expected word counts of the whole pass (then ``mu`` and ``Sigma``
        are those of every document's ``q``, and the topics the pass's
        counts: a batch M-step between passes of online document steps).
        A ``partial_fit`` call counts as a pass, whose model step is
        blended by the schedule at the call's number.  A batch fit
        updates after each pass either way.
    transform_max_iter : int, default=50
        Steps of a new document's ``q(eta_d)`` in :meth:`transform` and
        :meth:`score` (the model held fixed).
    learning_method : {'batch', 'online'}, default='batch'
        ``'batch'``: every document at every step; ``'online'``: minibatches
        of ``batch_size`` documents.
    batch_size : int, default=128
        Documents per online step.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Expected word counts of each topic (plus ``topic_word_prior``).
    topic_word_ : ndarray of shape (n_components, n_features)
        The topics ``beta``: ``components_`` normalised by rows.
    prior_mean_ : ndarray of shape (n_components - 1,)
        ``mu``.
    prior_covariance_ : ndarray of shape (n_components - 1, n_components - 1)
        ``Sigma``.
    topic_correlation_ : ndarray of shape (n_components - 1, n_components - 1)
        ``Sigma`` as correlations (topic ``K`` is the reference).
    document_mean_, document_covariance_ : ndarray
        ``q(eta_d)`` of the training documents.
    lower_bounds_ : list of float
        ELBO (Monte Carlo, common random numbers) after each pass.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVICorrelatedTopicModel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.poisson(1.0, size=(40, 12))
    >>> ctm = SVICorrelatedTopicModel(n_components=3, max_iter=5, random_state=0).fit(X)
    >>> ctm.transform(X[:2]).shape
    (2, 3)
    """

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 2, None, closed="left")],
        "algorithm": [StrOptions(set(ALGORITHMS) - {"auto"})],
        "covariance": [StrOptions({"full", "diagonal"})],
        "bound": [StrOptions({"optimal", "simple", "mean_field"})],
        "expectation": [StrOptions({"mc", "quadrature"})],
        "n_mc_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "gradient_learning_rate": UPDATE_RULE_PARAMETER_CONSTRAINTS["gradient_learning_rate"],
        "topic_word_prior": [Interval(numbers.Real, 0, None, closed="neither")],
        "init": [StrOptions({"lda", "random"})],
        "init_passes": [Interval(numbers.Integral, 1, None, closed="left")],
        "update_model_every": [StrOptions({"minibatch", "pass"})],
        "transform_max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        n_components=10,
        *,
        algorithm="h-mc-ssvi",
        covariance="full",
        bound="optimal",
        expectation="mc",
        n_mc_samples=10,
        gradient_learning_rate=1.0,
        topic_word_prior=0.01,
        init="lda",
        init_passes=5,
        update_model_every="minibatch",
        transform_max_iter=50,
        n_jobs=None,
        learning_method="batch",
        batch_size=128,
        max_iter=50,
        tol=1e-3,
        learning_offset=1.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        step_safety=True,
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.covariance = covariance
        self.bound = bound
        self.expectation = expectation
        self.n_mc_samples = n_mc_samples
        self.gradient_learning_rate = gradient_learning_rate
        self.topic_word_prior = topic_word_prior
        self.init = init
        self.init_passes = init_passes
        self.update_model_every = update_model_every
        self.transform_max_iter = transform_max_iter
        self.n_jobs = n_jobs
        self.learning_method = learning_method
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.learning_rate = learning_rate
        self.total_samples = total_samples
        self.step_safety = step_safety
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ public API
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the topics, ``mu``, ``Sigma`` and every document's ``q(eta_d)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts of each document.
        y : None
            Ignored.

        Returns
        -------
        self : SVICorrelatedTopicModel
            The fitted estimator.

        Notes
        -----
        With a dask array X and an active ``distributed.Client`` the fit
        runs on the cluster (:mod:`skvi.distributed`): every document's
        ``q(eta_d)`` stays on the worker of its block, and
        ``document_mean_`` and ``document_covariance_`` are then lazy dask
        arrays computed there.
        """
        return super().fit(X, y)

    def transform(self, X):
        """Expected topic proportions ``E_q[theta_d]`` of each document.

        Each document's ``q(eta_d)`` is fitted with the model held fixed
        (``transform_max_iter`` steps from the prior).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.

        Returns
        -------
        theta : ndarray of shape (n_samples, n_components)
            Rows sum to one.
        """
        check_is_fitted(self)
        mean, scale = self._fold_in(self._check_counts(X, reset=False))
        rng = np.random.default_rng(_BOUND_SEED)
        theta = 0.0
        draws = _THETA_DRAWS
        for _ in range(draws):
            theta = theta + kernels.topic_proportions(self._draw(mean, scale, rng))
        return theta / draws

    def score(self, X, y=None):
        """The ELBO of the documents X under the fitted model (higher is better).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.
        y : None
            Ignored.

        Returns
        -------
        score : float
            Sum over the documents of their bound on ``log p(w_d)``.
        """
        check_is_fitted(self)
        X = self._check_counts(X, reset=False)
        mean, scale = self._fold_in(X)
        return float(np.sum(self._document_bounds(X, mean, scale)))

    def perplexity(self, X):
        """``exp(-score(X) / number of words)`` (lower is better).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.

        Returns
        -------
        perplexity : float
            The per-word perplexity of X's bound.
        """
        X = self._check_counts(X, reset=False)
        return float(np.exp(-self.score(X) / max(X.sum(), 1.0)))

    def heldout_word_probabilities(self, X_observed, X_heldout):
        """``p(w | d)`` of held-out words, each document's ``q(eta_d)`` fitted to its other words.

        The document-completion protocol of
        :func:`skvi.metrics.document_completion_perplexity`: with the model
        fixed, each document's ``q(eta_d)`` is fitted to ``X_observed`` (as
        :meth:`transform`), and a held-out word ``w`` has ``p(w | d) =
        sum_k E_q[theta_dk] beta_kw``.

        Parameters
        ----------
        X_observed : sparse matrix of shape (n_docs, n_features)
            The observed word counts of each document.
        X_heldout : sparse matrix of shape (n_docs, n_features)
            The held-out word counts, as a CSR matrix.

        Returns
        -------
        p : ndarray of shape (X_heldout.nnz,)
            ``p(w | d)`` of each stored entry of ``X_heldout``, in its order.

        Examples
        --------
        >>> import numpy as np
        >>> import scipy.sparse as sp
        >>> from skvi import SVICorrelatedTopicModel
        >>> X = np.random.RandomState(0).poisson(1.0, size=(30, 6))
        >>> ctm = SVICorrelatedTopicModel(n_components=2, max_iter=3, random_state=0).fit(X)
        >>> held = sp.csr_matrix(X[:2])
        >>> ctm.heldout_word_probabilities(sp.csr_matrix(X[2:4]), held).shape == (held.nnz,)
        True
        """
        check_is_fitted(self)
        X_observed, X_heldout = check_heldout_counts(
            X_observed, X_heldout, self.topic_word_.shape[1], "heldout_word_probabilities"
        )
        theta = self.transform(X_observed)
        return mixture_probabilities(theta, self.topic_word_, X_heldout)

    def log_evidence(self, X, *, n_samples=1000, inflation=1.0, random_state=None):
        """Importance-sampling estimate of ``log p(w_d)`` of each document.

        The test likelihood of "Monte Carlo structured SVI for two-level
        non-conjugate models" (its eq. 105): with the model fixed, each
        document's ``q(eta_d) = N(m_d, V_d)`` is fitted to all its words
        (as :meth:`transform`), and ``n_samples`` draws from the proposal
        ``N(m_d, V_d + inflation * I)`` (the posterior widened, so that its
        tails cover the integrand's) give::

            log p(w_d) ~ log mean_s p(w_d | eta_s) N(eta_s; mu, Sigma) / r(eta_s).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts of the documents.
        n_samples : int, default=1000
            Draws per document.
        inflation : float, default=1.0
            Added to the diagonal of each document's posterior covariance.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws.

        Returns
        -------
        log_evidence : ndarray of shape (n_docs,)
            The estimate of ``log p(w_d)`` (a lower bound in expectation).

        Examples
        --------
        >>> import numpy as np
        >>> from skvi import SVICorrelatedTopicModel
        >>> X = np.random.RandomState(0).poisson(1.0, size=(30, 6))
        >>> ctm = SVICorrelatedTopicModel(n_components=2, max_iter=3, random_state=0).fit(X)
        >>> ctm.log_evidence(X[:3], random_state=0).shape
        (3,)
        """
        check_is_fitted(self)
        X = self._check_counts(X, reset=False)
        mean, scale = self._fold_in(X)
        return ctm_log_evidence(
            X,
            self._mu,
            self._sigma,
            self.topic_word_,
            n_samples=n_samples,
            inflation=inflation,
            posterior=(mean, self._covariances(scale)),
            random_state=random_state,
        )

    @property
    def _n_features_out(self):
        return self.n_components

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    # ------------------------------------------------------------- input
    def _check_counts(self, X, reset):
        if reset and self.bound == "mean_field" and self.covariance != "diagonal":
            raise ValueError(
                "bound='mean_field' is Blei and Lafferty's fully factorised bound: it needs "
                "covariance='diagonal'."
            )
        if reset and self.expectation == "quadrature" and self.n_components > 4:
            raise ValueError(
                f"expectation='quadrature' is a tensor-product rule of n_mc_samples ** "
                f"(n_components - 1) nodes, for n_components <= 4; got n_components="
                f"{self.n_components}. Use expectation='mc'."
            )
        check_sparse_structure(X)
        X = validate_data(self, X, reset=reset, accept_sparse=("csr", "csc"), dtype=np.float64)
        check_non_negative(X, f"{type(self).__name__} (input X)")
        X = sp.csr_matrix(X)
        if X.nnz:
            longest = float(np.max(X.sum(axis=1)))
            if longest > MAX_DOCUMENT_WORDS:
                raise ValueError(
                    f"{type(self).__name__}: a document of X holds {longest:.3g} words, above "
                    f"the {MAX_DOCUMENT_WORDS:.0e} the model accepts (the squares of its counts "
                    "enter the documents' steps and overflow beyond). Divide the counts by a "
                    "constant."
                )
        return X

    def _documents(self, X, reset, start=0):
        X = self._check_counts(X, reset=reset)
        return Documents(X, start + np.arange(X.shape[0]))

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        if sample_weight is not None:
            raise TypeError(f"{type(self).__name__} takes no sample_weight.")
        start = 0
        if partial and not reset:
            # New documents of a stream, numbered after the ones seen.
            if isinstance(self.natural_params_["documents"], ResidentRows):
                raise NotImplementedError(
                    "partial_fit after a fit on a cluster: the documents' factors, on which "
                    "mu and Sigma depend, are on the workers. Fit in memory to continue "
                    "with partial_fit."
                )
            start = self._row_totals("documents").shape[0]
        # (A block of a fit on a cluster numbers its documents from 0.)
        return self._documents(X, reset=reset, start=start)

    def _row_ids(self, X):
        return {"documents": X.ids}

    def _grow_rows(self, name, n_new, rated, random_state):
        return self._prior_documents(n_new)

    # ------------------------------------------------------------ structure
    @property
    def _dim(self):
        return self.n_components - 1

    @property
    def _settings(self):
        # A document's q is its row's own: on a cluster it stays with its
        # block.  Monte Carlo targets: a document's steps follow its schedule
        # in batch too.  The draws are made before a minibatch is cut.
        family = MultivariateGaussian if self.covariance == "full" else Gaussian
        return ModelSettings(
            {"documents": family},
            row_groups=("documents",),
            resident_row_groups=("documents",),
            scheduled_row_steps=True,
            update_rules={"documents": self._rule},
            parallel=True,
            pass_step=self.update_model_every == "pass",
            transient=("document_mean_", "document_covariance_"),
        )

    @property
    def _rule(self):
        return (
            None
            if self.algorithm == "mc-ssvi"
            else make_update_rule(self.algorithm, self.gradient_learning_rate)
        )

    def _prior_documents(self, n, mean=None):
        """Natural parameters of ``n`` documents with the prior's covariance.

        Their means are the prior's, or ``mean`` (one row per document).
        """
        _, eta2 = self._prior_natural()["documents"]
        mean = np.tile(self._mu, (n, 1)) if mean is None else mean
        if self.covariance == "diagonal":
            prec = -2.0 * np.diagonal(eta2)
            return prec * mean, np.tile(-0.5 * prec, (n, 1))
        return mean @ (-2.0 * eta2), np.tile(eta2, (n, 1, 1))

    def _initialize_globals(self, X, random_state, summary):
        d, V = self._dim, X.shape[1]
        self._mu = np.zeros(d)
        self._sigma = np.eye(d)
        self._topics_started = False
        self._pass_counts = None
        if self.init == "lda":
            # A short batch LDA fit: its topics, and its documents' topic
            # proportions as the logits' means (and mu, Sigma from them).
            lda = SVILatentDirichletAllocation(
                n_components=self.n_components,
                learning_method="batch",
                max_iter=self.init_passes,
                random_state=random_state,
            ).fit(X.X)
            self._set_topics(lda.components_)
            docs = self._prior_documents(X.shape[0])
        else:
            # Each topic starts at the words of a few random documents (as
            # Blei and Lafferty's seeded start), every word kept in every topic.
            counts = random_state.gamma(100.0, 0.01, (self.n_components, V))
            seeds = random_state.randint(X.shape[0], size=(self.n_components, 5))
            for k in range(self.n_components):
                counts[k] += np.asarray(X.X[seeds[k]].sum(axis=0)).ravel()
            self._set_topics(counts)
            docs = self._prior_documents(X.shape[0])
        return {"documents": docs}

    def _set_topics(self, counts):
        self.components_ = counts
        self.topic_word_ = counts / counts.sum(axis=1, keepdims=True)

    def _prior_natural(self):
        precision = np.linalg.inv(self._sigma)
        precision = 0.5 * (precision + precision.T)
        return {"documents": (precision @ self._mu, -0.5 * precision)}

    # --------------------------------------------------------------- moments
    def _moments(self, eta1, eta2):
        """Means and scales of documents: Cholesky factors (full) or standard deviations."""
        return _gaussian_moments(eta1, eta2, self.covariance == "diagonal")

    def _covariances(self, scale):
        return _covariances(scale, self.covariance == "diagonal")

    def _document_moments(self, params, ids):
        eta1, eta2 = params["documents"]
        return self._moments(eta1[ids], eta2[ids])

    @staticmethod
    def _draw(mean, scale, rng):
        # The same draw for every document: a document's estimate does not
        # depend on the others in its batch (common random numbers).
        eps = np.broadcast_to(rng.standard_normal(mean.shape[-1]), mean.shape)
        if scale.ndim == mean.ndim:
            return mean + scale * eps
        return mean + (scale @ eps[..., None])[..., 0]

    # ------------------------------------------------------------- the step
    def _expectations(self, X, mean, scale, eps=None, topic_counts=False, hessian=True):
        """Gradient, curvature and data bound of each document, under ``bound``.

        By Monte Carlo on the standard normal draws ``eps``, or by the
        quadrature rule (``expectation='quadrature'``).
        """
        if self.bound == "mean_field":
            expected = kernels.mean_field_bound_derivatives(
                X, mean, scale * scale, self.topic_word_, topic_counts=topic_counts
            )
            # Its curvature is diagonal already.
            return expected._replace(H_hat=np.diagonal(expected.H_hat, axis1=-2, axis2=-1))
        if hessian and self.covariance == "diagonal":
            hessian = "diagonal"  # all a diagonal q's step uses
        weights = None
        if self.expectation == "quadrature":
            eps, weights = self._quadrature_rule()
        function = (
            kernels.expected_gradient_hessian
            if self.bound == "optimal"
            else kernels.simple_bound_derivatives
        )
        return function(
            X,
            mean,
            scale,
            self.topic_word_,
            eps.shape[0],
            hessian=hessian,
            topic_counts=topic_counts,
            eps=eps,
            weights=weights,
        )

    def _quadrature_rule(self):
        """The Gauss-Hermite nodes, shaped (S, 1, K - 1) as common draws, and weights."""
        rule = getattr(self, "_rule_cache", None)
        if (
            rule is None
            or rule[0].shape[-1] != self._dim
            or rule[1].size != (self.n_mc_samples**self._dim)
        ):
            nodes, weights = kernels.gauss_hermite_rule(self._dim, self.n_mc_samples)
            rule = self._rule_cache = (nodes[:, None, :], weights)
        return rule

    def _local_draws(self, X, random_state):
        # The minibatch's Monte Carlo draws, (documents, samples, K - 1): one
        # generator in one order, whatever n_jobs cuts the minibatch into.
        if self.bound == "mean_field" or self.expectation != "mc":
            return None
        return random_state.standard_normal((X.shape[0], self.n_mc_samples, self._dim))

    def _local_step(self, X, params, draws=None):
        mean, scale = self._document_moments(params, X.ids)
        eps = None if draws is None else np.ascontiguousarray(np.moveaxis(draws, 0, 1))
        expected = self._expectations(X.X, mean, scale, eps=eps, topic_counts=True)
        return {"mean": mean, "expected": expected}

    @staticmethod
    def _statistics_parts(expected, mean):
        """What the data add to a document's target.

        ``(g - Gamma m, P_psd(-Gamma))`` for a full ``q``; for a diagonal one,
        from the curvature's diagonal alone, ``(g + D m, D)`` with ``D =
        max(-diag(Gamma), 0)``: the fixed point of the diagonal family's
        bound, ``1 / v_k = (Sigma^-1)_kk - E[H_kk]``.
        """
        gamma = expected.H_hat
        if gamma.ndim == mean.ndim:
            curvature = np.maximum(-gamma, 0.0)
            return expected.g_hat + curvature * mean, curvature
        return (expected.g_hat - (gamma @ mean[..., None])[..., 0], kernels.psd_projection(-gamma))

    def _move_documents(self, old, parts, prior, rho, backoff, state):
        """Step documents ``old`` towards ``prior + parts`` by the update rule.

        The one document step of a fit and of the fold-in of new documents.
        Returns the new natural parameters, the target and the rule's state.
        """
        old1, old2 = old
        if self.covariance == "diagonal":
            # The prior's precision couples the coordinates (the Jacobi form
            # of diagonal_target); the data's curvature is diagonal.
            precision = -2.0 * prior[1]
            diag = np.diagonal(precision)
            mean = old1 / (-2.0 * old2)
            tgt1 = prior[0] + parts[0] - (mean @ precision.T - diag * mean)
            tgt2 = -0.5 * (diag + parts[1])
        else:
            tgt1 = prior[0] + parts[0]
            tgt2 = prior[1] - 0.5 * parts[1]
        rule = self._rule
        if rule is None:
            shape = rho.shape + (1,) * (old2.ndim - 1)
            new = (old1 + rho[:, None] * (tgt1 - old1), old2 + rho.reshape(shape) * (tgt2 - old2))
        else:
            new, state = rule.step((old1, old2), (tgt1, tgt2), rho, backoff, state)
        return new, (tgt1, tgt2), state

    def _expected_stats(self, name, X, local, params):
        parts = self._statistics_parts(local["expected"], local["mean"])
        return RowStatistics(X.ids, parts, np.ones(X.ids.shape[0]))

    def _update_factor(self, name, current, stats, ctx):
        rows = stats.rows
        old1, old2 = current[0][rows], current[1][rows]
        (new1, new2), (tgt1, tgt2), state = self._move_documents(
            (old1, old2),
            stats.values,
            ctx.prior["documents"],
            ctx.row_rho,
            ctx.backoff,
            ctx.rule_state,
        )
        if self._rule is not None:
            ctx.keep_rule_state(state)
        if ctx.grads is not None:
            ctx.grads.extend([tgt1 - old1, tgt2 - old2])
        eta1, eta2 = current[0].copy(), current[1].copy()
        eta1[rows], eta2[rows] = new1, new2
        family = current.family
        valid = bool(np.all(self._valid_documents(new1, new2)))
        return Factor((eta1, eta2), family), valid

    def _valid_documents(self, eta1, eta2):
        """Whether each document's natural parameters are finite and well conditioned.

        A full precision's eigenvalues must all be positive, the smallest at
        least ``_MIN_PRECISION_RATIO`` times the largest: the document's
        covariance is then its inverse, factorised.  The mean must stay
        within ``_MAX_LOGIT`` (``Sigma``, the means' spread, stays finite).
        """
        n = eta1.shape[0]
        finite = np.all(np.isfinite(eta1), axis=1) & np.all(
            np.isfinite(eta2.reshape(n, -1)), axis=1
        )
        with np.errstate(all="ignore"):
            if self.covariance == "diagonal":
                precision = np.where(finite[:, None], -2.0 * eta2, 1.0)
                mean = np.where(finite[:, None], eta1, 0.0) / precision
                return (
                    finite
                    & np.all(precision > 0, axis=1)
                    & np.all(np.abs(mean) <= _MAX_LOGIT, axis=1)
                )
            precision = -(eta2 + np.swapaxes(eta2, -1, -2))
            precision = np.where(finite[:, None, None], precision, np.eye(eta1.shape[1]))
            w = np.linalg.eigvalsh(precision)
            bound = np.linalg.norm(np.where(finite[:, None], eta1, 0.0), axis=1) / w[:, 0]
            return finite & (w[:, 0] > _MIN_PRECISION_RATIO * w[:, -1]) & (bound <= _MAX_LOGIT)

    def _safe_document_step(self, eta, parts, prior, rho, state):
        """One step of every document, each with its own step safety.

        A document whose step leaves invalid natural parameters (see
        :meth:`_valid_documents`) retries it with the step size halved (rho
        and the rule's backoff), at most ``_FOLD_IN_HALVINGS`` times, and
        then keeps its ``q``; the others move at once.  Returns the new
        natural parameters and the rule's state.
        """
        new, _, new_state = self._move_documents(eta, parts, prior, rho, 1.0, state)
        new = (np.array(new[0]), np.array(new[1]))
        bad = ~self._valid_documents(*new)
        backoff = 1.0
        for _ in range(_FOLD_IN_HALVINGS):
            if not bad.any():
                break
            backoff *= 0.5
            rows = np.flatnonzero(bad)
            retry, _, retry_state = self._move_documents(
                (eta[0][rows], eta[1][rows]),
                (parts[0][rows], parts[1][rows]),
                prior,
                rho[rows] * backoff,
                backoff,
                _state_rows(state, rows),
            )
            ok = self._valid_documents(*retry)
            kept = rows[ok]
            new[0][kept], new[1][kept] = retry[0][ok], retry[1][ok]
            new_state = _set_state_rows(new_state, kept, _state_rows(retry_state, ok))
            bad[kept] = False
        new[0][bad], new[1][bad] = eta[0][bad], eta[1][bad]
        return new, new_state

    # ------------------------------------------------------ the model's step
    def _hyperparameter_statistics(self, X, local):
        # The documents' expected word counts per topic (the topics' step).
        return (local["expected"].topic_counts,)

    def _update_hyperparameters(self, hyper, ctx):
        if ctx.end_of_pass:  # update_model_every='pass': the pass's counts
            counts, self._pass_counts = getattr(self, "_pass_counts", None), None
            if counts is None:
                return False
            self._model_step(counts, ctx.scale, ctx.rho)
            return True
        counts = None if hyper is None else hyper[0]
        if ctx.in_pass and self.update_model_every == "pass":
            # Held until the pass ends: the pass's expected word counts add up.
            if counts is not None:
                pending = getattr(self, "_pass_counts", None)
                self._pass_counts = counts if pending is None else pending + counts
            return False
        # After every accepted step (each minibatch; the paper's Fig. 8
        # updates after each document).
        self._model_step(counts, ctx.scale, ctx.rho)
        return True

    def _model_step(self, topic_counts, scale, rho):
        """``mu`` and ``Sigma`` in closed form; the topics towards ``prior + scale * counts``."""
        self._update_prior()
        if topic_counts is None:
            return
        target = self.topic_word_prior + scale * topic_counts
        if getattr(self, "_topics_started", True):
            rho = min(float(rho), 1.0)
            target = (1.0 - rho) * self.components_ + rho * target
        self._topics_started = True  # the first step replaces the start
        self._set_topics(target)

    def _update_prior(self):
        """``mu`` and ``Sigma`` in closed form over every document's ``q`` (eqs. 60-61)."""
        moments, cov_sum = self._rows_summary("documents")[:2]
        if moments.n_rows == 0:
            return
        cov_sum = cov_sum if cov_sum.ndim == 2 else np.diag(cov_sum)
        sigma = (cov_sum + moments.scatter) / moments.total
        sigma = 0.5 * (sigma + sigma.T) + 1e-8 * np.eye(self._dim)
        self._mu, self._sigma = moments.mean.copy(), sigma

    def _row_summary(self, name, natural, steps, totals):
        """What ``mu``, ``Sigma`` and the KL part of the ELBO need of the documents.

        ``(moments, covariance sum)`` of the documents stepped at least
        once (the closed forms), then ``(moments, covariance sum, sum of
        log det V_d)`` of every document seen (the KL divergences):
        sums that add over blocks of documents.
        """
        mean, scale = self._moments(*natural)
        cov = self._covariances(scale)
        if self.covariance == "diagonal":
            logdet = 2.0 * np.sum(np.log(scale), axis=1)
        else:
            logdet = 2.0 * np.sum(np.log(np.diagonal(scale, axis1=1, axis2=2)), axis=1)
        fitted, seen = steps > 0, totals > 0
        return (
            Moments.of(mean[fitted]),
            np.sum(cov[fitted], axis=0),
            Moments.of(mean[seen]),
            np.sum(cov[seen], axis=0),
            float(np.sum(logdet[seen])),
        )

    # ------------------------------------------------------------------ ELBO
    def _data_bounds(self, X, mean, scale):
        """The data part of each document's bound (Monte Carlo: common random numbers)."""
        if self.bound == "mean_field":
            return self._expectations(X, mean, scale).loglik_hat
        if self.expectation == "quadrature":
            eps, weights = self._quadrature_rule()
        else:
            eps = np.random.RandomState(_BOUND_SEED).standard_normal(
                (self.n_mc_samples, 1, self._dim)
            )
            weights = None
        if self.bound == "simple":
            return self._expectations(X, mean, scale, eps=eps, hessian=False).loglik_hat
        eta = mean + (
            eps * scale
            if scale.ndim == mean.ndim
            else np.einsum(
                "nij,snj->sni", scale, np.broadcast_to(eps, (eps.shape[0],) + mean.shape)
            )
        )
        loglik = kernels.log_likelihood(X, eta, self.topic_word_)
        return loglik.mean(axis=0) if weights is None else weights @ loglik

    def _document_bounds(self, X, mean, scale):
        """The bound of each document: its data part minus its KL divergence to the prior."""
        loglik = self._data_bounds(X, mean, scale)
        precision = np.linalg.inv(self._sigma)
        logdet = np.linalg.slogdet(self._sigma)[1]
        cov = self._covariances(scale)
        kl = kernels.kl_gaussian(mean, cov, self._mu, precision, logdet)
        return loglik - kl

    def _local_bound(self, X, local, params):
        mean, scale = self._document_moments(params, X.ids)
        return float(np.sum(self._data_bounds(X.X, mean, scale)))

    def _global_bound(self, params):
        # Minus the documents' KL divergences to N(mu, Sigma), summed:
        # (tr(P (sum V_d + sum (m_d - mu)(m_d - mu)^T)) - n d + n log det Sigma
        # - sum log det V_d) / 2, with P = Sigma^-1.
        _, _, moments, cov_sum, logdet_sum = self._rows_summary("documents", params)
        n = moments.total
        if n == 0:
            return 0.0
        precision = np.linalg.inv(self._sigma)
        logdet = np.linalg.slogdet(self._sigma)[1]
        delta = moments.mean - self._mu
        spread = moments.scatter + n * np.outer(delta, delta)
        trace_cov = (
            np.sum(np.diagonal(precision) * cov_sum)
            if cov_sum.ndim == 1
            else np.sum(precision * cov_sum)
        )
        kl = 0.5 * (
            trace_cov + np.sum(precision * spread) - n * self._dim + n * logdet - logdet_sum
        )
        return -float(kl)

    # -------------------------------------------------------------- fold-in
    def _fold_in(self, X):
        """``q(eta_d)`` of new documents, the model held fixed: means and scales.

        The documents are independent and share the draws of each step, so
        blocks of them fold in on ``n_jobs`` threads to the same result.
        """
        parts = self._map_row_blocks(self._fold_in_rows, X)
        return (
            np.concatenate([mean for mean, _ in parts]),
            np.concatenate([scale for _, scale in parts]),
        )

    def _fold_in_rows(self, X):
        n = X.shape[0]
        prior = self._prior_natural()["documents"]
        eta = self._prior_documents(n)
        state = None
        schedule = make_schedule(self.learning_rate, self.learning_offset, self.learning_decay)
        rng = np.random.RandomState(_BOUND_SEED)
        for t in range(1, self.transform_max_iter + 1):
            mean, scale = self._moments(*eta)
            # Draws shared by the documents: each one's fit is its own.
            eps = rng.standard_normal((self.n_mc_samples, 1, self._dim))
            parts = self._statistics_parts(self._expectations(X, mean, scale, eps=eps), mean)
            # The schedule of the fit, restarted for the new documents; an
            # invalid step is halved, as the fit's step safety does.
            eta, state = self._safe_document_step(eta, parts, prior, np.full(n, schedule(t)), state)
        return self._moments(*eta)

    # --------------------------------------------------------------- results
    def _on_params_updated(self):
        # Counts of a pass a callback stopped.
        self._pass_counts = None
        documents = self.natural_params_["documents"]
        if isinstance(documents, ResidentRows):  # on the workers of a cluster: lazy arrays
            d, diagonal = self._dim, self.covariance == "diagonal"
            self.document_mean_ = documents.map_rows(
                functools.partial(_document_moment, diagonal=diagonal, which=0), (d,)
            )
            self.document_covariance_ = documents.map_rows(
                functools.partial(_document_moment, diagonal=diagonal, which=1),
                (d,) if diagonal else (d, d),
            )
        else:
            mean, scale = self._moments(*documents)
            self.document_mean_ = mean
            self.document_covariance_ = self._covariances(scale)
        self.prior_mean_ = self._mu.copy()
        self.prior_covariance_ = self._sigma.copy()
        sd = np.sqrt(np.diag(self._sigma))
        self.topic_correlation_ = self._sigma / np.outer(sd, sd)
