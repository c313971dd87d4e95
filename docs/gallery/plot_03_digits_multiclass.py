"""
Ten classes: which handwritten digits is the posterior unsure of?
=================================================================

With more than two classes :class:`skvi.SVILogisticRegression` is the
multinomial (softmax) model of scikit-learn's
:class:`~sklearn.linear_model.LogisticRegression`, with one Gaussian
posterior over all the classes' weights jointly (650 weights for 64 pixels
and 10 classes, so a 650 x 650 covariance).  ``predict_proba`` averages the
softmax over that posterior.

On scikit-learn's bundled 8 x 8 digits we fit it by batch steps
(``learning_method='batch'``: every step uses all rows with ``rho = 1``),
compare it with scikit-learn's posterior mode, and look at the test digits
whose predictive distribution is the most spread out.  The fit takes a few
seconds: each batch step forms and factorises the 650 x 650 precision.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split

from skvi import SVILogisticRegression

digits = load_digits()
X = digits.data / 16.0  # pixel intensities in [0, 1]
X_train, X_test, y_train, y_test, img_train, img_test = train_test_split(
    X,
    digits.target,
    digits.images,
    test_size=0.3,
    random_state=0,
    stratify=digits.target,
)
print(f"{X_train.shape[0]} training and {X_test.shape[0]} test digits")

# %%
# Fit
# ---
# A fixed budget of five batch passes (``max_iter=5``; ``tol=0`` turns the
# convergence test, and its warning, off).  The ELBO after each pass shows
# how close that is: the fifth pass gains about one nat, and with the
# default ``tol`` the fit stops after seven passes, 0.3 nats higher.

start = time.perf_counter()
svi = SVILogisticRegression(
    learning_method="batch", max_iter=5, tol=0, random_state=0
)
svi.fit(X_train, y_train)
print(
    f"skvi: {svi.n_iter_} batch passes in {time.perf_counter() - start:.1f} s"
)
print("ELBO after each pass:", np.round(svi.lower_bounds_, 2))
print("posterior covariance:", svi.posterior_covariance_.shape)

sk = LogisticRegression(C=1.0, max_iter=2000).fit(X_train, y_train)
P_svi, P_sk = svi.predict_proba(X_test), sk.predict_proba(X_test)
for name, P in [
    ("scikit-learn (posterior mode)", P_sk),
    ("skvi (posterior predictive)", P_svi),
]:
    print(
        f"{name:30s} test log-loss {log_loss(y_test, P):.4f}, "
        f"accuracy {accuracy_score(y_test, P.argmax(axis=1)):.4f}"
    )

# %%
# The most uncertain test digits
# ------------------------------
# The entropy of the predictive distribution is largest where the
# probability is shared between classes.  The twelve test digits with the
# largest entropy, with skvi's two most probable classes and the true
# label (red when the top class is wrong):

entropy = -np.sum(P_svi * np.log(np.clip(P_svi, 1e-300, None)), axis=1)
worst = np.argsort(entropy)[::-1][:12]
fig, axes = plt.subplots(2, 6, figsize=(10, 4.2))
for ax, i in zip(axes.ravel(), worst):
    first, second = np.argsort(P_svi[i])[::-1][:2]
    ax.imshow(img_test[i], cmap="gray_r")
    ax.set_title(
        f"{first}: {P_svi[i, first]:.2f}\n"
        f"{second}: {P_svi[i, second]:.2f}  (true {y_test[i]})",
        fontsize=8,
        color="C3" if first != y_test[i] else "k",
    )
    ax.set_axis_off()
fig.tight_layout()
plt.show()

# %%
# Entropy and errors
# ------------------
# Errors concentrate where the predictive entropy is high: sorting the test
# digits by entropy, the share of errors in each fifth.

order = np.argsort(entropy)
wrong = P_svi.argmax(axis=1) != y_test
for k, part in enumerate(np.array_split(order, 5)):
    print(
        f"entropy quintile {k + 1}: "
        f"{wrong[part].mean():.3f} of the digits misclassified"
    )
