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
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ...engine import ModelSettings, RowGroupSpec, SVIEstimator, check_row_weights
from ...engine.rows import ResidentRows
from ...expfam import MultivariateGaussian, UnivariateGaussian
from ...update_rules import (
    ALGORITHMS,
    UPDATE_RULE_PARAMETER_CONSTRAINTS,
    make_update_rule,
)
from ...validation import check_heldout_counts, check_sparse_structure
from ..lda import SVILatentDirichletAllocation
from ..lda.estep import mixture_probabilities
from .._topics import TopicWordsMixin
from . import kernels
from .bounds import _BOUND_SEED, _Bounds
from .documents import Documents, _document_moment
from .evidence import ctm_log_evidence
from .model_step import _ModelStep
from .steps import _DocumentSteps

__all__ = ["SVICorrelatedTopicModel"]

#: Draws of ``eta_d`` behind ``transform``'s ``E_q[theta_d]``.
_THETA_DRAWS = 500
#: The largest word count of a document: its square (in the curvature and
#: the AdaGrad accumulators) stays far below the float64 maximum.
MAX_DOCUMENT_WORDS = 1e100


class SVICorrelatedTopicModel(
    TopicWordsMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _DocumentSteps,
    _ModelStep,
    _Bounds,
    SVIEstimator,
):
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

    ``sample_weight`` (of ``fit``, ``partial_fit``, :meth:`score` and
    :meth:`perplexity`) counts a document of weight 2 as the document
    twice: in the topics' word counts, ``mu`` and ``Sigma``, the ELBO and
    ``N``; its own ``q(eta_d)`` is that of each of its copies.  A document
    of weight 0 is dropped (``document_mean_`` has no row for it).

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
        ``q(eta_d)`` of the training documents.  After a fit of a dask
        array on a cluster (:mod:`skvi.distributed`), where every
        document's ``q(eta_d)`` stays on the worker of its block, lazy dask
        arrays computed there.  A pickle keeps neither them nor the
        documents' factors (they are the training documents' own, and would
        make it grow with them), only the sums over the documents that
        ``mu``, ``Sigma`` and the bound read: a model loaded from a pickle
        transforms and scores as the fitted one, and continues with ``fit``,
        not ``partial_fit``, as after a fit on a cluster.
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

    def score(self, X, y=None, sample_weight=None):
        """The ELBO of the documents X under the fitted model (higher is better).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative document weights: each document's bound counts its
            weight times (as the document repeated).

        Returns
        -------
        score : float
            Sum over the documents of their bound on ``log p(w_d)``.
        """
        check_is_fitted(self)
        docs = self._documents(X, reset=False, sample_weight=sample_weight)
        return self._score_documents(docs)

    def perplexity(self, X, sample_weight=None):
        """``exp(-score(X) / number of words)`` (lower is better).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative document weights: a document of weight 2 counts
            twice, in the score and in the number of words.

        Returns
        -------
        perplexity : float
            The per-word perplexity of X's bound.
        """
        check_is_fitted(self)
        docs = self._documents(X, reset=False, sample_weight=sample_weight)
        if docs.weight is None:
            words = max(float(docs.X.sum()), 1.0)
        else:
            # Weights below 1 count fractions of their documents' words.
            words = float(docs.weight @ np.asarray(docs.X.sum(axis=1)).ravel())
            words = words if words > 0 else 1.0
        return float(np.exp(-self._score_documents(docs) / words))

    def _score_documents(self, docs):
        """The summed bound of validated documents, each counted its weight times."""
        mean, scale = self._fold_in(docs.X)
        return float(np.sum(docs.weighted(self._document_bounds(docs.X, mean, scale))))

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

    def _documents(self, X, reset, start=0, sample_weight=None):
        """Validated documents, numbered from ``start``, with their weights.

        Documents of weight 0 are dropped, and weights that are all 1
        become None: the unweighted code path.
        """
        X = self._check_counts(X, reset=reset)
        weight = check_row_weights(sample_weight, X)
        if weight is not None:
            keep = weight > 0
            if not keep.all():
                X, weight = X[keep], weight[keep]
            if np.all(weight == 1.0):
                weight = None
        return Documents(X, start + np.arange(X.shape[0]), weight)

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        start = 0
        if partial and not reset:
            # New documents of a stream, numbered after the ones seen.
            if isinstance(self.natural_params_["documents"], ResidentRows):
                raise NotImplementedError(
                    "partial_fit after a fit on a cluster, or of a model loaded from a "
                    "pickle: the documents' factors, on which mu and Sigma depend, stayed "
                    "on the workers or were not pickled (they are the training documents' "
                    "own). Continue with partial_fit in the process that fitted in memory, "
                    "or fit again."
                )
            start = self._row_totals("documents").shape[0]
        # (A block of a fit on a cluster numbers its documents from 0.)
        return self._documents(X, reset=reset, start=start, sample_weight=sample_weight)

    def _document_ids(self, name, X):
        return X.ids

    def _new_documents(self, name, n_new, rated, random_state):
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
        family = MultivariateGaussian if self.covariance == "full" else UnivariateGaussian
        return ModelSettings(
            {"documents": family},
            row_groups={
                "documents": RowGroupSpec(
                    ids=self._document_ids,
                    grow=self._new_documents,
                    summary=self._documents_summary,
                    resident=True,
                    scheduled=True,
                )
            },
            update_rules={"documents": self._rule},
            parallel=True,
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
            # The documents' weights weigh its fit too.
            lda = SVILatentDirichletAllocation(
                n_components=self.n_components,
                learning_method="batch",
                max_iter=self.init_passes,
                random_state=random_state,
            ).fit(X.X, sample_weight=X.weight)
            self._set_topics(lda.components_)
            docs = self._prior_documents(X.shape[0])
        else:
            # Each topic starts at the words of a few random documents (as
            # Blei and Lafferty's seeded start), every word kept in every topic.
            counts = random_state.gamma(100.0, 0.01, (self.n_components, V))
            seeds = _seed_documents(X.weight, X.shape[0], (self.n_components, 5), random_state)
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


def _seed_documents(weight, n_docs, size, random_state):
    """Random documents of the seeded start, each drawn with probability proportional to its weight.

    With integer weights the draws are those of the documents repeated as
    often (an index of the repeated documents, mapped back to its
    document), so that a weighted fit starts where the repeated one does.
    """
    if weight is None:
        return random_state.randint(n_docs, size=size)
    total = np.cumsum(weight)
    if total[-1] < 2**53 and np.all(weight == np.round(weight)):  # whole numbers of copies
        index = random_state.randint(int(total[-1]), size=size)
    else:
        index = random_state.random_sample(size) * total[-1]
    return np.minimum(np.searchsorted(total, index, side="right"), n_docs - 1)
