"""Latent Dirichlet allocation by batch and stochastic variational inference."""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma, gammaln, polygamma
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ...engine import Factor, ModelSettings, RowStatistics, SVIEstimator
from ...engine.data import Rows, check_row_weights
from ...expfam import Dirichlet
from ...validation import check_heldout_counts, check_sparse_structure
from .._topics import TopicWordsMixin
from .estep import add_rows, blend, e_step, exp_digamma_diff, heldout_probabilities
from .evidence import lda_log_evidence

__all__ = ["SVILatentDirichletAllocation"]


class SVILatentDirichletAllocation(
    TopicWordsMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, SVIEstimator
):
    """Latent Dirichlet allocation fitted by batch or stochastic variational inference.

    A drop-in replacement for
    :class:`sklearn.decomposition.LatentDirichletAllocation`: the same
    constructor parameters, defaults, methods and fitted attributes, with
    the model of Blei et al. (2003) and the online algorithm of Hoffman,
    Blei & Bach (2010)::

        beta_k   ~ Dirichlet(topic_word_prior)        topics, k = 1..K
        theta_d  ~ Dirichlet(doc_topic_prior)         topic proportions
        z_dn     ~ Categorical(theta_d),  w_dn ~ Categorical(beta_{z_dn})

    with ``q(beta_k) = Dirichlet(components_[k])`` and per-document
    ``q(theta_d) = Dirichlet(gamma_d)``.  Fitting runs on skvi's shared
    engine (:mod:`skvi.engine`): batch mode is coordinate ascent,
    ``learning_method='online'`` and ``partial_fit`` take natural-gradient
    steps ``lambda <- (1 - rho_t) lambda + rho_t (eta + N/|S| sstats)`` with
    ``rho_t`` from ``learning_rate`` (a :mod:`skvi.schedules` object) or
    ``(t + learning_offset) ** -learning_decay``.

    The E-step updates every document of a minibatch in compiled code
    (a numpy fallback, vectorised over the minibatch, is used when the
    extension is not built) and stops each document separately at
    ``mean_change_tol``.  As in scikit-learn, each E-step starts every
    document from a random ``gamma``: starting from the previous pass's
    ``gamma`` saves iterations but, with ``doc_topic_prior < 1``, locks
    documents into the topic mixtures they took while the topics were still
    random, and held-out perplexity suffers.

    Differences from scikit-learn, each deliberate:

    - ``total_samples='auto'`` (the default): for ``partial_fit`` on a
      stream of unknown length, ``N`` follows the documents seen
      (``docs/engine.md``), as for every skvi estimator.  scikit-learn
      scales every minibatch by ``total_samples=1e6`` whatever the stream's
      size (its issue #8943), which makes the topics of a smaller stream
      far too confident; pass ``total_samples=1e6`` for its steps.
    - An online ``fit`` stops when it stops improving (``tol``; the
      engine's rule on a small sample of the documents, ``docs/watching.md``),
      and sets ``converged_``; scikit-learn's runs ``max_iter`` passes
      unless ``evaluate_every`` is positive.  ``tol=0`` runs them all.
    - Online fits default to minibatches of 1024 documents: the first,
      large steps on scikit-learn's 128, each scaled up to the corpus,
      settle the topics in a poorer local optimum (see the user guide).
      Pass ``batch_size=128`` for scikit-learn's ``partial_fit`` steps.
    - ``doc_topic_prior`` may be a vector of length ``n_components``
      (an asymmetric prior), and priors are not limited to ``[0, 1]``.
    - ``learn_priors=True`` updates the priors by empirical Bayes during
      fitting (Newton steps on the ELBO, damped by the same ``rho_t``):
      ``doc_topic_prior_`` becomes an asymmetric vector and
      ``topic_word_prior_`` a learned symmetric value.
    - ``n_batch_iter_`` counts the steps taken (scikit-learn's starts at 1);
      the step sizes are identical: step ``t`` uses
      ``(learning_offset + t) ** -learning_decay``.
    - Online ``fit`` visits the documents in a new random order each pass
      (scikit-learn goes in row order).
    - Non-integer counts (e.g. tf-idf weights) are accepted, as in
      scikit-learn, and act as fractional token counts.
    - ``fit``, ``partial_fit``, ``score`` and ``perplexity`` take a
      ``sample_weight`` per document: a document of weight 2 counts as the
      document twice (its statistics, its part of the ELBO, ``N / |S|`` and
      the running count of ``total_samples='auto'``); weight 0 drops it.
      A document's ``gamma`` does not depend on its weight, so the
      weighted fit runs one E-step per document and scales its statistics.

    ``perplexity(X)`` and ``score(X)`` keep scikit-learn's meaning: the ELBO
    of X with ``theta`` inferred from the same words.  To compare held-out
    perplexities across models or libraries use
    :func:`skvi.metrics.document_completion_perplexity`.

    Parameters
    ----------
    n_components : int, default=10
        Number of topics.
    doc_topic_prior : float, array-like of shape (n_components,) or None, default=None
        Prior ``alpha`` of the document-topic proportions; None means
        ``1 / n_components``.
    topic_word_prior : float or None, default=None
        Prior ``eta`` of the topic-word distributions; None means
        ``1 / n_components``.
    learning_method : {'batch', 'online'}, default='batch'
        ``'batch'``: coordinate ascent on all documents each pass.
        ``'online'``: natural-gradient steps on minibatches.
    learning_decay : float, default=0.7
        ``kappa`` of the default schedule; values in ``(0.5, 1]`` satisfy
        the Robbins-Monro conditions.  A value of 0.5 or less, which
        scikit-learn accepts silently, is accepted with a
        ``ConvergenceWarning`` when the steps follow it.
    learning_offset : float, default=10.0
        ``tau`` of the default schedule.
    max_iter : int or None, default=None
        Most passes over the data in ``fit``.  None: 10 for a batch fit
        (scikit-learn's default: it runs them all unless ``evaluate_every``
        is positive) and 50 for an online fit, which stops earlier by its
        rule (``tol``).
    batch_size : int, default=1024
        Documents per minibatch.  Online ``fit`` cuts each pass into
        ``ceil(N / batch_size)`` near-equal minibatches (a corpus of at
        most ``batch_size`` documents is fitted by batch passes);
        ``partial_fit`` steps on consecutive slices of ``batch_size``
        documents, as scikit-learn does (whose default is 128).
    evaluate_every : int, default=-1
        Compute the full ELBO (and perplexity) every this many passes in
        ``fit``, recording it in ``lower_bounds_`` and stopping when the
        perplexity changes by less than ``perp_tol``, as scikit-learn does.
        ``<= 0``: a batch fit never evaluates it and runs ``max_iter``
        passes; an online fit stops by the engine's rule (``tol``).
    tol : float, default=1e-4
        The online rule's tolerance (``evaluate_every <= 0``): the ELBO,
        estimated on a fixed sample of the documents at a few points of
        every pass, must beat its best by more than its noise and by this
        relative change; the fit stops after a few checks without such an
        improvement.  ``0`` runs every one of ``max_iter`` passes.
    total_samples : float or 'auto', default='auto'
        ``N`` in the ``N / |S|`` scaling of ``partial_fit``; ``fit`` uses
        the number of documents.  ``'auto'``: the documents seen by
        ``partial_fit``, divided by ``1 -`` the random initial topics'
        remaining weight, so that the topics' data part holds exactly the
        documents seen (``docs/engine.md``).  A number: the stream's
        length, known in advance (scikit-learn's default is ``1e6``).
    perp_tol : float, default=0.1
        Perplexity tolerance of the stopping rule (with ``evaluate_every``).
    mean_change_tol : float, default=1e-3
        E-step stopping tolerance on the mean absolute change of a
        document's ``gamma``.
    max_doc_update_iter : int, default=100
        Most E-step iterations per document.
    n_jobs : int or None, default=None
        Threads for the E-step (the documents of a minibatch are split
        into ``n_jobs`` blocks of about equal size, each of at least
        6,000 stored word counts); None means 1 and -1 all cores.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial topics, the E-step's random initial ``gamma`` and
        the document order of online ``fit``.
    learn_priors : bool, default=False
        Learn ``doc_topic_prior_`` and ``topic_word_prior_`` by empirical
        Bayes during fitting.
    inference : {'vb', 'cvb0'}, default='vb'
        The documents' local step.  ``'vb'``: mean-field variational Bayes
        (Blei et al.; Hoffman et al.), as scikit-learn.  ``'cvb0'``: the
        zero-order collapsed variational update of Asuncion et al., "On
        smoothing and inference for topic models": a word's topic
        responsibilities are proportional to ``E[beta_kw] (N_dk +
        alpha_k)``, ``N_dk`` the document's expected topic counts, where
        VB has ``exp(E[log beta_kw] + E[log theta_dk])``.  Online fits then
        take the steps of stochastic CVB0 (Foulds et al., "Stochastic
        collapsed variational Bayesian inference for latent Dirichlet
        allocation"), which like this update counts each word's own
        responsibilities in ``N_dk`` (Asuncion et al.'s exact CVB0 leaves
        them out).  The topics' step, ``components_`` (the prior plus
        expected topic-word counts) and the cost of a pass are those of
        VB; with priors below 1, held-out words are predicted better (see
        the user guide).  ``transform`` folds documents in by the same
        update; ``score``, ``perplexity`` and ``evaluate_every`` use the
        mean-field ELBO of ``q(beta) = Dirichlet(components_)``, and
        ``heldout_word_probabilities`` and ``log_evidence`` fold documents
        in by VB, as they do for any topics.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Variational Dirichlet parameters ``lambda`` of the topics.
    exp_dirichlet_component_ : ndarray of shape (n_components, n_features)
        ``exp(E[log beta])``.
    doc_topic_prior_ : float or ndarray of shape (n_components,)
        Prior of the document-topic proportions used (or learned).
    topic_word_prior_ : float
        Prior of the topic-word distributions used (or learned).
    bound_ : float or None
        Perplexity of the training data after ``fit`` (scikit-learn's
        meaning); None when they hold no words (every count zero), whose
        perplexity is undefined (scikit-learn's is then NaN).
    n_batch_iter_ : int
        Natural-gradient steps taken.
    n_iter_ : int
        Passes over the data made by ``fit``.
    natural_params_ : dict
        ``{'topics': (components_ - 1,)}``: the engine's natural parameters.
    lower_bounds_ : list of float
        ELBO at each evaluated pass of ``fit`` (see ``evaluate_every``)
        or after each ``partial_fit`` (the minibatch estimate).
    lower_bound_ : float or None
        The last entry of ``lower_bounds_``.
    n_samples_seen_ : int or float
        Documents processed (their total weight with ``sample_weight``).
    n_rejected_steps_ : int
        Steps rejected by step safety.
    n_features_in_ : int
        Vocabulary size.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    sklearn.decomposition.LatentDirichletAllocation : the reference implementation.
    skvi.metrics.document_completion_perplexity : held-out evaluation.

    Examples
    --------
    >>> from sklearn.datasets import make_multilabel_classification
    >>> from skvi import SVILatentDirichletAllocation
    >>> X, _ = make_multilabel_classification(random_state=0)
    >>> lda = SVILatentDirichletAllocation(n_components=5, random_state=0)
    >>> lda.fit(X).transform(X[-2:]).shape
    (2, 5)
    >>> bool(abs(lda.transform(X[-2:]).sum(axis=1) - 1).max() < 1e-12)
    True
    """

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "doc_topic_prior": [None, Interval(numbers.Real, 0, None, closed="neither"), "array-like"],
        "topic_word_prior": [None, Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [None, Interval(numbers.Integral, 0, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 0, None, closed="neither")],
        "evaluate_every": [Interval(numbers.Integral, None, None, closed="neither")],
        "perp_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "mean_change_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_doc_update_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "learn_priors": ["boolean"],
        "inference": [StrOptions({"vb", "cvb0"})],
    }

    def __init__(
        self,
        n_components=10,
        *,
        doc_topic_prior=None,
        topic_word_prior=None,
        learning_method="batch",
        learning_decay=0.7,
        learning_offset=10.0,
        max_iter=None,
        batch_size=1024,
        evaluate_every=-1,
        total_samples="auto",
        perp_tol=1e-1,
        tol=1e-4,
        mean_change_tol=1e-3,
        max_doc_update_iter=100,
        n_jobs=None,
        verbose=0,
        random_state=None,
        learning_rate=None,
        step_safety=True,
        learn_priors=False,
        inference="vb",
    ):
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.learning_method = learning_method
        self.learning_decay = learning_decay
        self.learning_offset = learning_offset
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.evaluate_every = evaluate_every
        self.total_samples = total_samples
        self.perp_tol = perp_tol
        self.tol = tol
        self.mean_change_tol = mean_change_tol
        self.max_doc_update_iter = max_doc_update_iter
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.learning_rate = learning_rate
        self.step_safety = step_safety
        self.learn_priors = learn_priors
        self.inference = inference

    # ------------------------------------------------------------ public API
    @property
    def _settings(self):
        # As scikit-learn: partial_fit steps on slices of batch_size
        # documents (the last takes the rest), and the ELBO is evaluated
        # every evaluate_every passes (the engine reads the parameter, and
        # keeps scikit-learn's silence when that rule stops a fit at
        # max_iter), stopping on the perplexity's change (perp_tol); bound_
        # is the training perplexity at the end.  Without evaluate_every, a batch
        # fit runs its passes (as scikit-learn's) and an online fit stops by
        # the engine's rule, whose checks cost a few percent of the fit.
        every = self.evaluate_every
        online_rule = every <= 0 and self.learning_method == "online"
        return ModelSettings(
            {"topics": Dirichlet},
            parallel=True,
            convergence=None if online_rule else self._perplexity_converged,
            transient=("_buffers",),
            # A stream of unknown length takes streaming Bayes' steps
            # (skvi.engine.stream: a stream in its file order forgets less).
            stream={"batches": "remainder", "steps": "bayes"},
        )

    def transform(self, X, *, normalize=True):
        """Infer the topic proportions of each document of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.
        normalize : bool, default=True
            Return ``E[theta]`` (rows summing to one) when True, the
            variational Dirichlet parameters ``gamma`` when False (with
            ``inference='cvb0'``: ``doc_topic_prior`` plus the document's
            expected topic counts).

        Returns
        -------
        doc_topic_distr : ndarray of shape (n_samples, n_components)
            Topic proportions of each document.
        """
        check_is_fitted(self)
        X = self._check_docs(X, reset=False)
        gamma = self._infer(X, fold_in=True)
        if normalize:
            gamma /= gamma.sum(axis=1, keepdims=True)
        return gamma

    def fit_transform(self, X, y=None, *, sample_weight=None, normalize=True):
        """Fit to X, then return its topic proportions.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Document weights of the fit, see :meth:`fit`; every document's
            proportions are returned, whatever its weight.
        normalize : bool, default=True
            See :meth:`transform`.

        Returns
        -------
        doc_topic_distr : ndarray of shape (n_samples, n_components)
            Topic proportions of each document.
        """
        return self.fit(X, sample_weight=sample_weight).transform(X, normalize=normalize)

    def score(self, X, y=None, sample_weight=None):
        """Return the ELBO of X (scikit-learn's approximate log-likelihood).

        ``theta`` of each document is inferred from X itself; see
        :func:`skvi.metrics.document_completion_perplexity` for a held-out
        measure.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative document weights: each document's part of the ELBO
            counts this many times (the topics' part once).

        Returns
        -------
        score : float
            The evidence lower bound (higher is better).
        """
        check_is_fitted(self)
        X, weight = _docs(self._check_docs(_with_weights(X, sample_weight), reset=False))
        gamma = self._infer(X)
        return self._approx_bound(X, gamma, sub_sampling=False, weight=weight)

    def perplexity(self, X, sub_sampling=False, *, sample_weight=None):
        """Return ``exp(-ELBO / n_words)`` of X, scikit-learn's perplexity.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.
        sub_sampling : bool, default=False
            Scale the document part as if X were a sample of
            ``total_samples`` documents (with ``'auto'``, of the documents
            the fit has seen).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative document weights: a document of weight 2 counts
            twice, in the ELBO and in the number of words.

        Returns
        -------
        score : float
            Perplexity (lower is better).
        """
        check_is_fitted(self)
        X, weight = _docs(self._check_docs(_with_weights(X, sample_weight), reset=False))
        gamma = self._infer(X)
        return self._perplexity_of(X, gamma, sub_sampling=sub_sampling, weight=weight)

    def heldout_word_probabilities(self, X_observed, X_heldout):
        """``p(w | d)`` of held-out words, each document's topics fitted to its other words.

        The document-completion protocol of
        :func:`skvi.metrics.document_completion_perplexity`: with the topics
        fixed, each document's variational Dirichlet is fitted to
        ``X_observed`` by the mean-field E-step (from ``gamma = 1``; at most
        ``max_doc_update_iter`` iterations, to ``mean_change_tol``), and a
        held-out word ``w`` has ``p(w | d) = sum_k E[theta_dk] E[beta_kw]``.
        The E-step is VB's whatever ``inference`` fitted the topics, so that
        the number means the same for every model.

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
        >>> from skvi import SVILatentDirichletAllocation
        >>> X = np.random.RandomState(0).poisson(1.0, size=(30, 6))
        >>> lda = SVILatentDirichletAllocation(n_components=2, random_state=0).fit(X)
        >>> held = sp.csr_matrix(X[:2])
        >>> lda.heldout_word_probabilities(sp.csr_matrix(X[2:4]), held).shape == (held.nnz,)
        True
        """
        check_is_fitted(self)
        X_observed, X_heldout = check_heldout_counts(
            X_observed, X_heldout, self.components_.shape[1], "heldout_word_probabilities"
        )
        return heldout_probabilities(
            np.asarray(self.components_, dtype=np.float64),
            np.asarray(self._alpha_vector(), dtype=np.float64),
            X_observed,
            X_heldout,
            self.max_doc_update_iter,
            self.mean_change_tol,
        )

    def log_evidence(self, X, *, n_samples=1000, inflation=1.0, random_state=None):
        """Importance-sampling estimate of ``log p(w_d)`` of each document.

        The test likelihood of "Monte Carlo structured SVI for two-level
        non-conjugate models" (its eq. 105), as for the correlated topic
        model: with the topics fixed at ``E[beta]``, each document's
        variational Dirichlet ``gamma_d`` is fitted to all its words by the
        E-step (from ``gamma_d = 1``), and ``n_samples`` draws from
        ``Dirichlet(gamma_d / (1 + inflation))`` integrate ``theta_d`` out
        of ``p(w_d | theta_d) Dirichlet(theta_d; alpha)``
        (:func:`skvi.metrics.lda_log_evidence`).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts of the documents.
        n_samples : int, default=1000
            Draws per document.
        inflation : float, default=1.0
            The proposal's concentration is ``gamma_d / (1 + inflation)``:
            the same mean, about ``1 + inflation`` times the variance.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws.

        Returns
        -------
        log_evidence : ndarray of shape (n_docs,)
            The estimate of ``log p(w_d)`` (a lower bound in expectation).

        Examples
        --------
        >>> import numpy as np
        >>> from skvi import SVILatentDirichletAllocation
        >>> X = np.random.RandomState(0).poisson(1.0, size=(30, 6))
        >>> lda = SVILatentDirichletAllocation(n_components=2, random_state=0).fit(X)
        >>> lda.log_evidence(X[:3], random_state=0).shape
        (3,)
        """
        check_is_fitted(self)
        X = self._check_docs(X, reset=False)
        lam = np.asarray(self.components_, dtype=np.float64)
        return lda_log_evidence(
            X,
            np.asarray(self._alpha_vector(), dtype=np.float64),
            lam / lam.sum(axis=1, keepdims=True),
            n_samples=n_samples,
            inflation=inflation,
            max_iter=self.max_doc_update_iter,
            tol=self.mean_change_tol,
            random_state=random_state,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float32", "float64"]
        return tags

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    # ------------------------------------------------------------ engine hooks
    def _check_docs(self, X, reset):
        if isinstance(X, Rows):
            # Documents with weights: the counts as below, then the weights.
            # Documents of weight 0 are dropped (they are ignored), and
            # weights that are all 1 become None: the unweighted code path.
            Xv = self._check_docs(X.X, reset)
            weight = check_row_weights(X.weight, Xv)
            keep = weight > 0
            if not keep.all():
                Xv, weight = Xv[keep], weight[keep]
            return Xv if np.all(weight == 1.0) else Rows(Xv, None, weight)
        check_sparse_structure(X)
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse=("csr", "csc"),
            dtype=[np.float64, np.float32],
        )
        check_non_negative(X, f"{type(self).__name__} (input X)")
        if not sp.issparse(X):
            X = sp.csr_matrix(X)
        elif X.format != "csr":
            X = X.tocsr()
        if not reset:
            # The fitted topics keep the dtype of the first fit; later input
            # (transform, score, further partial_fit) is computed in it.
            X = X.astype(self._dtype, copy=False)
        return X

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        return self._check_docs(_with_weights(X, sample_weight), reset)

    def _data_summary(self, data, local=None):
        if local is not None:
            return self._prior_statistics(local)
        # The training documents' words (each counted its weight times): the
        # perplexity of the stopping rule and of bound_.
        return _n_words(*_docs(data))

    def _local_draws(self, data, random_state):
        # Each document's E-step starts from a random gamma, drawn for the
        # whole minibatch before its blocks run.
        return random_state.gamma(100.0, 0.01, (data.shape[0], self.n_components)).astype(
            self._dtype
        )

    def _check_priors(self):
        K = self.n_components
        if self.doc_topic_prior is None:
            alpha = 1.0 / K
        elif np.ndim(self.doc_topic_prior) == 0:
            alpha = float(self.doc_topic_prior)
        else:
            alpha = np.asarray(self.doc_topic_prior, dtype=np.float64)
            if alpha.shape != (K,):
                raise ValueError(
                    f"doc_topic_prior must be a float or have shape (n_components,)="
                    f"({K},), got shape {alpha.shape}."
                )
            if not np.all(np.isfinite(alpha) & (alpha > 0)):
                raise ValueError("doc_topic_prior must be finite and positive.")
            alpha = alpha.copy()
        eta = 1.0 / K if self.topic_word_prior is None else float(self.topic_word_prior)
        self.doc_topic_prior_ = alpha
        self.topic_word_prior_ = eta

    def _initialize_globals(self, data, random_state, summary):
        # A corpus without words fits too, as scikit-learn's: its topics'
        # statistics are zero, so each step moves them towards the prior.
        X, _ = _docs(data)
        self._check_priors()
        self._dtype = X.dtype
        self._n_words = float(summary)
        lam = random_state.gamma(100.0, 0.01, (self.n_components, X.shape[1]))
        # Stored word-major (Fortran order): the E-step and the update read
        # and write the topic weights of a minibatch's words, each one
        # contiguous run of n_components values.
        return {"topics": (np.asfortranarray(lam.astype(X.dtype, copy=False) - 1.0),)}

    def _prior_natural(self):
        return {"topics": (np.asarray(self.topic_word_prior_ - 1.0, dtype=self._dtype),)}

    def _alpha_vector(self):
        return np.broadcast_to(
            np.asarray(self.doc_topic_prior_, dtype=self._dtype), (self.n_components,)
        ).copy()

    def _topic_columns(self, topics, cols):
        """``exp(E[log beta])`` of the words ``cols``, shape (len(cols), K)."""
        return exp_digamma_diff(topics[0].T, self._lambda_totals(topics), rows=cols, offset=1.0)

    def _step_columns(self, topics, cols):
        """The topic weights of the local step at the words ``cols``, shape (len(cols), K).

        ``exp(E[log beta])`` for VB, ``E[beta] = lambda / sum(lambda)`` for CVB0.
        """
        if self.inference != "cvb0":
            return self._topic_columns(topics, cols)
        lam = topics[0].T[cols] + 1.0
        return np.ascontiguousarray(lam / self._lambda_totals(topics), dtype=lam.dtype)

    @staticmethod
    def _lambda_totals(topics):
        """Each topic's ``sum_w lambda_kw``, cached by the factor.

        The online update computes them while writing the new topics (see
        :meth:`_update_factor`) and hands them over with the new value.
        """
        return topics.cached("totals", lambda f: f[0].sum(axis=1, dtype=np.float64) + f[0].shape[1])

    def _run_e_step(self, X, eb_t, gamma, sstats_t=None, max_iter=None, expected_theta=False):
        if max_iter is None:
            max_iter = self.max_doc_update_iter
        return e_step(
            X,
            eb_t,
            self._alpha_vector(),
            gamma,
            max_iter,
            self.mean_change_tol,
            sstats_t,
            expected_theta,
        )

    def _local_step(self, data, params, draws):
        X, weight = _docs(data)
        topics = params["topics"]
        n_features = topics[0].shape[1]
        used = np.zeros(n_features, dtype=bool)
        used[X.indices] = True
        cols = np.flatnonzero(used)
        remap = np.cumsum(used, dtype=X.indices.dtype) - 1
        Xc = sp.csr_matrix((X.data, remap[X.indices], X.indptr), shape=(X.shape[0], cols.size))
        eb_t = self._step_columns(topics, cols)
        gamma = draws
        sstats_t = np.zeros_like(eb_t)
        cvb0 = self.inference == "cvb0"
        if weight is None:
            _, loglik = self._run_e_step(Xc, eb_t, gamma, sstats_t, expected_theta=cvb0)
        else:
            # A document's gamma does not depend on its weight; its
            # statistics and bound are its counts' times the weight.  With
            # max_iter=0 the E-step only reads gamma and computes them from
            # the weighted counts (the ratios n_dw / phinorm_dw are linear
            # in the counts, phinorm_dw does not depend on them).
            self._run_e_step(Xc, eb_t, gamma, expected_theta=cvb0)
            Xc = _weighted_counts(Xc, weight)
            _, loglik = self._run_e_step(
                Xc, eb_t, gamma.copy(), sstats_t, max_iter=0, expected_theta=cvb0
            )
        sstats_t *= eb_t
        # With weights, "X" holds the weighted counts (for _local_bound).
        return {
            "gamma": gamma,
            "cols": cols,
            "X": Xc,
            "sstats": sstats_t,
            "loglik": loglik,
            "weight": weight,
        }

    def _expected_stats(self, name, X, local, params):
        # Non-zero only at the words of the minibatch (rows of the
        # word-major topics).
        return RowStatistics(local["cols"], (local["sstats"],))

    def _update_factor(self, name, current, stats, ctx):
        # The engine's blend, lambda <- (1 - rho) lambda + rho (eta + scale
        # sstats), written for statistics that are non-zero only at the
        # minibatch's words: one pass over the topics, in column blocks of
        # words on the fit's executor.
        cols, (sstats,) = stats.rows, stats.values
        rho, scale, grads = ctx.rho, ctx.scale, ctx.grads
        (natural,) = current
        prior = ctx.prior["topics"][0]
        new = self._spare_buffer(natural)

        def part(words):
            lo, hi = np.searchsorted(cols, [words.start, words.stop])
            # Untouched words are convex combinations of valid values; the
            # touched ones must stay above -1 (lambda > 0).
            return blend(
                new.T[words],
                natural.T[words],
                1.0 - rho,
                rho * float(prior),
                rows=cols[lo:hi] - words.start,
                values=sstats[lo:hi],
                scale=rho * scale,
                lower=-1.0,
            )

        parts = self._map_columns(part, natural.shape[1])
        totals = parts[0][0] if len(parts) == 1 else np.sum([p[0] for p in parts], axis=0)
        valid = all(p[1] for p in parts)
        if grads is not None:
            grad = np.asfortranarray(prior - natural)
            add_rows(grad.T, cols, sstats, scale)
            grads.append(grad)
        return Factor((new,), Dirichlet, {"totals": totals + new.shape[1]}), valid

    def _spare_buffer(self, natural):
        """One of two buffers for the updated topics, never ``natural`` itself.

        The engine keeps ``natural`` until the step is accepted, so the new
        values go to the other buffer; alternating saves allocating (and
        page-faulting) a topics-sized array at every step.
        """
        buffers = getattr(self, "_buffers", None)
        if (
            buffers is None
            or buffers[0].shape != natural.shape
            or buffers[0].dtype != natural.dtype
        ):
            buffers = self._buffers = [np.empty_like(natural, order="F") for _ in range(2)]
        return buffers[1] if buffers[0] is natural else buffers[0]

    def _local_bound(self, X, local, params):
        if local is None:
            # As scikit-learn's bound: an E-step from gamma = 1.
            docs, weight = _docs(X)
            eb_t = self._exp_elog_beta_t_of(params["topics"])
            gamma = self._infer(docs, eb_t=eb_t)
            return self._approx_bound(docs, gamma, False, weight, eb_t=eb_t, with_topics=False)
        # The data part at the (updated) topics with gamma fixed and phi
        # at its optimum: one pass over the words, no gamma update.
        eb_t = self._topic_columns(params["topics"], local["cols"])
        _, loglik = self._run_e_step(local["X"], eb_t, local["gamma"].copy(), max_iter=0)
        return loglik + self._doc_bound(local["gamma"], local["weight"])

    def _doc_bound(self, gamma, weight=None):
        """``sum_d w_d (E[log p(theta_d | alpha)] - E[log q(theta_d)])``: minus the KLs."""
        q = Dirichlet(gamma.astype(np.float64, copy=False))
        prior = Dirichlet(np.asarray(self._alpha_vector(), dtype=np.float64))
        if weight is None:
            return -float(np.sum(q.kl(prior)))
        return -float(np.dot(weight, q.kl(prior)))

    def _global_bound(self, params):
        # Minus the topics' KL to Dirichlet(eta): per topic
        # gammaln(sum lam) - sum gammaln(lam) - gammaln(V eta) + V gammaln(eta)
        # + sum (lam - eta) E[log beta], the sums over words in column blocks
        # on the fit's executor.
        natural = params["topics"][0]
        K, V = natural.shape
        eta = float(self.topic_word_prior_)
        totals = self._lambda_totals(params["topics"])
        digamma_total = digamma(totals)

        def part(words):
            lam = natural[:, words].astype(np.float64) + 1.0
            e_log = digamma(lam) - digamma_total[:, None]
            return np.sum(gammaln(lam), axis=1), np.sum((lam - eta) * e_log, axis=1)

        parts = self._map_columns(part, V)
        sum_gammaln = np.sum([p[0] for p in parts], axis=0)
        cross = np.sum([p[1] for p in parts], axis=0)
        kl = gammaln(totals) - sum_gammaln - gammaln(V * eta) + V * gammaln(eta) + cross
        return -float(np.sum(np.maximum(kl, 0.0)))

    def _perplexity_converged(self, previous, bound):
        n_words = max(self._n_words, np.finfo(float).tiny)
        return abs(np.exp(-previous / n_words) - np.exp(-bound / n_words)) < self.perp_tol

    def _prior_statistics(self, local):
        """The documents' number and sum of ``E[log theta_d]``, for alpha's step."""
        if not self.learn_priors:
            return None
        gamma = local["gamma"].astype(np.float64)
        e_log = digamma(gamma) - digamma(gamma.sum(axis=1))[:, None]
        weight = local["weight"]
        if weight is None:
            return (np.array(float(gamma.shape[0])), e_log.sum(axis=0))
        return (np.array(float(np.sum(weight))), weight @ e_log)

    def _update_hyperparameters(self, hyper, ctx):
        if not self.learn_priors or ctx.end_of_pass:
            return False
        rho = ctx.rho
        # The documents' count, or total weight (a float; exact for counts).
        n = float(hyper[0]) if hyper is not None else 0.0
        if n:
            self.doc_topic_prior_ = _dirichlet_newton(
                np.asarray(self._alpha_vector(), dtype=np.float64), n, hyper[1] / n, rho
            )
        lam = self.natural_params_["topics"][0].astype(np.float64) + 1.0
        K, V = lam.shape
        s = float(np.sum(digamma(lam)) - V * np.sum(digamma(lam.sum(axis=1))))
        eta = float(self.topic_word_prior_)
        grad = K * V * (digamma(V * eta) - digamma(eta)) + s
        hess = K * V * (V * polygamma(1, V * eta) - polygamma(1, eta))
        new = eta - rho * grad / hess
        if np.isfinite(new) and new > 0:
            self.topic_word_prior_ = float(new)
        return True

    def _exp_elog_beta_t_of(self, topics):
        """``exp(E[log beta])`` of every word, shape (n_features, K), cached by the factor.

        In column blocks of words on the fit's executor (scipy's digamma, as
        scikit-learn's ``exp_dirichlet_component_``).
        """

        def compute(factor):
            natural = factor[0]
            total = digamma(natural.sum(axis=1, dtype=np.float64) + natural.shape[1])
            out = np.empty((natural.shape[1], natural.shape[0]), dtype=self._dtype)

            def part(words):
                lam = natural[:, words] + 1.0
                out[words] = np.exp(digamma(lam) - total[:, None]).astype(self._dtype, copy=False).T

            self._map_columns(part, natural.shape[1])
            return out

        return topics.cached("exp_elog_beta_t", compute)

    def _on_params_updated(self):
        topics = self.natural_params_["topics"]
        self.components_ = np.ascontiguousarray(topics[0] + 1.0, dtype=self._dtype)
        self._exp_elog_beta_t = self._exp_elog_beta_t_of(topics)
        self.exp_dirichlet_component_ = np.ascontiguousarray(self._exp_elog_beta_t.T)
        final = self.__dict__.pop("_final_bound", None)
        if final is not None:
            # The training perplexity, as scikit-learn reports it; of no
            # words it is undefined (scikit-learn's is then NaN, 0 / 0).
            self.bound_ = float(np.exp(-final / self._n_words)) if self._n_words > 0 else None
        self._buffers = None  # the step's spare topics are not kept between calls

    # ------------------------------------------------------------ inference
    def _infer(self, X, fold_in=False, eb_t=None):
        """E-step from ``gamma = 1`` with the fitted topics (no sstats).

        Mean-field VB (the ELBO's), or with ``fold_in`` the fit's own local
        step (``inference``); ``eb_t`` the topics' ``exp(E[log beta])``
        (default: the fitted topics').  The documents run in blocks on
        ``n_jobs`` threads of this call's own.
        """
        cvb0 = fold_in and self.inference == "cvb0"
        if cvb0:
            lam = self.components_
            cols_t = np.ascontiguousarray((lam / lam.sum(axis=1, keepdims=True)).T)
        else:
            cols_t = self._exp_elog_beta_t if eb_t is None else eb_t

        def run(docs):
            gamma = np.ones((docs.shape[0], self.n_components), dtype=self._dtype)
            self._run_e_step(docs, cols_t, gamma, expected_theta=cvb0)
            return gamma

        parts = self._map_row_blocks(run, X, by="work")
        return parts[0] if len(parts) == 1 else np.vstack(parts)

    def _approx_bound(self, X, gamma, sub_sampling, weight=None, eb_t=None, with_topics=True):
        """The ELBO of X at ``gamma``, each document's part times its weight."""
        Xw = X if weight is None else _weighted_counts(X, weight)
        eb_t = self._exp_elog_beta_t if eb_t is None else eb_t
        _, loglik = self._run_e_step(Xw, eb_t, gamma.copy(), max_iter=0)
        doc = loglik + self._doc_bound(gamma, weight)
        if sub_sampling:
            doc *= self._corpus_size() / _n_docs(X, weight)
        return doc + self._global_bound(self.natural_params_) if with_topics else doc

    def _corpus_size(self):
        """The documents X stands for with ``sub_sampling``: ``total_samples``, or those seen."""
        if self.total_samples == "auto":
            return float(self.n_samples_seen_)
        return float(self.total_samples)

    def _perplexity_of(self, X, gamma, sub_sampling, weight=None):
        n_words = _n_words(X, weight)
        if n_words <= 0:
            raise ValueError("X holds no words (every count is zero): its perplexity is undefined.")
        bound = self._approx_bound(X, gamma, sub_sampling, weight)
        if sub_sampling:
            n_words *= self._corpus_size() / _n_docs(X, weight)
        return float(np.exp(-bound / n_words))


def _with_weights(X, sample_weight):
    """X, or X with its document weights for :meth:`_check_docs` to check."""
    return X if sample_weight is None else Rows(X, None, sample_weight)


def _docs(data):
    """``(X, weight)`` of validated documents; weight is None for unit weights."""
    if isinstance(data, Rows):
        return data.X, data.weight
    return data, None


def _weighted_counts(X, weight):
    """CSR X with each row's counts times its weight (in the dtype of X)."""
    data = X.data * np.repeat(weight, np.diff(X.indptr))
    return sp.csr_matrix((data.astype(X.dtype, copy=False), X.indices, X.indptr), shape=X.shape)


def _n_docs(X, weight):
    """The number of documents, or their total weight."""
    return X.shape[0] if weight is None else float(np.sum(weight))


def _n_words(X, weight):
    """The number of words of X, each document's counted ``weight`` times."""
    if weight is None:
        return float(X.sum())
    return float(np.dot(weight, np.asarray(X.sum(axis=1)).ravel()))


def _dirichlet_newton(alpha, n, logphat, rho):
    """One damped Newton step for a Dirichlet prior (Minka 2000; gensim).

    Maximises ``n * (log Gamma(sum alpha) - sum log Gamma(alpha)
    + (alpha - 1) . logphat)`` using the diagonal-plus-rank-one Hessian.
    The step is skipped when it would leave an entry non-positive.
    """
    grad = n * (digamma(alpha.sum()) - digamma(alpha) + logphat)
    c = n * polygamma(1, alpha.sum())
    q = -n * polygamma(1, alpha)
    b = np.sum(grad / q) / (1.0 / c + np.sum(1.0 / q))
    step = -(grad - b) / q
    new = alpha + rho * step
    if np.all(np.isfinite(new)) and np.all(new > 0):
        return new
    return alpha
