"""Bayesian logistic regression (two classes, or a softmax over more)."""

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, unique_labels

from ...likelihoods import Bernoulli, Softmax
from .base import _BayesianGLM
from .docstrings import _GLM_ATTRS_DOC, _GLM_PARAMS_DOC

__all__ = ["SVILogisticRegression"]


class SVILogisticRegression(ClassifierMixin, _BayesianGLM):
    __doc__ = (
        """Bayesian logistic regression by Monte-Carlo structured SVI.

    ``y_i ~ Bernoulli(sigmoid(x_i . w + b))`` with a Gaussian prior on
    ``(w, b)`` and a full-covariance Gaussian posterior, fitted by the
    MC-SSVI family of the Monte Carlo structured SVI paper on minibatches of rows.  ``predict_proba``
    integrates the sigmoid over the posterior of the linear predictor
    (Gauss-Hermite quadrature), so predictions are less confident far from
    the data.  With more than two classes the model is the softmax
    (multinomial) one, with one weight vector per class and one Gaussian
    over all of them (``docs/glm.md``, "More than two classes").
"""
        + _GLM_PARAMS_DOC
        + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels; with two, ``classes_[1]`` is the positive class.
"""
        + _GLM_ATTRS_DOC
        + """
    See Also
    --------
    sklearn.linear_model.LogisticRegression : the point estimate (MAP with
        ``C = prior_variance``).

    Examples
    --------
    >>> import numpy as np
    >>> from skvi import SVILogisticRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> y = (rng.uniform(size=2000) < 1 / (1 + np.exp(-X @ [2.0, -1.0, 0.0]))).astype(int)
    >>> clf = SVILogisticRegression(batch_size=500, random_state=0).fit(X, y)
    >>> np.round(clf.coef_, 2)
    array([[ 1.89, -0.94, -0.03]])

    With 2000 rows the posterior mean is close to scikit-learn's MAP under
    the same prior (``C = prior_variance``):

    >>> from sklearn.linear_model import LogisticRegression
    >>> map_coef = LogisticRegression(C=1.0).fit(X, y).coef_
    >>> bool(np.abs(clf.coef_ - map_coef).max() < 0.05)
    True
    >>> clf.predict_proba(X[:2]).round(2)
    array([[0.05, 0.95],
           [0.07, 0.93]])
    """
    )

    def __init__(
        self,
        *,
        prior_variance=None,
        fit_intercept=True,
        intercept_prior_variance=100.0,
        algorithm="mc-ssvi",
        gradient_learning_rate=0.5,
        expectation="auto",
        n_mc_samples=10,
        learning_method="online",
        batch_size=2000,
        max_iter=20,
        tol=1e-4,
        learning_offset=1.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        step_safety=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        # Its own signature, so that a wrong keyword's TypeError names this
        # class rather than the private base.
        super().__init__(
            prior_variance=prior_variance,
            fit_intercept=fit_intercept,
            intercept_prior_variance=intercept_prior_variance,
            algorithm=algorithm,
            gradient_learning_rate=gradient_learning_rate,
            expectation=expectation,
            n_mc_samples=n_mc_samples,
            learning_method=learning_method,
            batch_size=batch_size,
            max_iter=max_iter,
            tol=tol,
            learning_offset=learning_offset,
            learning_decay=learning_decay,
            learning_rate=learning_rate,
            total_samples=total_samples,
            step_safety=step_safety,
            random_state=random_state,
            n_jobs=n_jobs,
            verbose=verbose,
        )

    _point_estimate = "scikit-learn's LogisticRegression"

    @property
    def _likelihood(self):
        return Bernoulli() if self._n_outputs == 1 else Softmax()

    def _encode_targets(self, y, reset, classes=None):
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-dimensional, got shape {y.shape}.")
        if classes is not None:
            classes = self._check_classes(classes, reset)
        if reset:
            check_classification_targets(y)
            found = np.unique(y) if classes is None else classes
            if found.size < 2:
                raise ValueError(
                    "SVILogisticRegression needs samples of at least 2 classes; the "
                    f"data contain only one class: {found[0]!r}. A first partial_fit call "
                    "needs classes=[...] (every label the stream will contain) unless its "
                    "minibatch already contains them."
                )
            self.classes_ = found
            # Two classes: one weight vector (the log-odds); more: one per class.
            self._n_outputs = 1 if found.size == 2 else found.size
        unknown = ~np.isin(y, self.classes_)
        if np.any(unknown):
            raise ValueError(
                f"y contains labels not in classes_ {self.classes_.tolist()}: "
                f"{np.unique(y[unknown]).tolist()}."
            )
        if self._n_outputs == 1:
            return (y == self.classes_[1]).astype(np.float64)
        return np.searchsorted(self.classes_, y).astype(np.float64)

    def _check_classes(self, classes, reset):
        """``partial_fit``'s ``classes``, checked as scikit-learn's classifiers check them.

        The labels of classification targets (a NaN or a continuous value is
        a ValueError, never a class), and on a later call the first call's
        labels again (scikit-learn's ``_check_partial_fit_first_call``):
        classes cannot be added to a fitted posterior.
        """
        try:
            with np.errstate(invalid="ignore"):  # the NaN test's own cast of a NaN to int
                labels = unique_labels(classes)
        except ValueError as exc:
            raise ValueError(
                f"{type(self).__name__}.partial_fit: classes={classes!r} are not class "
                f"labels: {exc}"
            ) from exc
        if not reset and not np.array_equal(self.classes_, labels):
            raise ValueError(
                f"{type(self).__name__}.partial_fit: `classes={classes!r}` is not the same "
                f"as on the first call to partial_fit, was: {self.classes_!r}."
            )
        return labels

    def _target_sums(self, y, weight):
        if self._n_outputs == 1:
            return super()._target_sums(y, weight)
        return np.bincount(y.astype(np.intp), weights=weight, minlength=self._n_outputs)

    def _baseline(self, target_sums, total):
        if self._n_outputs == 1:
            p = np.clip(float(target_sums) / total, 1e-3, 1 - 1e-3)
            return float(np.log(p / (1.0 - p)))
        # Softmax: the log class frequencies, centred.
        log_freq = np.log(np.maximum(target_sums / np.sum(target_sums), 1e-3))
        return log_freq - log_freq.mean()

    def decision_function(self, X):
        """Log-odds (two classes) or log-probabilities (more) of :meth:`predict_proba`.

        The Bayesian predictive is not the sigmoid of the posterior mean
        logit: a row whose logit is uncertain gets a probability closer to
        1/2.  So with two classes the decision function is the predictive's
        log-odds ``logit E_q[sigmoid(x . w + b)]``, whose ranking agrees
        with ``predict_proba``; its sign is that of the posterior mean logit
        (``E[sigmoid(f)] > 1/2`` exactly when ``E[f] > 0`` for a Gaussian
        ``f``).  With more classes it is the log of the predictive
        probabilities, one column per class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Log-odds of the positive class ``classes_[1]``, or
            log-probabilities of every class.
        """
        mean, var = self._predictive_moments(X)
        if self._n_outputs > 1:
            with np.errstate(divide="ignore"):
                return np.log(self._likelihood.predictive_proba(mean, var))
        p = self._likelihood.predictive_mean(mean, var)
        with np.errstate(divide="ignore"):
            logit = np.log(p) - np.log1p(-p)
        # Where the quadrature saturates at 0 or 1, keep the sign of the mean.
        return np.where(np.isfinite(logit), logit, np.where(mean > 0, np.inf, -np.inf))

    def predict_proba(self, X):
        """Posterior predictive class probabilities.

        Two classes: ``p(y = classes_[1] | x) = E_q[sigmoid(x . w + b)]`` by
        40-point Gauss-Hermite quadrature.  More: ``E_q[softmax(W x + b)]``
        over the joint Gaussian of the class scores, by a fixed 512-point
        quasi-Monte-Carlo rule (:class:`skvi.likelihoods.Softmax`).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of the classes in the order of ``classes_``.
        """
        mean, var = self._predictive_moments(X)
        if self._n_outputs > 1:
            return self._likelihood.predictive_proba(mean, var)
        p = np.clip(self._likelihood.predictive_mean(mean, var), 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities in the order of ``classes_``.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The most probable class under the posterior predictive.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted labels from ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 2:
            return self.classes_[np.argmax(scores, axis=1)]
        return self.classes_[(scores > 0).astype(int)]
