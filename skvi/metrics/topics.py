"""Held-out evaluation of topic models: document completion and coherence.

Perplexity numbers reported by topic-model libraries are rarely comparable.
scikit-learn's ``LatentDirichletAllocation.perplexity`` and gensim's
``LdaModel.log_perplexity`` score documents with a variational bound in
which each document's topic proportions are inferred from the very words
being scored, so the held-out words leak into their own prediction.

:func:`document_completion_perplexity` follows the document-completion
protocol instead (Wallach et al. 2009, Hoffman, Blei & Bach 2010): each
held-out document's tokens are split at random into an observed half and a
held-out half (:func:`split_document_tokens`); the document's topic
proportions are estimated from the observed half only, with the topics
fixed, and the held-out half is scored under the resulting predictive
distribution ``p(w | d) = sum_k E[theta_dk] E[beta_kw]``.  A model takes
part through one method, ``heldout_word_probabilities(X_observed,
X_heldout)`` (skvi's LDA and correlated topic model have it: each fits its
own posterior of a document's topics to the observed half); any other model
that exposes the variational topic parameters ``components_`` and the prior
``doc_topic_prior_`` (scikit-learn's LDA) is scored by the LDA E-step, so
numbers from different models and fitting procedures are comparable.

:func:`topic_coherence` scores each topic's top words by their document
co-occurrence in a reference corpus (UMass, Mimno et al. 2011, or NPMI,
Bouma 2009; Aletras & Stevenson 2013), or by ``c_v`` (Röder, Both &
Hinneburg 2015), from sliding windows over the tokenised texts, with the
numbers of gensim's ``CoherenceModel(coherence='c_v')``.

References
----------
Wallach, Murray, Salakhutdinov & Mimno (2009), "Evaluation methods for
topic models", ICML.
Hoffman, Blei & Bach (2010), "Online learning for latent Dirichlet
allocation", NeurIPS.
Mimno, Wallach, Talley, Leenders & McCallum (2011), "Optimizing semantic
coherence in topic models", EMNLP.
Bouma (2009), "Normalized (pointwise) mutual information in collocation
extraction", GSCL.
Aletras & Stevenson (2013), "Evaluating topic coherence using
distributional semantics", IWCS.
Röder, Both & Hinneburg (2015), "Exploring the space of topic coherence
measures", WSDM.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array, check_random_state

from ..models.lda.estep import heldout_probabilities
from ..validation import check_counts
from ._windows import encode_texts, window_cooccurrences

__all__ = [
    "split_document_tokens",
    "document_completion_perplexity",
    "topic_coherence",
]

#: Smoothing of the NPMI co-occurrence probabilities (as in gensim).
_NPMI_EPS = 1e-12


def _check_n_words(X, n_words, whom):
    if X.shape[1] != n_words:
        raise ValueError(
            f"X passed to {whom} has {X.shape[1]} words (columns), but the "
            f"model's components_ has {n_words}."
        )


def split_document_tokens(X, *, random_state=None):
    """Split each document's tokens at random into an observed and a held-out half.

    A count ``c`` of word ``w`` in document ``d`` stands for ``c`` tokens.
    Each document's ``n_d`` tokens are shuffled uniformly at random; the
    first ``floor(n_d / 2)`` are observed and the remaining
    ``ceil(n_d / 2)`` held out.  Given ``n_d``, the observed count of a word
    with ``c`` tokens in the document is therefore hypergeometric.  The
    split is vectorised over the whole corpus (no loop over documents).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_docs, n_words)
        Non-negative, integer-valued word counts.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffle; pass an int for a reproducible split.

    Returns
    -------
    X_observed : scipy.sparse.csr_matrix of shape (n_docs, n_words)
        Observed counts, float64, with ``floor(n_d / 2)`` tokens in row
        ``d``.
    X_heldout : scipy.sparse.csr_matrix of shape (n_docs, n_words)
        Held-out counts, float64; ``X_observed + X_heldout`` equals ``X``
        exactly.

    See Also
    --------
    document_completion_perplexity : Scores the held-out half.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.metrics import split_document_tokens
    >>> X = np.array([[3, 0, 2], [0, 1, 0], [4, 4, 0]])
    >>> X_obs, X_held = split_document_tokens(X, random_state=0)
    >>> X_obs.sum(axis=1).A1, X_held.sum(axis=1).A1
    (array([2., 0., 4.]), array([3., 1., 4.]))
    >>> bool(((X_obs + X_held).toarray() == X).all())
    True
    """
    X = check_counts(X, "split_document_tokens", integer=True)
    rng = check_random_state(random_state)
    n_docs = X.shape[0]
    counts = X.data.astype(np.int64)
    nnz = counts.size
    doc_len = np.bincount(
        np.repeat(np.arange(n_docs), np.diff(X.indptr)), weights=counts, minlength=n_docs
    ).astype(np.int64)
    n_tokens = int(doc_len.sum())

    # One entry per token: its document and the non-zero of X it came from.
    token_nz = np.repeat(np.arange(nnz), counts)
    token_doc = np.repeat(np.repeat(np.arange(n_docs), np.diff(X.indptr)), counts)
    # Distinct random keys; sorting by (doc, key) shuffles every document.
    # One argsort of the combined integer key is much faster than lexsort.
    keys = rng.permutation(n_tokens)
    if n_docs * max(n_tokens, 1) < np.iinfo(np.int64).max:
        order = np.argsort(token_doc * n_tokens + keys)
    else:  # pragma: no cover - beyond 2**63 document-token pairs
        order = np.lexsort((keys, token_doc))
    sorted_doc = token_doc[order]
    doc_start = np.cumsum(doc_len) - doc_len
    rank = np.arange(n_tokens) - doc_start[sorted_doc]
    observed = rank < (doc_len // 2)[sorted_doc]
    obs_counts = np.bincount(token_nz[order][observed], minlength=nnz).astype(np.float64)

    X_observed = sp.csr_matrix((obs_counts, X.indices.copy(), X.indptr.copy()), shape=X.shape)
    X_heldout = sp.csr_matrix(
        (X.data - obs_counts, X.indices.copy(), X.indptr.copy()), shape=X.shape
    )
    X_observed.eliminate_zeros()
    X_heldout.eliminate_zeros()
    return X_observed, X_heldout


def _topic_parameters(model):
    """Validated ``components_`` (lambda) and ``doc_topic_prior_`` as arrays."""
    if not hasattr(model, "components_") or not hasattr(model, "doc_topic_prior_"):
        raise TypeError(
            "model must have the attributes components_ and doc_topic_prior_ "
            "(is it fitted?); got an object of type "
            f"{type(model).__name__}."
        )
    lam = np.asarray(model.components_, dtype=np.float64)
    if lam.ndim != 2 or lam.shape[0] < 1 or lam.shape[1] < 1:
        raise ValueError(f"model.components_ must be a non-empty 2-d array, got shape {lam.shape}.")
    if not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError(
            "model.components_ must hold finite, positive variational Dirichlet parameters."
        )
    n_topics = lam.shape[0]
    alpha = np.array(model.doc_topic_prior_, dtype=np.float64)
    if alpha.ndim == 0:
        alpha = np.full(n_topics, float(alpha))
    if alpha.shape != (n_topics,):
        raise ValueError(
            "model.doc_topic_prior_ must be a float or an array of shape "
            f"({n_topics},), got shape {alpha.shape}."
        )
    if not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
        raise ValueError("model.doc_topic_prior_ must be finite and positive.")
    return lam, alpha


def document_completion_perplexity(
    model, X, *, random_state=None, max_doc_update_iter=100, mean_change_tol=1e-3
):
    """Held-out perplexity of a topic model by document completion.

    Each document of ``X`` is split with :func:`split_document_tokens`.
    With the topics fixed, the model fits the document's topics to the
    observed half and gives the probability of every held-out token: a
    model with the method ``heldout_word_probabilities(X_observed,
    X_heldout)`` (returning ``p(w | d)`` for each stored entry of the CSR
    matrix ``X_heldout``, in its order) computes it itself, as skvi's
    :class:`~skvi.SVILatentDirichletAllocation` and
    :class:`~skvi.SVICorrelatedTopicModel` do.  For any other LDA model the
    document's variational Dirichlet ``gamma_d`` is fitted to the observed
    half by the LDA E-step (from ``gamma_d = 1``, as scikit-learn's
    ``transform`` starts), and every held-out token of word ``w`` is scored
    by::

        p(w | d) = sum_k E[theta_dk] E[beta_kw],
        E[theta_dk] = gamma_dk / sum_j gamma_dj,
        E[beta_kw]  = lambda_kw / sum_v lambda_kv,

    with ``lambda = model.components_``.  The result is
    ``exp(-sum log p(w | d) / n_heldout)`` over the held-out tokens.

    Documents with fewer than 2 tokens are skipped: a single token would be
    held out with nothing observed, so its score would measure the prior,
    not the completion.  Every other document has at least one observed
    token.

    Parameters
    ----------
    model : object
        A fitted topic model with ``components_`` of shape
        ``(n_topics, n_words)`` and either the method
        ``heldout_word_probabilities`` or (LDA) ``doc_topic_prior_``, a
        float or an array of shape ``(n_topics,)``, with ``components_``
        the variational Dirichlet parameters ``lambda`` of the topics, as in
        scikit-learn's ``LatentDirichletAllocation``.
    X : {array-like, sparse matrix} of shape (n_docs, n_words)
        Non-negative, integer-valued word counts of held-out documents.
    random_state : int, RandomState instance or None, default=None
        Seeds the split; pass an int for a reproducible score.  The split is
        the one ``split_document_tokens(X, random_state=random_state)``
        returns.
    max_doc_update_iter : int, default=100
        Most E-step iterations per document (models scored by the LDA
        E-step here; a model with ``heldout_word_probabilities`` uses its
        own settings).
    mean_change_tol : float, default=1e-3
        A document's E-step stops when the mean absolute change of its
        ``gamma`` falls below this value (as ``max_doc_update_iter``).

    Returns
    -------
    perplexity : float
        ``exp`` of minus the mean held-out log-likelihood per token; lower
        is better, and a model that ignores the data entirely scores about
        ``n_words``.

    Raises
    ------
    ValueError
        If ``X`` has negative, non-finite or non-integer entries, a number
        of columns other than ``components_.shape[1]``, or no document with
        at least 2 tokens.

    See Also
    --------
    split_document_tokens : The random split into observed and held-out halves.
    topic_coherence : Co-occurrence scores of the topics' top words.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from skvi.metrics import document_completion_perplexity
    >>> model = SimpleNamespace(
    ...     components_=np.array([[8.0, 8.0, 1.0, 1.0], [1.0, 1.0, 8.0, 8.0]]),
    ...     doc_topic_prior_=0.5)
    >>> X = np.array([[3, 3, 0, 0], [0, 0, 4, 2], [2, 1, 1, 2]])
    >>> round(document_completion_perplexity(model, X, random_state=0), 4)
    3.0507
    """
    own = callable(getattr(model, "heldout_word_probabilities", None))
    if own:
        lam = np.asarray(getattr(model, "components_", np.zeros((0, 0))))
    else:
        lam, alpha = _topic_parameters(model)
    whom = "document_completion_perplexity"
    X = check_counts(X, whom, integer=True)
    _check_n_words(X, lam.shape[1], whom)
    if (
        isinstance(max_doc_update_iter, bool)
        or not isinstance(max_doc_update_iter, numbers.Integral)
        or max_doc_update_iter < 0
    ):
        raise ValueError(
            f"max_doc_update_iter must be a non-negative int, got {max_doc_update_iter!r}."
        )
    if (
        isinstance(mean_change_tol, bool)
        or not isinstance(mean_change_tol, numbers.Real)
        or not mean_change_tol >= 0
    ):
        raise ValueError(
            f"mean_change_tol must be a non-negative real number, got {mean_change_tol!r}."
        )

    X_observed, X_heldout = split_document_tokens(X, random_state=random_state)
    keep = np.flatnonzero(np.asarray(X.sum(axis=1)).ravel() >= 2)
    if keep.size == 0:
        raise ValueError(
            f"X passed to {whom} has no document with at least 2 tokens; "
            "document completion needs an observed and a held-out part."
        )
    X_observed = X_observed[keep]
    X_heldout = X_heldout[keep]
    X_observed.sort_indices()

    X_heldout.sort_indices()
    if own:
        p = np.asarray(model.heldout_word_probabilities(X_observed, X_heldout), dtype=np.float64)
        if p.shape != X_heldout.data.shape or not np.all((p > 0) & (p <= 1)):
            raise ValueError(
                "model.heldout_word_probabilities must return one probability in (0, 1] "
                f"per stored entry of X_heldout ({X_heldout.data.shape[0]})."
            )
    else:
        p = heldout_probabilities(
            lam, alpha, X_observed, X_heldout, int(max_doc_update_iter), float(mean_change_tol)
        )
    loglik = float(np.dot(X_heldout.data, np.log(p)))
    return float(np.exp(-loglik / X_heldout.data.sum()))


def topic_coherence(
    model,
    X,
    *,
    top_n=10,
    measure="umass",
    texts=None,
    feature_names=None,
    window_size=110,
    window_counting="gensim",
):
    """Coherence of each topic's top words from document or window co-occurrence.

    The top words ``v_1, ..., v_M`` (``M = top_n``) of topic ``k`` are the
    ``M`` largest entries of ``components_[k]`` in decreasing order, ties
    going to the lower word index.  In the reference corpus ``X``, a word
    occurs in a document when its count is positive; ``D(w)`` counts the
    documents containing ``w``, ``D(w_i, w_j)`` those containing both, and
    ``N`` is the number of documents.  Each topic's score is the mean over
    its ``M (M - 1) / 2`` word pairs of

    - ``measure='umass'`` (Mimno et al. 2011), over ordered pairs
      ``m > l``: ``log((D(v_m, v_l) + 1) / D(v_l))``;
    - ``measure='npmi'`` (Bouma 2009; Aletras & Stevenson 2013), with
      ``P(w) = D(w) / N`` and ``P(w_i, w_j) = D(w_i, w_j) / N``::

          log((P(w_i, w_j) + eps) / (P(w_i) P(w_j))) / -log(P(w_i, w_j) + eps)

      with ``eps = 1e-12``.  A pair whose words both occur in every
      document (``P(w_i, w_j) = 1``) scores 1, the NPMI of perfect
      co-occurrence; the formula with ``eps`` would give a spurious -1
      there.

    ``measure='c_v'`` (Röder, Both & Hinneburg 2015) needs the word order,
    so it reads the tokenised documents ``texts`` instead of ``X``.  A
    window of ``window_size`` tokens slides over each document one token
    at a time; every window is a virtual document (a document of at most
    ``window_size`` tokens is one window), ``N`` counts the windows and
    ``P(w)``, ``P(w_i, w_j)`` are the fractions of windows in which the
    words occur.  With ``npmi(w_i, w_j)`` the formula above (``eps``
    included, for every pair, as gensim computes it), each top word ``v_i``
    has the context vector ``u_i = (npmi(v_i, v_1), ..., npmi(v_i, v_M))``
    and the topic the vector ``u = u_1 + ... + u_M``; the topic's score is
    the mean over ``i`` of the cosine of ``u_i`` and ``u``.  These are the
    numbers of gensim's ``CoherenceModel(coherence='c_v', topn=top_n)``
    (gensim 4) on the same texts and top words; gensim's model score is
    their mean.

    Parameters
    ----------
    model : object or array-like of shape (n_topics, n_words)
        A fitted topic model with ``components_`` of shape
        ``(n_topics, n_words)``, or the topic-word weights themselves.
        Only the order of each row matters.
    X : {array-like, sparse matrix} of shape (n_docs, n_words) or None
        Non-negative word counts of the reference corpus.  ``'c_v'`` does
        not use the counts: ``X`` may be None there, and when given its
        number of columns is checked.
    top_n : int, default=10
        Number of top words per topic, at least 2 and at most ``n_words``.
    measure : {'umass', 'npmi', 'c_v'}, default='umass'
        The coherence measure; higher is more coherent.
    texts : iterable of list of str, default=None
        ``'c_v'`` only, and required there: the reference documents, each
        the list of its tokens in reading order (the documents the model
        was fitted on, tokenised as its vectorizer does, for example with
        ``vectorizer.build_analyzer()``).  Tokens that are no top word
        count as positions in the windows.
    feature_names : array-like of str of shape (n_words,), default=None
        ``'c_v'`` only: the token of each column of ``components_``, for
        example ``vectorizer.get_feature_names_out()``.  By default the
        model's ``feature_names_in_`` (a model fitted on a DataFrame).
    window_size : int, default=110
        ``'c_v'`` only: tokens per sliding window, at least 2; gensim's
        default for ``c_v`` is 110.
    window_counting : {'gensim', 'boolean'}, default='gensim'
        ``'c_v'`` only: when a word occurs in a window.  ``'boolean'``:
        when one of its tokens lies in the window, as Röder et al. define
        it.  ``'gensim'``: as gensim's accumulator counts, whose set of the
        window's words, when a token leaves the window, loses the token's
        word even if another of its tokens is still inside, until a token
        of the word enters again.  The two agree unless a top word repeats
        within ``window_size`` tokens; the default gives gensim's numbers.

    Returns
    -------
    coherence : ndarray of shape (n_topics,)
        The score of each topic.  UMass scores are at most ``log 2``
        (usually negative); NPMI scores lie in ``[-1, 1]``; c_v scores in
        ``[-1, 1]``, usually between 0.3 and 0.8.

    Raises
    ------
    ValueError
        If a top word occurs in no document of ``X`` (no window of
        ``texts`` for ``'c_v'``): its UMass ratio divides by zero and its
        NPMI is undefined; the message names the topic and the word index.
        Also for invalid ``X``, ``top_n``, ``measure``, ``window_size`` or
        ``window_counting``, for ``'c_v'`` without ``texts`` or
        ``feature_names``, for ``feature_names`` of the wrong length or
        with repeated tokens, and for ``texts`` with no document or no
        token.
    TypeError
        If ``texts`` is not a list of token lists with tokens of type str.

    See Also
    --------
    document_completion_perplexity : Held-out predictive score of the model.
    skvi.SVILatentDirichletAllocation.top_words : Each topic's top words.

    Notes
    -----
    The UMass smoothing is Mimno et al.'s ``+1`` on the co-document count.
    gensim's ``CoherenceModel(coherence='u_mass')`` averages over the same
    pairs but smooths with ``log((P(v_m, v_l) + 1e-12) / P(v_l))``, so its
    numbers differ when pairs co-occur rarely.  gensim's ``c_npmi``
    estimates the probabilities from sliding windows over the raw text;
    a bag-of-words matrix has no word order, so here the window is the
    whole document.

    gensim's ``c_v`` counts an empty document as one window, as here.  Its
    parallel accumulator (``processes`` above 1, the default on a machine
    with more than two cores) counts ``L - window_size + 1`` windows for a
    document of ``L`` tokens even when ``L < window_size``, so on corpora of
    short documents its numbers depend on the number of processes; they
    equal these with ``processes=1``, and with any ``processes`` when no
    document is shorter than the window.  A top word absent from gensim's
    dictionary is dropped from its topic there; here it is an error.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.metrics import topic_coherence
    >>> topics = np.array([[5.0, 4.0, 3.0, 0.1], [0.1, 0.2, 3.0, 4.0]])
    >>> X = np.array([[1, 2, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])

    Topic 0's top words are 0 then 1: ``D(1, 0) = 2`` and ``D(0) = 2``, so
    its UMass score is ``log(3 / 2)``; topic 1's are 3 then 2.

    >>> topic_coherence(topics, X, top_n=2)
    array([0.40546511, 0.69314718])
    >>> topic_coherence(topics, X, top_n=2, measure="npmi")
    array([0.4150375, 0.5      ])

    ``c_v`` reads the documents' tokens, here in windows of 3 tokens:

    >>> texts = [["apple", "pear", "sky", "apple"], ["sky", "rain", "pear"],
    ...          ["rain", "sky", "rain", "apple", "pear"]]
    >>> vocabulary = ["apple", "pear", "rain", "sky"]
    >>> topic_coherence(topics, X, top_n=3, measure="c_v", texts=texts,
    ...                 feature_names=vocabulary, window_size=3)
    array([0.33600389, 0.5151542 ])
    """
    weights = getattr(model, "components_", model)
    weights = check_array(weights, dtype=np.float64, input_name="components_")
    n_topics, n_words = weights.shape
    if measure not in ("umass", "npmi", "c_v"):
        raise ValueError(f"measure must be 'umass', 'npmi' or 'c_v', got {measure!r}.")
    if (
        isinstance(top_n, bool)
        or not isinstance(top_n, numbers.Integral)
        or not 2 <= top_n <= n_words
    ):
        raise ValueError(f"top_n must be an int in [2, n_words={n_words}], got {top_n!r}.")
    whom = "topic_coherence"
    if measure == "c_v":
        if X is not None:
            _check_n_words(check_counts(X, whom), n_words, whom)
        tokens = _check_feature_names(model, feature_names, n_words)
        return _c_v(weights, top_n, texts, tokens, window_size, window_counting)
    if texts is not None or feature_names is not None:
        raise ValueError(
            "texts and feature_names are read by measure='c_v' only; "
            f"measure={measure!r} scores the counts X."
        )
    X = check_counts(X, whom)
    _check_n_words(X, n_words, whom)
    n_docs = X.shape[0]

    top = np.argsort(-weights, axis=1, kind="stable")[:, :top_n]
    union = np.unique(top)
    position = np.searchsorted(union, top)
    occurs = X[:, union]
    occurs.data = (occurs.data > 0).astype(np.int64)
    co_docs = (occurs.T @ occurs).toarray()  # co_docs[i, i] = D(union[i])

    m, l = np.tril_indices(top_n, k=-1)  # pairs m > l
    coherence = np.empty(n_topics)
    for k in range(n_topics):
        idx = position[k]
        doc_freq = co_docs[idx, idx]
        unseen = np.flatnonzero(doc_freq == 0)
        if unseen.size:
            raise ValueError(
                f"Topic {k}: top word {top[k, unseen[0]]} (word index) occurs in no "
                f"document of X, so its {measure} coherence is undefined."
            )
        joint = co_docs[idx[m], idx[l]]
        if measure == "umass":
            scores = np.log((joint + 1.0) / doc_freq[l])
        else:
            p_joint = joint / n_docs
            p_word = doc_freq / n_docs
            scores = np.log((p_joint + _NPMI_EPS) / (p_word[m] * p_word[l]))
            scores /= -np.log(p_joint + _NPMI_EPS)
            scores[joint == n_docs] = 1.0
        coherence[k] = scores.mean()
    return coherence


def _check_feature_names(model, feature_names, n_words):
    """The token of each column of the topics, validated, as a list of str."""
    if feature_names is None:
        feature_names = getattr(model, "feature_names_in_", None)
        if feature_names is None:
            raise ValueError(
                "measure='c_v' needs the token of each word (column) of components_: "
                "pass feature_names=, for example vectorizer.get_feature_names_out() "
                "(the model has no feature_names_in_)."
            )
    names = np.asarray(feature_names, dtype=object)
    if names.ndim != 1 or names.shape[0] != n_words:
        raise ValueError(
            f"feature_names must hold one token per word (column) of components_, "
            f"{n_words}; got an array of shape {names.shape}."
        )
    if not all(isinstance(name, str) for name in names):
        raise ValueError("feature_names must be tokens of type str.")
    names = names.tolist()
    if len(set(names)) != n_words:
        raise ValueError("feature_names must be distinct tokens; some token repeats.")
    return names


def _c_v(weights, top_n, texts, tokens, window_size, window_counting):
    """c_v coherence of each topic (see topic_coherence)."""
    if texts is None:
        raise ValueError(
            "measure='c_v' needs the documents' tokens in order: pass texts=, a list "
            "of token lists."
        )
    if (
        isinstance(window_size, bool)
        or not isinstance(window_size, numbers.Integral)
        or window_size < 2
    ):
        raise ValueError(f"window_size must be an int of at least 2, got {window_size!r}.")
    if window_counting not in ("gensim", "boolean"):
        raise ValueError(f"window_counting must be 'gensim' or 'boolean', got {window_counting!r}.")
    top = np.argsort(-weights, axis=1, kind="stable")[:, :top_n]
    union = np.unique(top)
    position = np.searchsorted(union, top)
    codes, lengths = encode_texts(texts, [tokens[w] for w in union])
    # The distinct pairs of words that share a topic, as codes i * n + j, i < j.
    n_union = union.shape[0]
    m, l = np.triu_indices(top_n, k=1)

    def pair_code(i, j):
        return np.minimum(i, j) * n_union + np.maximum(i, j)

    pair_codes = np.unique(pair_code(position[:, m], position[:, l]))
    n_windows, occurrences, joint = window_cooccurrences(
        codes,
        lengths,
        n_union,
        int(window_size),
        (pair_codes // n_union, pair_codes % n_union),
        window_counting,
    )

    coherence = np.empty(top.shape[0])
    for k, idx in enumerate(position):
        counts = np.diag(occurrences[idx]).astype(np.float64)
        counts[m, l] = joint[np.searchsorted(pair_codes, pair_code(idx[m], idx[l]))]
        counts[l, m] = counts[m, l]
        unseen = np.flatnonzero(occurrences[idx] == 0)
        if unseen.size:
            w = top[k, unseen[0]]
            raise ValueError(
                f"Topic {k}: top word {w} (word index, token {tokens[w]!r}) occurs in no "
                "document of texts, so its c_v coherence is undefined."
            )
        # Pairwise NPMI in the order of operations of gensim's log_ratio_measure.
        p_joint = counts / n_windows
        p_word = np.diag(counts) / n_windows
        npmi = np.log((p_joint + _NPMI_EPS) / (p_word[:, None] * p_word[None, :]))
        npmi /= -np.log(p_joint + _NPMI_EPS)
        # Context vectors (gamma = 1): row i for the word v_i, their sum for the topic.
        topic_vector = npmi.sum(axis=0)
        cosines = (npmi @ topic_vector) / (
            np.linalg.norm(npmi, axis=1) * np.linalg.norm(topic_vector)
        )
        coherence[k] = cosines.mean()
    return coherence
