"""Quickstart: ``python -m skvi``.

Fits :class:`skvi.GaussianGammaVB` to Newcomb's 1882 speed-of-light
measurements (shipped with skvi), by batch VMP and by streaming SVI, and
prints the posterior and the ELBO history.
"""

import numpy as np

from skvi import GaussianGammaVB
from skvi.datasets import load_newcomb


def main():
    """Run the quickstart and print its results.

    Examples
    --------
    >>> from skvi.__main__ import main
    >>> main()  # doctest: +ELLIPSIS
    Newcomb's speed-of-light data: 66 measurements (ns above 24800 ns)
    ...
      q(mu)    = N(mean=26.1663, sd=1.3215)
    ...
    """
    X = load_newcomb(return_X_y=True)
    print(f"Newcomb's speed-of-light data: {X.shape[0]} measurements (ns above 24800 ns)\n")

    vb = GaussianGammaVB(tol=1e-10).fit(X)
    e_gamma = vb.precision_shape_ / vb.precision_rate_
    print("Batch VMP (coordinate ascent):")
    print(f"  q(mu)    = N(mean={vb.mean_[0]:.4f}, sd={1 / np.sqrt(vb.mean_precision_[0]):.4f})")
    print(
        f"  q(gamma) = Gamma(shape={vb.precision_shape_[0]:.3f}, "
        f"rate={vb.precision_rate_[0]:.3f})  ->  1/sqrt(E[gamma]) = {1 / np.sqrt(e_gamma[0]):.3f} ns"
    )
    print(f"  ELBO history ({vb.n_iter_} passes, converged={vb.converged_}):")
    for i, bound in enumerate(vb.lower_bounds_, start=1):
        print(f"    pass {i}: {bound:.6f}")

    stream = GaussianGammaVB(learning_rate=None, learning_offset=1.0, learning_decay=0.6)
    for start in range(0, X.shape[0], 11):
        stream.partial_fit(X[start : start + 11])
    print("\nStreaming SVI, one pass (partial_fit on minibatches of 11, total_samples='auto'):")
    print(
        f"  q(mu)    = N(mean={stream.mean_[0]:.4f}, "
        f"sd={1 / np.sqrt(stream.mean_precision_[0]):.4f})"
    )
    print(
        f"  q(gamma) = Gamma(shape={stream.precision_shape_[0]:.3f}, "
        f"rate={stream.precision_rate_[0]:.3f})"
    )
    print(
        f"  {stream.n_batch_iter_} steps, {stream.n_samples_seen_} samples seen, "
        f"last ELBO estimate {stream.lower_bound_:.3f}"
    )
    gap = (stream.mean_[0] - vb.mean_[0]) * np.sqrt(vb.mean_precision_[0])
    print(
        "\nWhy the two differ: the batch posterior is the fixed point of coordinate\n"
        "ascent on all 66 values.  The stream saw each value once, in six noisy\n"
        "natural-gradient steps whose sizes decay (rho_t = (t + 1)^-0.6), so its\n"
        "posterior weighs the minibatches unequally and still carries the early\n"
        "steps' uncertainty about the precision (Newcomb's first minibatch holds\n"
        f"the outliers -44 and -2).  Its mean is {gap:+.2f} batch standard deviations\n"
        "from the batch mean; more passes over the data (fit with\n"
        "learning_method='online': 30 passes end within 0.11) bring it to the batch answer."
    )


if __name__ == "__main__":
    main()
