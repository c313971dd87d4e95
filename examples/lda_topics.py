"""Online LDA on a text corpus: topics, coherence, and two step-size schedules.

Fits :class:`skvi.SVILatentDirichletAllocation` by stochastic variational
inference, streaming the training documents in minibatches through
``partial_fit`` (``total_samples`` is the number of training documents), and
prints

- the 10 top words of every topic with its NPMI and UMass coherence on the
  training corpus (:func:`skvi.metrics.topic_coherence`) and their means;
- the held-out document-completion perplexity of the test documents
  (:func:`skvi.metrics.document_completion_perplexity`): each test document
  is split into an observed and a held-out half, its topic proportions are
  inferred from the first and the second is scored, so no word helps to
  predict itself.

The same stream is run with two Robbins-Monro step-size schedules
``rho_t = (t + offset) ** -decay`` passed as ``learning_rate``: a longer
delay with slower forgetting, ``RobbinsMonro(offset=64, decay=0.55)``, the
direction in which Hoffman, Blei & Bach (2010) found online LDA to do better
(larger ``tau0``, ``kappa`` nearer 0.5), and scikit-learn's default
``RobbinsMonro(offset=10, decay=0.7)``.  The perplexity of (at most 2000)
test documents is evaluated every few minibatches and plotted against the
number of documents seen, one line per schedule.  The topics and scores
printed are those of the first schedule's model.

Corpus.  ``CORPUS`` is a folder with ``train.npz`` and ``test.npz``
(scipy.sparse document-word count matrices) and ``vocab.txt`` (one word per
line, the columns in order).  It defaults to
``20newsgroups-bydate`` in :func:`skvi.datasets.get_data_home` (``$SKVI_DATA``,
else ``../shared/data`` beside a checkout, else ``~/skvi_data``; the script runs
from any folder).  If the folder is
absent, the script falls back to skvi's embedded sample of 180 short texts
on six themes (:func:`skvi.datasets.load_topics_sample`), vectorised with
``CountVectorizer(stop_words='english', min_df=2)`` and split 80/20 into
train and test, with 6 topics, minibatches of 16 documents and 10 passes.

Run::

    python examples/lda_topics.py [CORPUS] [--n-topics K] [--batch-size B]
                                  [--passes P] [--max-docs N] [--plot PATH]

``--max-docs N`` keeps at most ``N`` training and ``N`` test documents
(default: all), for a quick run, e.g. ``--max-docs 500 --passes 1``: rows
``i * n // N`` for ``i < N`` of each matrix of ``n`` rows, spread over the
file so that a corpus stored in groups (20 Newsgroups is, by newsgroup)
keeps every group.

The plot (default ``lda_perplexity.png``; ``--plot ''`` for none) needs
matplotlib (``pip install matplotlib``); without it the script prints a note
and the final perplexity of each schedule.  On the 20 Newsgroups corpus the
defaults (20 topics, minibatches of 256, 2 passes) take well under a minute.
"""

import argparse
import pathlib
import time

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split

from skvi import SVILatentDirichletAllocation
from skvi.datasets import get_data_home, load_topics_sample
from skvi.metrics import document_completion_perplexity, topic_coherence
from skvi.schedules import RobbinsMonro

SCHEDULES = [RobbinsMonro(offset=64, decay=0.55), RobbinsMonro(offset=10, decay=0.7)]
N_EVAL_DOCS = 2000  # test documents scored along the way for the plot
N_EVALS = 25  # about this many points per curve
SEED = 0


def _label(schedule):
    """Name a Robbins-Monro schedule with both of its parameters."""
    return f"RobbinsMonro(offset={schedule.offset:g}, decay={schedule.decay:g})"


def _default_corpus():
    """Return ``20newsgroups-bydate`` in :func:`skvi.datasets.get_data_home`."""
    return get_data_home() / "20newsgroups-bydate"


def _has_corpus(folder):
    folder = pathlib.Path(folder)
    return all((folder / name).is_file() for name in ("train.npz", "test.npz", "vocab.txt"))


def _load_corpus(folder):
    """Return a dict describing the corpus in ``folder``, or (None or missing) the sample."""
    if folder is None:
        return _sample_corpus()
    folder = pathlib.Path(folder)
    files = [folder / name for name in ("train.npz", "test.npz", "vocab.txt")]
    if all(f.is_file() for f in files):
        X_train = sp.load_npz(files[0]).tocsr()
        X_test = sp.load_npz(files[1]).tocsr()
        vocab = np.array(files[2].read_text(encoding="utf-8").splitlines())
        return dict(
            name=f"{folder.name} from {folder}", X_train=X_train, X_test=X_test,
            vocab=vocab, n_topics=20, batch_size=256, passes=2,
        )
    print(f"no corpus folder with train.npz, test.npz and vocab.txt at {folder}; "
          "falling back to skvi's embedded sample (load_topics_sample).  For the real "
          "corpus pass its folder as the first argument, e.g. 'python "
          "examples/lda_topics.py /path/to/20newsgroups-bydate', or set SKVI_DATA to "
          f"the folder that holds 20newsgroups-bydate/ (now {get_data_home()})")
    return _sample_corpus()


def _sample_corpus():
    """skvi's embedded sample of 180 short texts, vectorised and split."""
    sample = load_topics_sample()
    train_text, test_text = train_test_split(
        sample.data, test_size=0.2, random_state=SEED, stratify=sample.target
    )
    vectorizer = CountVectorizer(stop_words="english", min_df=2)
    X_train = vectorizer.fit_transform(train_text).tocsr()
    X_test = vectorizer.transform(test_text).tocsr()
    return dict(
        name="skvi's embedded topics sample (6 themes)", X_train=X_train,
        X_test=X_test, vocab=vectorizer.get_feature_names_out(), n_topics=6,
        batch_size=16, passes=10,
    )


def _stream(model, X, batch_size, passes, evaluate=None, every=1):
    """Feed X to ``model.partial_fit`` in shuffled minibatches.

    Every pass visits the documents in a new random order (the same orders
    for every model, since the generator is seeded).  ``evaluate(model)`` is
    called every ``every`` minibatches; returns the list of
    ``(documents seen, evaluate(model))``.
    """
    rng = np.random.RandomState(SEED)
    curve, seen, step = [], 0, 0
    for _ in range(passes):
        order = rng.permutation(X.shape[0])
        for start in range(0, X.shape[0], batch_size):
            batch = order[start:start + batch_size]
            model.partial_fit(X[batch])
            seen += batch.size
            step += 1
            if evaluate is not None and step % every == 0:
                curve.append((seen, evaluate(model)))
    if evaluate is not None and (not curve or curve[-1][0] != seen):
        curve.append((seen, evaluate(model)))
    return curve


def _plot(curves, path, title):
    """Save the perplexity curves to ``path``; return False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, curve in curves.items():
        seen, perplexity = zip(*curve)
        ax.plot(seen, perplexity, marker="o", markersize=3, label=label)
    ax.set_xlabel("training documents seen")
    ax.set_ylabel("held-out document-completion perplexity")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv=None):
    """Fit online LDA, print topics and scores, and compare two schedules.

    Parameters
    ----------
    argv : list of str or None, default=None
        Command-line arguments (None reads ``sys.argv``); see the module
        docstring.

    Returns
    -------
    results : dict
        ``'model'``: the model fitted with the first schedule;
        ``'perplexity'``: its held-out perplexity on all test documents;
        ``'npmi'`` and ``'umass'``: its per-topic coherence arrays;
        ``'curves'``: for each schedule's name, the list of
        ``(documents seen, perplexity)``.

    Examples
    --------
    ``--sample`` selects the embedded sample (as does a missing default
    corpus; a folder given but missing is an error):

    >>> results = main(["--sample", "--passes", "2", "--plot", ""])
    corpus: skvi's embedded topics sample (6 themes): 144 train / 36 test documents, ...
    ...
    held-out document-completion perplexity on 36 test documents: ...
    >>> results["npmi"].shape
    (6,)
    """
    parser = argparse.ArgumentParser(
        description="Online LDA with skvi: topics, coherence and two schedules."
    )
    parser.add_argument("corpus", nargs="?", default=None,
                        help="folder with train.npz, test.npz and vocab.txt "
                             "(default: $SKVI_DATA/20newsgroups-bydate)")
    parser.add_argument("--sample", action="store_true",
                        help="use skvi's embedded sample of 180 texts instead of a corpus")
    parser.add_argument("--n-topics", type=int, default=None,
                        help="number of topics (default: 20, or 6 for the sample)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="documents per minibatch (default: 256, "
                             "or 16 for the sample)")
    parser.add_argument("--passes", type=int, default=None,
                        help="passes over the training documents (default: 2, "
                             "or 10 for the sample)")
    parser.add_argument("--max-docs", type=int, default=None,
                        help="use at most N training and N test documents, spread "
                             "evenly over each file (default: all)")
    parser.add_argument("--plot", default="lda_perplexity.png",
                        help="PNG file for the perplexity curves ('' for none)")
    args = parser.parse_args(argv)
    for name in ("n_topics", "batch_size", "passes", "max_docs"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")

    t0 = time.perf_counter()
    if args.sample:
        corpus = _load_corpus(None)
    elif args.corpus and not _has_corpus(args.corpus):
        parser.error(f"{args.corpus} holds no train.npz, test.npz and vocab.txt (pass the "
                     "folder of 20newsgroups-bydate, or --sample for the embedded sample)")
    else:
        corpus = _load_corpus(args.corpus if args.corpus else _default_corpus())
    X_train, X_test, vocab = corpus["X_train"], corpus["X_test"], corpus["vocab"]
    if args.max_docs is not None:
        X_train, X_test = (X[np.arange(min(args.max_docs, X.shape[0])) * X.shape[0]
                             // min(args.max_docs, X.shape[0])] for X in (X_train, X_test))
        corpus["name"] += f" (at most {args.max_docs} train / test documents)"
    n_topics = args.n_topics if args.n_topics else corpus["n_topics"]
    batch_size = args.batch_size if args.batch_size else corpus["batch_size"]
    passes = args.passes if args.passes else corpus["passes"]
    print(f"corpus: {corpus['name']}: {X_train.shape[0]} train / {X_test.shape[0]} "
          f"test documents, {X_train.shape[1]} words, "
          f"{int(X_train.sum())} training tokens")

    # A fixed subsample of the test documents for the curves.
    rng = np.random.RandomState(SEED)
    n_eval = min(N_EVAL_DOCS, X_test.shape[0])
    X_eval = X_test[np.sort(rng.choice(X_test.shape[0], n_eval, replace=False))]
    n_steps = passes * -(-X_train.shape[0] // batch_size)
    every = max(1, n_steps // N_EVALS)

    def evaluate(model):
        return document_completion_perplexity(model, X_eval, random_state=SEED)

    models, curves = [], {}
    for schedule in SCHEDULES:
        model = SVILatentDirichletAllocation(
            n_components=n_topics, learning_method="online", batch_size=batch_size,
            total_samples=X_train.shape[0], learning_rate=schedule,
            random_state=SEED,
        )
        t = time.perf_counter()
        curves[_label(schedule)] = _stream(
            model, X_train, batch_size, passes, evaluate, every
        )
        models.append(model)
        print(f"{_label(schedule)}: {passes} passes of minibatches of {batch_size} "
              f"({n_steps} steps) in {time.perf_counter() - t:.1f} s, "
              f"perplexity on {n_eval} test documents every {every} steps")

    model = models[0]
    npmi = topic_coherence(model, X_train, top_n=10, measure="npmi")
    umass = topic_coherence(model, X_train, top_n=10, measure="umass")
    top = np.argsort(-model.components_, axis=1, kind="stable")[:, :10]
    print(f"\ntopics of the {_label(SCHEDULES[0])} model "
          "(coherence on the training corpus)")
    print("topic   NPMI   UMass  top 10 words")
    for k in range(n_topics):
        print(f"{k:5d} {npmi[k]:6.3f} {umass[k]:7.3f}  {' '.join(vocab[top[k]])}")
    print(f"mean  {npmi.mean():6.3f} {umass.mean():7.3f}")
    perplexity = document_completion_perplexity(model, X_test, random_state=SEED)
    print(f"held-out document-completion perplexity on {X_test.shape[0]} test "
          f"documents: {perplexity:.1f}")

    print(f"\nperplexity on {n_eval} test documents after {passes} passes:")
    for label, curve in curves.items():
        print(f"  {label}: {curve[-1][1]:.1f}")
    if args.plot:
        title = (f"{corpus['name'].split(' from ')[0]}: {n_topics} topics, "
                 f"minibatches of {batch_size}")
        if _plot(curves, args.plot, title):
            print(f"plot saved to {args.plot}")
        else:
            print("matplotlib is not installed: no plot (pip install matplotlib)")
    print(f"total time {time.perf_counter() - t0:.1f} s")
    return dict(model=model, perplexity=perplexity, npmi=npmi, umass=umass,
                curves=curves)


if __name__ == "__main__":
    main()
