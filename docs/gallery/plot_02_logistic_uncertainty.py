"""
Bayesian logistic regression: predictive uncertainty on breast cancer
=====================================================================

:class:`skvi.SVILogisticRegression` fits a full-covariance Gaussian
posterior ``q(w) = N(m, V)`` over the weights of a logistic regression, by
Monte Carlo structured SVI.  Its ``predict_proba`` is the posterior
predictive ``E_q[sigmoid(x . w + b)]``, not the sigmoid of the mean logit:
a row whose logit is uncertain gets a probability nearer 1/2.

We compare it with scikit-learn's
:class:`~sklearn.linear_model.LogisticRegression` under the same prior
(``C = prior_variance = 1``: scikit-learn's fit is the posterior mode), on
scikit-learn's bundled breast cancer data.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skvi import SVILogisticRegression

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, random_state=0, stratify=y
)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
print(
    f"{X_train.shape[0]} training rows, {X_test.shape[0]} test rows, "
    f"{X.shape[1]} features"
)

# %%
# Fit both models
# ---------------
# 398 training rows fit in one minibatch of the default ``batch_size=2000``,
# so ``fit`` takes batch steps.  The default expectations of the updates are
# Gauss-Hermite quadrature, not Monte Carlo draws, so the fit is
# deterministic.

svi = SVILogisticRegression(
    prior_variance=1.0, random_state=0
)
svi.fit(X_train, y_train)
sk = LogisticRegression(C=1.0, max_iter=1000).fit(X_train, y_train)
print(f"skvi: {svi.n_iter_} passes, converged: {svi.converged_}")

p_svi = svi.predict_proba(X_test)[:, 1]
p_sk = sk.predict_proba(X_test)[:, 1]
for name, p in [
    ("scikit-learn (posterior mode)", p_sk),
    ("skvi (posterior predictive)", p_svi),
]:
    print(
        f"{name:30s} test log-loss {log_loss(y_test, p):.4f}, "
        f"accuracy {accuracy_score(y_test, p > 0.5):.4f}"
    )
print(
    "largest |skvi posterior mean - scikit-learn coef|:",
    np.round(np.abs(svi.coef_ - sk.coef_).max(), 3),
)

# %%
# How uncertain is each logit?
# ----------------------------
# Under ``q`` the logit of a row is Gaussian with mean ``x . m`` and
# variance ``x^T V x`` (with a 1 appended to ``x`` for the intercept).
# ``posterior_mean_`` and ``posterior_covariance_`` hold ``m`` and ``V``,
# the coefficients first and the intercept last.

design = np.column_stack([X_test, np.ones(len(X_test))])
logit_mean = design @ svi.posterior_mean_
logit_sd = np.sqrt(
    np.einsum("ij,jk,ik->i", design, svi.posterior_covariance_, design)
)
print(
    f"sd of the test logits: median {np.median(logit_sd):.2f}, "
    f"max {logit_sd.max():.2f}"
)

# %%
# Predictive against plug-in probabilities
# ----------------------------------------
# Left: scikit-learn's probability against skvi's predictive probability,
# coloured by the sd of the logit.  Points below the diagonal on the right
# (and above it on the left) are rows where averaging over ``q(w)`` moved
# the prediction towards 1/2.  Right: the mean logit against its sd; the
# misclassified test rows (crosses) sit near the decision boundary.

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
sc = ax0.scatter(p_sk, p_svi, c=logit_sd, cmap="viridis", s=14)
ax0.plot([0, 1], [0, 1], "k:", lw=1)
ax0.set_xlabel("scikit-learn: sigmoid of the MAP logit")
ax0.set_ylabel("skvi: E_q[sigmoid(logit)]")
fig.colorbar(sc, ax=ax0, label="sd of the logit under q")

wrong = (p_svi > 0.5) != y_test
ax1.scatter(
    logit_mean[~wrong], logit_sd[~wrong], s=14, c="0.5", label="correct"
)
ax1.scatter(
    logit_mean[wrong],
    logit_sd[wrong],
    s=50,
    c="C3",
    marker="x",
    label="misclassified",
)
ax1.axvline(0, color="k", lw=0.8)
ax1.set_xlabel("posterior mean of the logit")
ax1.set_ylabel("sd of the logit")
ax1.legend()
fig.tight_layout()
plt.show()

# %%
# Both models label the test rows alike; skvi's probabilities are less
# extreme where the logit is uncertain.  On this split that costs a little
# test log-loss against the plug-in probabilities at the same prior (the
# multi-class comparison on digits in the user guide, :doc:`/glm`, found the
# same); what it buys is a probability that says how firmly the data pin
# each prediction down.
