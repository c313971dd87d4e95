"""The GLM estimators' shared docstring sections (parameters and attributes)."""

_GLM_PARAMS_DOC = """
    Parameters
    ----------
    prior_variance : float, 'auto' or None, default=None
        Variance of the zero-mean Gaussian prior of each weight.  None is 1.0
        (scikit-learn's ``C=1``) for one linear predictor, and 5.0 for a
        softmax (more than two classes), whose posterior predictive is
        under-confident at 1: on digits with pixels in [0, 1] its held-out
        NLL is 0.171 at 1 and 0.114 at 5, where scikit-learn's
        cross-validated ``LogisticRegressionCV`` has 0.115 (``docs/glm_benchmark.md``,
        "More than two classes").  ``'auto'`` learns it by empirical Bayes:
        after every step it moves (with the step size) towards the mean of
        ``E_q[w_j^2]``, the ELBO's maximiser.
    fit_intercept : bool, default=True
        Whether to add an intercept (a weight on a constant feature).
    intercept_prior_variance : float, default=100.0
        Prior variance of the intercept: wide, so it is barely shrunk.
    algorithm : {'mc-ssvi', 'h-mc-ssvi', 's-dsvi'}, default='mc-ssvi'
        How ``q(w)`` moves (Monte Carlo structured SVI, :mod:`skvi.update_rules`): natural-gradient
        steps on both the mean and the covariance (``'mc-ssvi'``),
        natural-gradient covariance and AdaGrad mean (``'h-mc-ssvi'``), or
        AdaGrad on the mean and the Cholesky factor (``'s-dsvi'``).
        ``'mc-ssvi'`` is the default: its mean steps are preconditioned by
        the covariance, so they reach the optimum on ill-conditioned
        features (a9a's one-hot columns) where AdaGrad's diagonal steps
        stall short of it, and the engine's online step safety (a probe
        test) stops the initial instability for which the Monte Carlo structured SVI paper prefers the
        hybrid.  See ``docs/glm_benchmark.md``, "Choosing the algorithm".
    gradient_learning_rate : float, default=0.5
        AdaGrad's global learning rate for the ordinary-gradient parts
        (``'h-mc-ssvi'`` and ``'s-dsvi'``; unused by ``'mc-ssvi'``).  The
        Monte Carlo structured SVI paper uses 1.0 on z-scored features; on z-scored a9a, 0.1 did best
        of 0.1, 0.5 and 1.0 in ``examples/glm_convergence.py``.
<expectation>
    learning_method : {'online', 'batch'}, default='online'
        ``'online'``: steps on shuffled minibatches of ``batch_size`` rows
        with ``rho_t`` from the schedule.  ``'batch'``: every step uses all
        rows with ``rho = 1``, the fixed-point iteration of Sheth and
        Khardon; with ``expectation='quadrature'`` and ``'mc-ssvi'`` it is
        deterministic and, for the Gaussian likelihood, exact in one step.
    batch_size : int, default=2000
        Largest number of rows per minibatch (the paper's 2000): online
        ``fit`` cuts each pass into ``ceil(N / batch_size)`` near-equal
        minibatches (17 of 1915-1916 rows for a9a's 32,561).
"""

_EXPECTATION_DOC = """    expectation : {'auto', 'mc', 'quadrature', 'bound'}, default='auto'
        How ``E_q[d log p/df]`` and ``E_q[d^2 log p/df^2]`` are computed:
        Monte Carlo with ``n_mc_samples`` draws per row (the paper), or
        Gauss-Hermite quadrature with ``n_mc_samples`` nodes, at least the
        ELBO's 20 (so that a batch step and the test of it agree).  With more
        than two classes the predictors form a K-vector: ``'quadrature'`` is
        then a fixed quasi-Monte-Carlo rule of at least 512 points, the
        ELBO's (:class:`skvi.likelihoods.Softmax`), and ``'bound'`` replaces
        the log-likelihood by Böhning's quadratic lower bound, which needs
        no integral: ``q`` is then the MAP with a covariance that does not
        depend on it, and the ELBO reported is a bound on the ELBO
        (``docs/glm.md``, "More than two classes").  ``'auto'`` is
        ``'bound'`` for a softmax whose steps are all batch steps (a batch
        fit, or all the rows in one minibatch) with ``'mc-ssvi'`` and a
        fixed prior variance; otherwise ``'quadrature'`` for logistic
        regression (deterministic steps, which Monte-Carlo noise would keep
        from settling at the fixed point), ``'quadrature'`` for Poisson
        regression with the exp link (exact: ``E[e^f] = exp(m + v / 2)``)
        and ``'mc'`` with the softplus link.
    n_mc_samples : int, default=10
        Draws (or quadrature nodes) per expectation.
"""
_GLM_PARAMS_DOC = _GLM_PARAMS_DOC.replace("<expectation>\n", _EXPECTATION_DOC)

_GLM_ATTRS_DOC = """
    posterior_mean_ : ndarray of shape (n_weights,)
        Mean of ``q(w)``: the coefficients, then the intercept if fitted
        (with K > 2 classes, these blocks for each class in turn).
    posterior_covariance_ : ndarray of shape (n_weights, n_weights)
        Covariance of ``q(w)``, same order.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Posterior mean of the coefficients (one row per class for a softmax).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Posterior mean of the intercept(s) (0 when not fitted).
    prior_variance_ : float
        The prior variance of the weights (learned when ``'auto'``).
    natural_params_, lower_bounds_, lower_bound_, n_iter_, n_batch_iter_, \
n_samples_seen_, converged_, n_rejected_steps_
        Engine history, see :class:`skvi.engine.SVIEstimator`.
    n_features_in_ : int
        Number of features seen during fit.
"""
