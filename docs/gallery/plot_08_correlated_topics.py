"""
Correlated topics: which topics appear together?
================================================

In LDA a document's topic proportions are Dirichlet: apart from the
constraint that they sum to one, topics are independent.  The correlated
topic model of Blei and Lafferty draws them as ``softmax([eta, 0])`` with
``eta ~ N(mu, Sigma)``, and learns ``Sigma``: which topics tend to share a
document and which exclude each other.
:class:`skvi.SVICorrelatedTopicModel` fits it by Monte Carlo structured
SVI, each document's posterior ``q(eta_d)`` a full-covariance Gaussian.

To know the answer, we simulate a corpus from the model itself: five
topics over 100 words (each topic puts most of its mass on 20 words of its
own), and a ``Sigma`` in which topics 0 and 1 appear together and topics 2
and 3 exclude each other.  800 documents of 60 words; 600 to fit, 200 to
score.  The model is told neither the topics nor ``Sigma``.
"""

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

from skvi import SVICorrelatedTopicModel, SVILatentDirichletAllocation
from skvi.metrics import document_completion_perplexity

rng = np.random.RandomState(0)
K, n_words, n_docs, length = 5, 100, 800, 60
topics = np.full((K, n_words), 0.05 / (n_words - 20))
for k in range(K):
    topics[k, 20 * k : 20 * (k + 1)] = 0.95 / 20

correlation = np.eye(K - 1)
correlation[0, 1] = correlation[1, 0] = 0.9  # topics 0 and 1 together
correlation[2, 3] = correlation[3, 2] = -0.8  # topics 2 and 3 apart
Sigma = 1.5**2 * correlation  # the logits of topics 0-3 against topic 4
eta = rng.multivariate_normal(np.zeros(K - 1), Sigma, size=n_docs)
theta = np.exp(np.c_[eta, np.zeros(n_docs)])
theta /= theta.sum(axis=1, keepdims=True)
counts = sp.csr_matrix([rng.multinomial(length, t @ topics) for t in theta])
train, test = counts[:600], counts[600:]

# %%
# Fit the correlated topic model and LDA
# --------------------------------------
# The CTM starts from a short batch LDA fit (``init='lda'``) and then runs
# batch passes; each pass moves every document's Gaussian by a Monte Carlo
# natural-gradient step, then ``mu``, ``Sigma`` and the topics.  ``Sigma``
# settles more slowly than the topics, hence the small ``tol``.  Both models
# are scored by held-out document completion: half of each test document's
# words fix its topic proportions, the other half are predicted (lower is
# better).

ctm = SVICorrelatedTopicModel(n_components=K, max_iter=200, tol=1e-6, random_state=0)
ctm.fit(train)
lda = SVILatentDirichletAllocation(n_components=K, max_iter=50, random_state=0).fit(train)
print(f"CTM: {ctm.n_iter_} passes, converged: {ctm.converged_}")
for name, model in [("LDA", lda), ("CTM", ctm)]:
    perplexity = document_completion_perplexity(model, test, random_state=0)
    print(f"{name}: held-out perplexity {perplexity:.2f}")

# %%
# The CTM predicts the held-out words a little better: knowing that a
# document is about topic 0 tells it to expect topic 1 too.
#
# The topics
# ----------
# A fitted topic is matched to the true topic whose 20 words it gives the
# most mass.

match = [int(np.argmax(ctm.topic_word_[:, 20 * k : 20 * (k + 1)].sum(axis=1))) for k in range(K)]
for k, j in enumerate(match):
    print(f"true topic {k}: fitted topic {j}, "
          f"{ctm.topic_word_[j, 20 * k : 20 * (k + 1)].sum():.2f} of its mass on the topic's words")

# %%
# The learned correlations
# ------------------------
# ``prior_covariance_`` is ``Sigma``, the covariance of the logits of topics
# 0 to K - 2 against the last topic, so it depends on which topic is last.
# The centred log-ratios ``log theta_k - mean_j log theta_j`` treat every
# topic alike: their covariance is ``C Sigma_0 C``, with ``Sigma_0`` the
# K x K matrix holding ``Sigma`` and a zero row and column for the last
# topic, and ``C = I - 1/K``.  We compare their correlations, true and
# learned, with the fitted topics in the order of the true ones.


def centred_log_ratio_correlation(sigma):
    sigma0 = np.zeros((K, K))
    sigma0[: K - 1, : K - 1] = sigma
    center = np.eye(K) - 1.0 / K
    clr = center @ sigma0 @ center
    sd = np.sqrt(np.diag(clr))
    return clr / np.outer(sd, sd)


true = centred_log_ratio_correlation(Sigma)
learned = centred_log_ratio_correlation(ctm.prior_covariance_)[np.ix_(match, match)]

fig, axes = plt.subplots(1, 2, figsize=(9, 4), layout="constrained")
for ax, (title, matrix) in zip(axes, [("true", true), ("learned by the CTM", learned)]):
    im = ax.imshow(matrix, cmap="RdBu_r", vmin=-1, vmax=1)
    for (i, j), value in np.ndenumerate(matrix):
        if i != j:
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(K))
    ax.set_yticks(range(K))
    ax.set_xlabel("topic")
    ax.set_title(title)
axes[0].set_ylabel("topic")
fig.colorbar(im, ax=axes, label="correlation of centred log-ratios", shrink=0.8)
plt.show()

print("largest |learned - true| correlation:", f"{np.abs(learned - true).max():.2f}")

# %%
# The signs and the pattern are found: 0 and 1 together, 2 and 3 apart,
# topic 4 opposite 0 and 1.  The learned correlations are weaker than the
# true ones.  The two topics that share their documents are also the
# hardest to tell apart: the topics fitted to them put less of their mass
# on their own words (printed above) than the 0.95 of the true topics.
