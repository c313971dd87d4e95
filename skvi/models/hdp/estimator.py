"""The hierarchical Dirichlet process topic model by online variational inference."""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ...engine import ModelSettings, SVIEstimator
from ...engine.data import Rows, check_row_weights
from ...expfam import Dirichlet
from ...validation import check_feature_magnitude, check_heldout_counts, check_sparse_structure
from ..lda.estep import mixture_probabilities
from .estep import expected_log_sticks, hdp_local_step, log_mean_sticks, stick_kl

__all__ = ["SVIHierarchicalDirichletProcess"]

#: Topics a document's components may point at: its most likely ones
#: (:func:`~skvi.models.hdp.estep.candidate_topics`).  A document of a
#: fitted model uses few of the corpus's topics, and the local step's cost
#: grows with the topics it considers.
_N_CANDIDATES = 20
#: Each topic starts from one training document, the mean document's
#: counts scaled to this share of the mass of LDA's flat start (see
#: ``_initialize_globals``).
_SEED_WEIGHT = 0.5
#: Least cosine distance of a seed document to every other seed.
_SEED_DISTANCE = 0.5
#: Most rows the seed documents are drawn from (a uniform subsample, the
#: same in memory and on a cluster).
_START_ROWS = 2048
#: A document's first local iterations leave out the sticks (Wang et al.'s
#: code: its components first find the topics of its words).
_PLAIN_ITER = 3


class SVIHierarchicalDirichletProcess(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, SVIEstimator
):
    """Hierarchical Dirichlet process topic model by online variational inference.

    The model and algorithm of Wang, Paisley and Blei, "Online variational
    inference for the hierarchical Dirichlet process", with the corpus
    truncated at ``T = n_components`` topics and each document at ``K =
    n_document_components`` components::

        beta'_t ~ Beta(1, corpus_concentration)      corpus sticks, t < T
        beta_t  ~ Dirichlet(topic_word_prior)        topics
        pi'_dk  ~ Beta(1, document_concentration)    document sticks, k < K
        c_dk    ~ Categorical(sigma(beta'))          component k's topic
        z_dn    ~ Categorical(sigma(pi'_d)),   w_dn ~ Categorical(beta_{c_{d z_dn}})

    with ``sigma`` the stick-breaking weights.  The global factors are
    ``q(beta_t) = Dirichlet(components_[t])`` and ``q(beta'_t) =
    Beta(corpus_sticks_[t, 0], corpus_sticks_[t, 1])``; a document's local
    step (:mod:`skvi.models.hdp.estep`) fits ``q(c_dk)``, ``q(z_dn)`` and
    ``q(pi'_dk)`` by coordinate ascent, all the documents of a minibatch at
    once.  Both global factors are conjugate, so skvi's engine takes the
    paper's natural-gradient steps on them (``rho_t = (t +
    learning_offset) ** -learning_decay``) and a batch fit is coordinate
    ascent.  The topics that the data do not need keep (nearly) no weight:
    ``topic_weights_`` are their expected corpus proportions.

    Parameter names follow :class:`~skvi.SVILatentDirichletAllocation`
    where they mean the same.  The paper's ``gamma`` and ``alpha`` are
    ``corpus_concentration`` and ``document_concentration``; gensim's
    ``HdpModel`` calls the truncations ``T`` and ``K``, and the schedule's
    ``tau`` and ``kappa``.  As in Wang et al.'s code, a document's first
    local iterations leave the sticks out; unlike gensim's, its local step
    starts from components anchored at its own words (deterministic, see
    :mod:`skvi.models.hdp.estep`), its components point only at its most
    likely topics (:func:`~skvi.models.hdp.estep.candidate_topics`), each
    topic starts from one training document, and the topics are never
    reordered.

    Parameters
    ----------
    n_components : int, default=150
        ``T``, the corpus truncation: most topics.
    n_document_components : int, default=15
        ``K``, the document truncation: most components per document.
    document_concentration : float, default=1.0
        ``alpha`` of the documents' sticks ``Beta(1, alpha)``.
    corpus_concentration : float, default=1.0
        ``gamma`` of the corpus sticks ``Beta(1, gamma)``.
    topic_word_prior : float, default=0.01
        ``eta`` of the topics' Dirichlet prior.
    learning_method : {'batch', 'online'}, default='online'
        ``'online'``: natural-gradient steps on minibatches (the paper's
        algorithm); ``'batch'``: coordinate ascent on all documents.
    learning_decay : float, default=0.7
        ``kappa`` of the schedule.
    learning_offset : float, default=10.0
        ``tau`` of the schedule.
    max_iter : int, None or 'auto', default='auto'
        Most passes over the data in ``fit``.  ``'auto'``: as many as make
        10,000 documents, at least one and at most 10, so that a long
        corpus gets one pass (as Wang et al.'s algorithm makes over a
        stream) and a short one several
        (:func:`~skvi.engine.parameters.max_passes`); None: 50 for an
        online fit, 10 for a batch one.  The engine's online rule
        (``tol``) may stop the fit earlier.
    batch_size : int, default=512
        Most documents per minibatch.
    total_samples : float or 'auto', default='auto'
        ``N`` in the ``N / |S|`` scaling of ``partial_fit``.
    tol : float, default=1e-4
        The engine's stopping rule's tolerance.
    mean_change_tol : float, default=0.1
        A document's local step stops when the mean absolute change of its
        expected component counts (in words) falls below this value.
    max_doc_update_iter : int, default=100
        Most local-step iterations per document.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Variational Dirichlet parameters ``lambda`` of the topics.
    corpus_sticks_ : ndarray of shape (n_components - 1, 2)
        Variational Beta parameters ``(u_t, v_t)`` of the corpus sticks.
    topic_weights_ : ndarray of shape (n_components,)
        ``E[sigma_t(beta')]``, each topic's expected share of the corpus.
    natural_params_ : dict
        ``{'topics': (components_ - 1,), 'sticks': (corpus_sticks_ - 1,)}``.
    lower_bounds_ : list of float
        The ELBO after each evaluated pass or ``partial_fit`` step.
    n_batch_iter_ : int
        Natural-gradient steps taken.
    n_iter_ : int
        Passes over the data made by ``fit``.
    n_features_in_ : int
        Vocabulary size.

    See Also
    --------
    skvi.SVILatentDirichletAllocation : the same with a fixed number of topics.
    skvi.metrics.document_completion_perplexity : held-out evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVIHierarchicalDirichletProcess
    >>> rng = np.random.RandomState(0)
    >>> topics = np.repeat(np.eye(3), 4, axis=1) / 4.0
    >>> X = np.vstack([rng.multinomial(40, topics[d % 3]) for d in range(90)])
    >>> hdp = SVIHierarchicalDirichletProcess(n_components=6, n_document_components=3,
    ...                                       random_state=0).fit(X)
    >>> hdp.transform(X[:2]).shape
    (2, 6)
    >>> int(np.sum(hdp.topic_weights_ > 0.1))
    3
    """

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_document_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "document_concentration": [Interval(numbers.Real, 0, None, closed="neither")],
        "corpus_concentration": [Interval(numbers.Real, 0, None, closed="neither")],
        "topic_word_prior": [Interval(numbers.Real, 0, None, closed="neither")],
        "mean_change_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_doc_update_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        # 'auto': one pass over a long corpus, several over a short one
        # (the engine's max_passes): the corpus sets a default fit's length,
        # since on a long corpus the online rule runs many more passes for
        # a gain smaller than the first pass's.
        "max_iter": [
            StrOptions({"auto"}),
            None,
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
    }

    # A document's local step starts afresh at every step (from its own
    # words), and its optimum is not unique: a batch step from one local
    # optimum is coordinate ascent, but the next pass's local step may find a
    # lower one.  So batch steps are judged by the full-data ELBO, as the
    # fixed-point steps of other models are.
    _settings = ModelSettings(
        {"topics": Dirichlet, "sticks": Dirichlet},
        parallel=True,
        batch_steps="no_decrease",
        start_sample_size=_START_ROWS,
    )

    def __init__(
        self,
        n_components=150,
        *,
        n_document_components=15,
        document_concentration=1.0,
        corpus_concentration=1.0,
        topic_word_prior=0.01,
        learning_method="online",
        learning_decay=0.7,
        learning_offset=10.0,
        max_iter="auto",
        batch_size=512,
        total_samples="auto",
        tol=1e-4,
        mean_change_tol=0.1,
        max_doc_update_iter=100,
        n_jobs=None,
        verbose=0,
        random_state=None,
        learning_rate=None,
        step_safety=True,
    ):
        self.n_components = n_components
        self.n_document_components = n_document_components
        self.document_concentration = document_concentration
        self.corpus_concentration = corpus_concentration
        self.topic_word_prior = topic_word_prior
        self.learning_method = learning_method
        self.learning_decay = learning_decay
        self.learning_offset = learning_offset
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.total_samples = total_samples
        self.tol = tol
        self.mean_change_tol = mean_change_tol
        self.max_doc_update_iter = max_doc_update_iter
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.learning_rate = learning_rate
        self.step_safety = step_safety

    # ------------------------------------------------------------ public API
    def transform(self, X):
        """Infer each document's expected topic proportions.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.

        Returns
        -------
        doc_topic_distr : ndarray of shape (n_samples, n_components)
            ``E[theta_dt] = sum_k E[sigma_k(pi'_d)] q(c_dk = t)``: rows sum
            to one.
        """
        check_is_fitted(self)
        X = self._check_docs(X, reset=False)
        return self._fold_in(X, "theta")

    def score(self, X, y=None, sample_weight=None):
        """Return the ELBO of X, each document's local factors fitted to its words.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Word counts.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative document weights: each document's part of the ELBO
            counts this many times (the globals' part once).

        Returns
        -------
        score : float
            The evidence lower bound (higher is better).
        """
        check_is_fitted(self)
        X, weight = _docs(self._check_docs(_with_weights(X, sample_weight), reset=False))
        bound = self._fold_in(X, "bound")
        w = np.ones(X.shape[0]) if weight is None else weight
        return float(w @ bound) + self._global_bound(self.natural_params_)

    def heldout_word_probabilities(self, X_observed, X_heldout):
        """``p(w | d)`` of held-out words, each document's local factors fitted to its other words.

        With the globals fixed, each document's local step is fitted to
        ``X_observed``; a held-out word ``w`` then has ``p(w | d) = sum_t
        E[theta_dt] E[beta_tw]`` (see :meth:`transform`).  The protocol of
        :func:`skvi.metrics.document_completion_perplexity`.

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
        >>> from skvi import SVIHierarchicalDirichletProcess
        >>> X = np.random.RandomState(0).poisson(1.0, size=(30, 6))
        >>> hdp = SVIHierarchicalDirichletProcess(n_components=4, random_state=0).fit(X)
        >>> held = sp.csr_matrix(X[:2])
        >>> hdp.heldout_word_probabilities(sp.csr_matrix(X[2:4]), held).shape == (held.nnz,)
        True
        """
        check_is_fitted(self)
        X_observed, X_heldout = check_heldout_counts(
            X_observed, X_heldout, self.components_.shape[1], "heldout_word_probabilities"
        )
        X_observed = X_observed.astype(self._dtype)
        theta = self._fold_in(X_observed, "theta").astype(np.float64)
        lam = np.asarray(self.components_, dtype=np.float64)
        return mixture_probabilities(theta, lam / lam.sum(axis=1, keepdims=True), X_heldout)

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
            Xv = self._check_docs(X.X, reset)
            weight = check_row_weights(X.weight, Xv)
            return Xv if np.all(weight == 1.0) else Rows(Xv, None, weight)
        check_sparse_structure(X)
        X = validate_data(
            self, X, reset=reset, accept_sparse=("csr", "csc"), dtype=[np.float64, np.float32]
        )
        check_non_negative(X, f"{type(self).__name__} (input X)")
        # Counts beyond 1e100 overflow the squared sums of the ELBO's terms.
        check_feature_magnitude(X, type(self).__name__)
        X = sp.csr_matrix(X) if not sp.issparse(X) else X.tocsr()
        if not X.has_sorted_indices:
            X = X.sorted_indices()
        if not reset:
            X = X.astype(self._dtype, copy=False)
        return X

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        return self._check_docs(_with_weights(X, sample_weight), reset)

    def _initialize_globals(self, data, random_state, summary):
        X, weight = _docs(data)
        self._dtype = X.dtype
        T, V = self.n_components, X.shape[1]
        if X.shape[0] > _START_ROWS:  # the draw of a start on a cluster's blocks
            rows = np.sort(random_state.choice(X.shape[0], _START_ROWS, replace=False))
            X, weight = X[rows], None if weight is None else weight[rows]
        # LDA's start (scikit-learn's): nearly equal topics, each seeded by
        # one document of the data.  From equal topics alone, the first
        # minibatches' words go to a few topics that then explain every
        # later document better than the still-flat ones (whose sticks
        # shrink): the fit uses few topics.  A seeded topic's own words
        # stand out, so the documents like its seed take it from the start.
        # Wang et al.'s exponential noise of mean 100 D / (T V) makes
        # topics different at random instead, scattering each document's
        # words over many of them (held-out perplexity far worse).
        lam = random_state.gamma(100.0, 0.01, (T, V))
        seeds = np.asarray(X.sum(axis=1)).ravel() > 0
        if weight is not None:
            seeds &= weight > 0
        seeds = np.flatnonzero(seeds)
        if seeds.size:
            pick = seeds[_distinct_documents(X[seeds], T, random_state)]
            # Every seed's tokens weigh alike: the mean document's as much as
            # _SEED_WEIGHT of a flat topic's mass (V).
            tokens = np.asarray(X[seeds].sum(axis=1), dtype=np.float64).mean()
            lam[: pick.size] += (_SEED_WEIGHT * V / tokens) * X[pick].toarray()
        # The corpus sticks start at E[sigma_t] = 1 / T for every topic
        # (u_t = 1, v_t = T - 1 - t), as in Wang et al.'s code: the prior's
        # sticks would give the last topics almost no weight before any data.
        v = np.arange(T - 1, 0, -1, dtype=np.float64)
        sticks = np.column_stack([np.zeros(T - 1), v - 1.0])
        return {
            "topics": (np.asarray(lam - 1.0, dtype=X.dtype),),
            "sticks": (sticks.astype(X.dtype).reshape(T - 1, 2),),
        }

    def _prior_natural(self):
        eta = float(self.topic_word_prior)
        gamma = float(self.corpus_concentration)
        return {
            "topics": (np.asarray(eta - 1.0, dtype=self._dtype),),
            "sticks": (np.array([0.0, gamma - 1.0], dtype=self._dtype),),
        }

    def _elog_beta_t(self, topics, cols=None):
        """``E[log beta_tw]`` of the words ``cols`` (all when None), shape (len(cols), T)."""
        natural = topics[0]
        totals = natural.sum(axis=1, dtype=np.float64) + natural.shape[1]
        lam = (natural if cols is None else natural[:, cols]) + 1.0
        out = digamma(lam) - digamma(totals)[:, None]
        return np.ascontiguousarray(out.T, dtype=natural.dtype)

    def _elog_sticks(self, sticks):
        """``E[log sigma_t(beta')]`` of the corpus sticks, shape (T,)."""
        conc = np.asarray(sticks[0], dtype=np.float64) + 1.0
        return expected_log_sticks(conc[:, 0], conc[:, 1]).astype(self._dtype)

    def _run(self, X, params, **kw):
        """The local step of the CSR documents X at ``params``, on the columns they use."""
        cols = np.unique(X.indices)
        remap = np.zeros(X.shape[1], dtype=X.indices.dtype)
        remap[cols] = np.arange(cols.size, dtype=X.indices.dtype)
        Xc = sp.csr_matrix((X.data, remap[X.indices], X.indptr), shape=(X.shape[0], cols.size))
        out = hdp_local_step(
            Xc,
            self._elog_beta_t(params["topics"], cols),
            self._elog_sticks(params["sticks"]),
            float(self.document_concentration),
            self.n_document_components,
            self.max_doc_update_iter,
            self.mean_change_tol,
            n_candidates=_N_CANDIDATES,
            plain_iter=_PLAIN_ITER,
            **kw,
        )
        return out, cols, Xc

    def _local_step(self, data, params):
        X, weight = _docs(data)
        out, cols, Xc = self._run(X, params, weight=weight, keep=True, topic_stats=True)
        return {
            "X": Xc,
            "cols": cols,
            "weight": weight,
            "varphi": out["varphi"],
            "a": out["a"],
            "b": out["b"],
            "topics": out["topics"],
            "sticks": out["sticks"],
        }

    def _expected_stats(self, name, X, local, params):
        if name == "topics":
            stats = np.zeros(params["topics"][0].shape, dtype=self._dtype)
            stats[:, local["cols"]] = local["topics"].T
            return (stats,)
        # sum_k varphi_dkt pairs with E[log beta'_t], and with E[log(1 - beta'_t)]
        # for every later topic.
        s = local["sticks"]
        later = np.cumsum(s[:0:-1])[::-1]
        return (np.column_stack([s[:-1], later]).astype(self._dtype).reshape(-1, 2),)

    def _local_bound(self, X, local, params):
        if local is None:
            docs, weight = _docs(X)
            out, _, _ = self._run(docs, params)
        else:
            weight = local["weight"]
            out = hdp_local_step(
                local["X"],
                self._elog_beta_t(params["topics"], local["cols"]),
                self._elog_sticks(params["sticks"]),
                float(self.document_concentration),
                self.n_document_components,
                0,
                self.mean_change_tol,
                fixed=(local["varphi"], local["a"], local["b"]),
            )
        bound = out["bound"]
        return float(np.sum(bound) if weight is None else weight @ bound)

    def _global_bound(self, params):
        lam = np.asarray(params["topics"][0], dtype=np.float64) + 1.0
        eta = float(self.topic_word_prior)
        topics = Dirichlet(lam).kl(Dirichlet(np.full(lam.shape[1], eta)))
        conc = np.asarray(params["sticks"][0], dtype=np.float64) + 1.0
        sticks = stick_kl(conc[:, 0], conc[:, 1], float(self.corpus_concentration))
        return -float(np.sum(topics) + np.sum(sticks))

    def _on_params_updated(self):
        self.components_ = np.ascontiguousarray(
            self.natural_params_["topics"][0] + 1.0, dtype=self._dtype
        )
        conc = np.asarray(self.natural_params_["sticks"][0]) + 1.0
        self.corpus_sticks_ = conc.astype(self._dtype)
        self.topic_weights_ = np.exp(log_mean_sticks(conc[:, 0], conc[:, 1]))

    def _fold_in(self, X, what):
        """``what`` ('theta' or 'bound') of every document of CSR X, on ``n_jobs`` threads."""
        params = self.natural_params_

        def run(docs):
            out, _, _ = self._run(docs, params, theta=what == "theta")
            return out[what]

        parts = self._map_row_blocks(run, X, by="work")
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _distinct_documents(X, most, random_state):
    """Up to ``most`` rows of X far apart, drawn as k-means++ draws its centres.

    The first row is uniform; each next one is drawn with probability
    proportional to the square of its cosine distance to the nearest row
    drawn so far, among the rows at least :data:`_SEED_DISTANCE` from every
    one.  Two seeds of the same theme would split it between two topics
    that the fit never merges, so the draw stops when no such row is left.
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    unit = sp.diags(1.0 / norms) @ X
    picks = [int(random_state.randint(X.shape[0]))]
    distance = 1.0 - (unit @ unit[picks[0]].T).toarray().ravel()
    while len(picks) < most:
        weight = np.where(distance >= _SEED_DISTANCE, distance**2, 0.0)
        total = weight.sum()
        if total <= 0.0:
            break
        picks.append(int(random_state.choice(X.shape[0], p=weight / total)))
        distance = np.minimum(distance, 1.0 - (unit @ unit[picks[-1]].T).toarray().ravel())
    return np.array(picks)


def _with_weights(X, sample_weight):
    """X, or X with its document weights for ``_check_docs`` to check."""
    return X if sample_weight is None else Rows(X, None, sample_weight)


def _docs(data):
    """``(X, weight)`` of validated documents; weight is None for unit weights."""
    if isinstance(data, Rows):
        return data.X, data.weight
    return data, None
