"""The local step of the online HDP: every document of a minibatch at once.

Wang, Paisley and Blei, "Online variational inference for the hierarchical
Dirichlet process": the corpus has ``T`` topics ``beta_t`` and stick
proportions ``beta'_t ~ Beta(1, gamma)``; document ``d`` has ``K``
components, each pointing at a corpus topic (``c_dk``, with ``q(c_dk =
t) = varphi_dkt``), stick proportions ``pi'_dk ~ Beta(1, alpha)``
(``q(pi'_dk) = Beta(a_dk, b_dk)``) and one component per word (``q(z_dn =
k) = phi_dnk``).  With the globals fixed, coordinate ascent alternates::

    phi_dnk   propto exp(sum_t varphi_dkt E[log beta_t,w_dn] + E[log sigma_k(pi'_d)])
    a_dk      = 1 + sum_n phi_dnk,    b_dk = alpha + sum_n sum_{l > k} phi_dnl
    varphi_dkt propto exp(sum_n phi_dnk E[log beta_t,w_dn] + E[log sigma_t(beta')])

with ``E[log sigma_k(v)] = E[log v_k] + sum_{l < k} E[log(1 - v_l)]`` the
expected log stick-breaking weights.  A word ``w`` that occurs ``n_dw``
times shares one ``phi`` row, weighed by its count.

The documents are vectorised in buckets of similar numbers of distinct
words, each padded to its longest document: one bucket's updates are two
batched matrix products, ``(K x T) @ (T x L)`` for ``phi`` (kept as
``K x L``, the words on the last axis) and ``(K x L) @ (L x T)`` for
``varphi``, over all its documents.  A document leaves its
bucket's active set when the mean absolute change of its expected
component counts ``sum_n n_dw phi_dnk`` falls below ``tol``.

Each document starts with component ``k`` anchored at one of its own words:
the token at quantile ``(k + 1/2) / K`` of the document's tokens (in word
order) sets ``varphi_dk`` to the posterior of ``c_dk`` given that word
alone, and the first ``phi`` update leaves the document's sticks out
(with ``plain_iter``, the first iterations leave out the corpus's sticks
and the document's, as Wang et al.'s code does).  The start is
deterministic, so a document's local step depends on nothing but its words
and the globals.

With ``n_candidates``, a document's ``q(c_dk)`` is restricted to its most
likely topics (:func:`candidate_topics`): the updates above run on those
alone, ``varphi_dkt = 0`` elsewhere (a restriction of the variational
family, so the bound stays a lower bound), and an iteration costs
``n_candidates / T`` of a full one.
"""

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma, gammaln

__all__ = [
    "candidate_topics",
    "expected_log_sticks",
    "hdp_local_step",
    "log_mean_sticks",
    "stick_kl",
]

#: Largest padded bucket, in entries of ``(documents, words, T)``: bounds the
#: memory of a local step on many documents (a transform of a test set).
_BUCKET_ENTRIES = 1 << 22
#: A bucket takes the next (shorter) document while it has at least this
#: fraction of the bucket's longest document's distinct words.
_BUCKET_FILL = 0.75


def expected_log_sticks(a, b):
    """``E[log sigma_k]`` of stick-breaking weights with ``Beta(a_k, b_k)`` proportions.

    Parameters
    ----------
    a, b : ndarray of shape (..., K - 1)
        The Beta parameters of the first ``K - 1`` stick proportions (the
        ``K``-th takes what is left).

    Returns
    -------
    ndarray of shape (..., K)
        ``E[log v_k] + sum_{l < k} E[log(1 - v_l)]``, with ``v_K = 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.hdp.estep import expected_log_sticks
    >>> np.round(expected_log_sticks(np.array([1.0]), np.array([1.0])), 4)
    array([-1., -1.])
    """
    a = np.asarray(a)
    b = np.asarray(b)
    total = digamma(a + b)
    e_log_v = digamma(a) - total
    e_log_rest = digamma(b) - total
    out = np.zeros(a.shape[:-1] + (a.shape[-1] + 1,), dtype=np.result_type(a, b, np.float32))
    out[..., :-1] = e_log_v
    out[..., 1:] += np.cumsum(e_log_rest, axis=-1)
    return out


def stick_kl(a, b, prior_b):
    """``KL(Beta(a, b) || Beta(1, prior_b))``, elementwise.

    Parameters
    ----------
    a, b : ndarray
        The variational Beta parameters.
    prior_b : float
        The prior's second parameter (its first is 1).

    Returns
    -------
    ndarray
        The divergence of every pair ``(a, b)``.

    Examples
    --------
    >>> from skvi.models.hdp.estep import stick_kl
    >>> float(stick_kl(1.0, 2.0, 2.0))
    0.0
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    total = digamma(a + b)
    return (
        gammaln(a + b)
        - gammaln(a)
        - gammaln(b)
        - (gammaln(1.0 + prior_b) - gammaln(prior_b))
        + (a - 1.0) * (digamma(a) - total)
        + (b - prior_b) * (digamma(b) - total)
    )


def _softmax(logits, axis=-1):
    """``(softmax, log-sum-exp)`` of ``logits`` along ``axis``."""
    top = np.max(logits, axis=axis, keepdims=True)
    e = np.exp(logits - top)
    total = np.sum(e, axis=axis, keepdims=True)
    e /= total
    return e, np.squeeze(np.log(total) + top, axis=axis)


def _normalize_exp(logits):
    """``softmax(logits)`` along the last axis, computed in the array ``logits``."""
    logits -= np.max(logits, axis=-1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= np.sum(logits, axis=-1, keepdims=True)
    return logits


def _counts_times_softmax(logits, counts):
    """``counts * softmax(logits)`` over the components, for logits at most 0.

    ``logits`` has shape (n, K, L), the components on axis 1 and the words
    on the last axis, so that the sum over the components adds rows of
    ``L`` words; ``counts`` has shape (n, L).
    """
    e = np.exp(logits)
    total = e.sum(axis=1)
    low = total < np.finfo(e.dtype).tiny ** 0.5
    if low.any():  # every logit of a word far below 0: normalise by the maximum
        rows = np.flatnonzero(low.any(axis=1))
        shifted = logits[rows] - np.max(logits[rows], axis=1, keepdims=True)
        e[rows] = np.exp(shifted)
        total[rows] = e[rows].sum(axis=1)
    e *= (counts / total)[:, None, :]
    return e


def _buckets(lengths):
    """Groups of documents of similar lengths: a list of index arrays, longest first."""
    order = np.argsort(-lengths, kind="stable")
    groups = []
    start = 0
    n = order.size
    while start < n:
        longest = max(int(lengths[order[start]]), 1)
        floor = _BUCKET_FILL * longest
        most = max(1, _BUCKET_ENTRIES // longest)
        stop = start + 1
        while stop < n and stop - start < most and lengths[order[stop]] >= floor:
            stop += 1
        groups.append(order[start:stop])
        start = stop
    return groups


def _stick_parameters(counts, alpha):
    """The documents' Beta parameters ``(a, b)`` from their component counts (n, K)."""
    a = 1.0 + counts[:, :-1]
    tail = np.cumsum(counts[:, :0:-1], axis=1)[:, ::-1]
    return a, alpha + tail


def hdp_local_step(
    X,
    elog_beta_t,
    elog_sticks,
    alpha,
    n_doc_components,
    max_iter,
    tol,
    *,
    weight=None,
    fixed=None,
    keep=False,
    theta=False,
    topic_stats=False,
    n_candidates=None,
    plain_iter=0,
):
    """Fit every document's local factors with the globals fixed, and summarise them.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_docs, n_words)
        Word counts, with sorted indices.
    elog_beta_t : ndarray of shape (n_words, T)
        ``E[log beta_t,w]`` of the topics at the columns of X, transposed.
    elog_sticks : ndarray of shape (T,)
        ``E[log sigma_t(beta')]`` of the corpus sticks.
    alpha : float
        The documents' stick concentration.
    n_doc_components : int
        ``K``, the documents' truncation (at least 1).
    max_iter : int
        Most coordinate-ascent iterations per document.
    tol : float
        A document stops when the mean absolute change of its expected
        component counts falls below ``tol``.
    weight : ndarray of shape (n_docs,) or None, default=None
        Each document's weight in the summed statistics.
    fixed : tuple or None, default=None
        ``(varphi, a, b)`` of every document: no iteration, only ``phi`` is
        fitted to them (a bound at other globals).
    keep : bool, default=False
        Return each document's ``varphi``, ``a`` and ``b``.
    theta : bool, default=False
        Return each document's topic proportions ``E[theta_dt] = sum_k
        E[sigma_k(pi'_d)] varphi_dkt`` (its expected share of topic ``t``).
    topic_stats : bool, default=False
        Return the topics' statistics
        ``sum_d w_d sum_k varphi_dkt sum_n n_dw phi_dnk`` at each word.
    n_candidates : int or None, default=None
        Restrict each document's ``q(c_dk)`` to its ``n_candidates`` most
        likely topics (see :func:`candidate_topics`); ``varphi_dkt = 0``
        elsewhere.  None, or at least ``T``, keeps every topic.  Ignored
        with ``fixed``.
    plain_iter : int, default=0
        The first ``plain_iter`` iterations (and the start) leave both the
        document's and the corpus's sticks out, so that a document's
        components first find the topics of its words, as in Wang et al.'s
        code (which takes 3).  With 0, only the first ``phi`` update leaves
        the document's sticks out.

    Returns
    -------
    dict
        ``'bound'``: each document's data part of the ELBO (ndarray of
        shape (n_docs,), unweighted, with ``phi`` at its optimum);
        ``'sticks'``: ``sum_d w_d sum_k varphi_dk`` (shape (T,));
        ``'n_updates'``: the document updates made; and as asked
        ``'topics'`` (shape (n_words, T)), ``'varphi'``, ``'a'``, ``'b'``,
        ``'theta'``.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skvi.models.hdp.estep import hdp_local_step
    >>> X = sp.csr_matrix(np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 2.0]]))
    >>> elog_beta_t = np.log(np.array([[0.8, 0.1], [0.1, 0.8], [0.1, 0.1]]))
    >>> out = hdp_local_step(X, elog_beta_t, np.log([0.5, 0.5]), 1.0, 2, 100, 1e-6,
    ...                      theta=True)
    >>> np.round(out["theta"], 2)
    array([[0.92, 0.08],
           [0.12, 0.88]])
    """
    n_docs = X.shape[0]
    T = elog_beta_t.shape[1]
    K = int(n_doc_components)
    dtype = elog_beta_t.dtype
    w = np.ones(n_docs) if weight is None else np.asarray(weight, dtype=np.float64)
    lengths = np.diff(X.indptr)
    out = {
        "bound": np.zeros(n_docs),
        "sticks": np.zeros(T),
        "n_updates": 0,
    }
    if topic_stats:
        out["topics"] = np.zeros((X.shape[1], T))
    if keep:
        out["varphi"] = np.zeros((n_docs, K, T), dtype=dtype)
        out["a"] = np.ones((n_docs, K - 1), dtype=dtype)
        out["b"] = np.full((n_docs, K - 1), alpha, dtype=dtype)
    if theta:
        out["theta"] = np.zeros((n_docs, T), dtype=dtype)
    pieces = []  # the topics' statistics of restricted documents: (cell, value)
    # One stored entry more, of count 0, for the padding to point at.
    data = np.append(X.data, 0).astype(dtype, copy=False)
    indices = np.append(X.indices, 0)
    if elog_beta_t.shape[0] == 0:  # no words at all: the padding reads zeros
        elog_beta_t = np.zeros((1, T), dtype=dtype)
    for docs in _buckets(lengths):
        L = max(int(lengths[docs[0]]), 1)
        # Each document's stored entries, padded to L with count 0.
        offsets = np.arange(L)
        valid = offsets[None, :] < lengths[docs][:, None]
        pos = np.where(valid, X.indptr[docs][:, None] + offsets[None, :], X.nnz)
        counts = data[pos]
        words = indices[pos]
        eb = elog_beta_t[words]
        eb[~valid] = 0.0
        cand = None
        if fixed is None:
            if n_candidates is not None and n_candidates < T:
                cand = candidate_topics(eb, counts, elog_sticks, int(n_candidates))
                eb = np.take_along_axis(eb, cand[:, None, :], axis=2)
                es = elog_sticks[cand]
            else:
                es = np.broadcast_to(elog_sticks, (len(docs), T))
            varphi, a, b, n_upd = _iterate(
                eb, counts, es, alpha, K, max_iter, tol, dtype, plain_iter
            )
            out["n_updates"] += n_upd
        else:
            es = np.broadcast_to(elog_sticks, (len(docs), T))
            varphi = np.asarray(fixed[0][docs], dtype=dtype)
            a = np.asarray(fixed[1][docs], dtype=dtype)
            b = np.asarray(fixed[2][docs], dtype=dtype)
        elog_pi = expected_log_sticks(a, b).astype(dtype, copy=False)
        # phi at its optimum given varphi and the sticks; its part of the
        # ELBO is each word's count times the log-sum-exp of its logits.
        logits = np.matmul(eb, np.ascontiguousarray(varphi.transpose(0, 2, 1)))
        logits += elog_pi[:, None, :]
        phi, lse = _softmax(logits)
        loglik = np.sum(counts * lse, axis=1)
        log_varphi = np.log(np.maximum(varphi, np.finfo(dtype).tiny))
        cross = np.einsum("dkt,dkt->d", varphi, es[:, None, :] - log_varphi)
        kl = np.sum(stick_kl(a, b, alpha), axis=1) if K > 1 else 0.0
        out["bound"][docs] = loglik + cross - kl
        wd = w[docs]
        if cand is None:
            out["sticks"] += wd @ varphi.sum(axis=1, dtype=np.float64)
        else:
            weights = wd[:, None] * varphi.sum(axis=1, dtype=np.float64)
            out["sticks"] += np.bincount(cand.ravel(), weights.ravel(), minlength=T)
        if topic_stats:
            phic = phi * (counts * wd[:, None].astype(dtype))[:, :, None]
            per_word = np.matmul(phic, varphi)  # (docs, L, T or n_candidates)
            flat = valid.ravel()
            if cand is None:
                scatter = sp.csr_matrix(
                    (np.ones(int(flat.sum())), (words.ravel()[flat], np.flatnonzero(flat))),
                    shape=(X.shape[1], flat.size),
                )
                out["topics"] += scatter @ per_word.reshape(-1, T)
            else:
                cells = words[:, :, None] * T + cand[:, None, :]
                pieces.append(
                    (
                        cells.reshape(-1, cand.shape[1])[flat].ravel(),
                        per_word.reshape(-1, cand.shape[1])[flat].ravel(),
                    )
                )
        if cand is not None and (keep or theta):
            varphi = _scatter_topics(varphi, cand, T)
        if keep:
            out["varphi"][docs] = varphi
            out["a"][docs] = a
            out["b"][docs] = b
        if theta:
            e_pi = np.exp(log_mean_sticks(a, b)).astype(dtype, copy=False)
            out["theta"][docs] = np.einsum("dk,dkt->dt", e_pi, varphi)
    if pieces:
        cells = np.concatenate([c for c, _ in pieces])
        values = np.concatenate([v for _, v in pieces])
        out["topics"] += np.bincount(cells, values, minlength=X.shape[1] * T).reshape(-1, T)
    return out


def candidate_topics(eb, counts, elog_sticks, n_candidates):
    """Each document's ``n_candidates`` topics of most expected words, in topic order.

    A word's share of topic ``t`` is its responsibility under the corpus's
    topic weights alone, ``softmax_t(E[log beta_t,w] + E[log sigma_t(beta')])``
    (the local step's ``varphi`` update for a component holding that word
    only); a document's score of a topic is the sum of its words' shares,
    weighed by their counts.

    Parameters
    ----------
    eb : ndarray of shape (n_docs, L, T)
        ``E[log beta_t,w]`` of each document's (padded) words.
    counts : ndarray of shape (n_docs, L)
        The words' counts (0 for padding).
    elog_sticks : ndarray of shape (T,)
        ``E[log sigma_t(beta')]`` of the corpus sticks.
    n_candidates : int
        Topics kept per document (less than ``T``).

    Returns
    -------
    ndarray of shape (n_docs, n_candidates)
        The kept topics of each document, in increasing order.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.hdp.estep import candidate_topics
    >>> eb = np.log(np.array([[[0.7, 0.1, 0.2], [0.1, 0.2, 0.7]]]))
    >>> candidate_topics(eb, np.array([[3.0, 1.0]]), np.log([0.4, 0.3, 0.3]), 2)
    array([[0, 2]])
    """
    share, _ = _softmax(eb + elog_sticks[None, None, :])
    score = np.matmul(counts[:, None, :], share)[:, 0, :]
    top = np.argpartition(-score, n_candidates - 1, axis=1)[:, :n_candidates]
    return np.sort(top, axis=1)


def _scatter_topics(varphi, cand, T):
    """``varphi`` of shape (n, K, n_candidates) spread over all ``T`` topics."""
    full = np.zeros(varphi.shape[:2] + (T,), dtype=varphi.dtype)
    np.put_along_axis(full, np.broadcast_to(cand[:, None, :], varphi.shape), varphi, axis=2)
    return full


def log_mean_sticks(a, b):
    """``log E[sigma_k]`` of stick-breaking weights with ``Beta(a_k, b_k)`` proportions.

    Parameters
    ----------
    a, b : ndarray of shape (..., K - 1)
        The Beta parameters of the first ``K - 1`` stick proportions.

    Returns
    -------
    ndarray of shape (..., K)
        ``log E[v_k] + sum_{l < k} log(1 - E[v_l])`` (the proportions are
        independent), with ``v_K = 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from skvi.models.hdp.estep import log_mean_sticks
    >>> np.round(np.exp(log_mean_sticks(np.array([1.0]), np.array([1.0]))), 2)
    array([0.5, 0.5])
    """
    mean_v = a / (a + b)
    out = np.zeros(a.shape[:-1] + (a.shape[-1] + 1,), dtype=np.result_type(a, b, np.float32))
    out[..., :-1] = np.log(mean_v)
    out[..., 1:] += np.cumsum(np.log1p(-mean_v), axis=-1)
    return out


def _iterate(eb, counts, elog_sticks, alpha, K, max_iter, tol, dtype, plain_iter=0):
    """Coordinate ascent of one bucket's documents; returns ``(varphi, a, b, n_updates)``.

    ``elog_sticks`` (n, T) holds each document's ``E[log sigma_t(beta')]``
    of the topics in ``eb``'s last axis (its candidates).
    """
    n, L, T = eb.shape
    total = counts.sum(axis=1)
    # Each word's E[log beta] less its largest over the topics: a constant
    # per word shifts every component's phi logit and every topic's varphi
    # logit of a component alike, so the updates are the same, and the phi
    # logits are at most 0 (E[log sigma_k(pi')] < 0): their softmax needs no
    # maximum but where all of a word's logits underflow.
    eb = eb - np.max(eb, axis=2, keepdims=True)
    eb_t = np.ascontiguousarray(eb.transpose(0, 2, 1))  # (n, T, L)
    # The start: component k anchored at the token at quantile (k + 1/2) / K.
    cum = np.cumsum(counts, axis=1)
    target = (np.arange(K) + 0.5)[None, :] / K * total[:, None]
    anchor = np.minimum(np.sum(cum[:, None, :] <= target[:, :, None], axis=2), L - 1)
    start = np.take_along_axis(eb, anchor[:, :, None], axis=1)  # (n, K, T)
    varphi, _ = _softmax(start if plain_iter > 0 else start + elog_sticks[:, None, :])
    varphi = varphi.astype(dtype, copy=False)
    elog_pi = np.zeros((n, K), dtype=dtype)
    component = np.zeros((n, K), dtype=dtype)
    done_varphi = varphi.copy()
    done_component = component.copy()
    # The working rows (bucket ids ``rows``): every update runs on all of
    # them, and a document's result is kept when it converges (``live``
    # turns False); the rows are compacted when a quarter of them has
    # converged (a copy costs about one matrix product).
    rows = np.arange(n)
    live = np.ones(n, dtype=bool)
    n_updates = 0
    for it in range(max_iter):
        n_live = int(np.count_nonzero(live))
        if n_live == 0:
            break
        if n_live < 0.75 * rows.size:
            rows, eb, counts, elog_sticks = rows[live], eb[live], counts[live], elog_sticks[live]
            eb_t = eb_t[live]
            varphi, elog_pi, component = varphi[live], elog_pi[live], component[live]
            live = np.ones(n_live, dtype=bool)
        # The words on the last axis throughout: (n, K, L) products need no
        # transposed copies, and the sums over the components add rows.
        logits = np.matmul(varphi, eb_t)
        logits += elog_pi[:, :, None]
        phic = _counts_times_softmax(logits, counts)
        new = phic.sum(axis=2)
        if it + 1 >= plain_iter:
            elog_pi = expected_log_sticks(*_stick_parameters(new, alpha)).astype(dtype, copy=False)
        assign = np.matmul(phic, eb)  # (n, K, T)
        if it >= plain_iter:
            assign += elog_sticks[:, None, :]
        varphi = _normalize_exp(assign)
        change = np.abs(new - component).sum(axis=1)  # K times the mean change
        component = new
        n_updates += n_live
        if it >= plain_iter:
            done = live & (change < tol * K)
            done_varphi[rows[done]] = varphi[done]
            done_component[rows[done]] = new[done]
            live &= ~done
    done_varphi[rows[live]] = varphi[live]
    done_component[rows[live]] = component[live]
    a, b = _stick_parameters(done_component, alpha)
    varphi = done_varphi
    return varphi, a, b, n_updates
