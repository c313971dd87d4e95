"""What topic models share beyond the engine: reading each topic's top words."""

import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = ["TopicWordsMixin"]


class TopicWordsMixin:
    """Each topic's top words, for a fitted topic model with ``components_``.

    A scikit-learn estimator takes part by setting ``components_`` of shape
    ``(n_components, n_features)``, one row of word weights per topic, and,
    when fitted on a DataFrame, ``feature_names_in_``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from skvi.models._topics import TopicWordsMixin
    >>> class Topics(TopicWordsMixin, BaseEstimator):
    ...     def fit(self, X=None):
    ...         self.components_ = np.array([[1.0, 5.0, 3.0], [4.0, 0.5, 4.0]])
    ...         return self
    >>> Topics().fit().top_words(2)
    array([[1, 2],
           [0, 2]])
    """

    def top_words(self, n=10, feature_names=None):
        """Each topic's ``n`` top words, from the largest weight down.

        The top words of topic ``k`` are the ``n`` columns of largest
        ``components_[k]``, in decreasing order of weight, ties going to the
        lower column index.  The order is that of the topic's expected word
        probabilities (``components_[k]`` divided by its sum), and the words
        are those :func:`skvi.metrics.topic_coherence` scores.

        Parameters
        ----------
        n : int, default=10
            Words per topic, from 1 to ``n_features_in_``.
        feature_names : array-like of str of shape (n_features_in_,), default=None
            The word of each column, for example
            ``vectorizer.get_feature_names_out()`` of the ``CountVectorizer``
            that made the counts.  By default the model's
            ``feature_names_in_`` when it was fitted on a DataFrame, and
            column indices otherwise.

        Returns
        -------
        top : ndarray of shape (n_components, n)
            Row ``k`` holds topic ``k``'s top words: column indices (int)
            without feature names, the words (str) with them.

        Raises
        ------
        ValueError
            If ``n`` is not an int in ``[1, n_features_in_]``, or
            ``feature_names`` does not hold one str per column.

        Examples
        --------
        >>> from sklearn.feature_extraction.text import CountVectorizer
        >>> from skvi import SVILatentDirichletAllocation
        >>> docs = ["star galaxy telescope star", "galaxy star orbit",
        ...         "bread butter oven", "oven bread flour bread"]
        >>> vectorizer = CountVectorizer()
        >>> counts = vectorizer.fit_transform(docs)
        >>> lda = SVILatentDirichletAllocation(n_components=2, random_state=0).fit(counts)
        >>> lda.top_words(3).shape
        (2, 3)
        >>> words = lda.top_words(3, feature_names=vectorizer.get_feature_names_out())
        >>> sorted(sorted(topic) for topic in words.tolist())
        [['bread', 'flour', 'oven'], ['galaxy', 'star', 'telescope']]
        """
        check_is_fitted(self, "components_")
        weights = np.asarray(self.components_, dtype=np.float64)
        n_topics, n_features = weights.shape
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= n_features:
            raise ValueError(f"n must be an int in [1, n_features={n_features}], got {n!r}.")
        top = np.argsort(-weights, axis=1, kind="stable")[:, :n]
        if feature_names is None:
            feature_names = getattr(self, "feature_names_in_", None)
            if feature_names is None:
                return top
        names = np.asarray(feature_names, dtype=object)
        if names.ndim != 1 or names.shape[0] != n_features:
            raise ValueError(
                f"feature_names must hold one word per column of components_, {n_features}; "
                f"got an array of shape {names.shape}."
            )
        if not all(isinstance(name, str) for name in names):
            raise ValueError("feature_names must be words of type str.")
        return names.astype(str)[top]
