"""
Topics of a small corpus, with held-out perplexity and coherence
================================================================

:class:`skvi.SVILatentDirichletAllocation` is a drop-in for scikit-learn's
LDA fitted on skvi's engine.  Here it runs online (stochastic steps on
minibatches of 8 documents) on the 180 short texts that ship with skvi
(:func:`skvi.datasets.load_topics_sample`: thirty documents on each of six
themes), and is scored with the two measures of :mod:`skvi.metrics`:

- :func:`~skvi.metrics.document_completion_perplexity` on held-out
  documents: half of each test document's words fix its topic proportions,
  the other half are scored (lower is better);
- :func:`~skvi.metrics.topic_coherence` (NPMI) of each topic's top words in
  the corpus (higher is better, at most 1).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split

from skvi import SVILatentDirichletAllocation
from skvi.datasets import load_topics_sample
from skvi.metrics import document_completion_perplexity, topic_coherence

corpus = load_topics_sample()
vectorizer = CountVectorizer(stop_words="english", min_df=2)
counts = vectorizer.fit_transform(corpus.data)
words = vectorizer.get_feature_names_out()
train_idx, test_idx = train_test_split(
    np.arange(counts.shape[0]),
    test_size=0.25,
    random_state=0,
    stratify=corpus.target,
)
train, test = counts[train_idx], counts[test_idx]
print(
    f"{counts.shape[0]} documents, {counts.shape[1]} words; "
    f"{train.shape[0]} to fit, {test.shape[0]} held out"
)

# %%
# Several starts
# --------------
# The LDA objective has many local optima, and on a corpus this small the
# random start decides which one a fit reaches.  Each fit takes a fraction
# of a second, so we fit eight seeds and keep the one with the highest
# training ELBO (``score``), which uses no held-out data.  The table shows
# that the held-out measures mostly agree with that choice.

fits = []
for seed in range(8):
    lda = SVILatentDirichletAllocation(
        n_components=6,
        learning_method="online",
        batch_size=8,
        max_iter=30,
        random_state=seed,
    ).fit(train)
    perplexity = document_completion_perplexity(lda, test, random_state=0)
    npmi = topic_coherence(lda, counts, measure="npmi").mean()
    fits.append((lda.score(train), perplexity, npmi, lda))
    print(
        f"seed {seed}: training ELBO {fits[-1][0]:9.1f}, held-out perplexity "
        f"{perplexity:6.1f}, mean NPMI {npmi:.3f}"
    )
best = max(fits, key=lambda fit: fit[0])
lda = best[3]
print(f"kept random_state={lda.random_state}")

# %%
# The topics
# ----------
# The eight most probable words of each topic (the rows of ``components_``
# are the topics' Dirichlet parameters) and each topic's NPMI coherence.

npmi = topic_coherence(lda, counts, measure="npmi")
for k, topic in enumerate(lda.components_):
    top = words[np.argsort(-topic)[:8]]
    print(f"topic {k} (NPMI {npmi[k]:+.2f}): {' '.join(top)}")

# %%
# Topics against the themes
# -------------------------
# ``transform`` gives each document's expected topic proportions.  Averaged
# over the documents of each theme, a good fit puts most of a theme's mass
# on one topic.  The model never saw the theme labels.

theta = lda.transform(counts)
table = np.array(
    [
        theta[corpus.target == t].mean(axis=0)
        for t in range(len(corpus.target_names))
    ]
)
fig, ax = plt.subplots(figsize=(6, 4))
im = ax.imshow(table, cmap="Blues", vmin=0, vmax=1)
ax.set_yticks(range(len(corpus.target_names)), corpus.target_names)
ax.set_xticks(range(lda.n_components))
ax.set_xlabel("topic")
for (t, k), value in np.ndenumerate(table):
    ax.text(
        k,
        t,
        f"{value:.2f}",
        ha="center",
        va="center",
        fontsize=8,
        color="w" if value > 0.5 else "k",
    )
fig.colorbar(im, ax=ax, label="mean topic proportion")
ax.set_title("Mean topic proportions of each theme's documents")
fig.tight_layout()
plt.show()
