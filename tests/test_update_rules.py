"""Tests of skvi.update_rules against independent references.

The reference problem is Bayesian linear regression, one per factor of a
batch: ``y = X w + noise`` with noise precision ``beta`` and prior
``w ~ N(0, I / alpha)``, approximated by ``q(w) = N(m, V)``.  Its ELBO

    L(m, V) = -beta/2 (||y - X m||^2 + tr(X V X^T)) - KL(N(m, V) || N(0, I/alpha))

(up to a constant) is written out here in standard coordinates; its
gradients in ``m``, ``V`` and the Cholesky factor ``C`` come from central
finite differences, and its optimum is the closed-form posterior
``N(Lambda^-1 beta X^T y, Lambda^-1)`` with ``Lambda = alpha I + beta X^T X``
(full factor), or for a diagonal (mean-field) factor the same mean with
variances ``1 / diag(Lambda)``.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skvi.update_rules import (
    HybridGradient,
    NaturalGradient,
    StandardGradient,
    UpdateRule,
    make_update_rule,
)

BATCH = 3
D = 4
N_OBS = 12
H = 1e-5


# --------------------------------------------------------------------------
# the reference problem
# --------------------------------------------------------------------------
class Problem:
    """A batch of Bayesian linear regressions and a random current factor."""

    def __init__(self, diagonal, seed=0):
        rng = np.random.default_rng(seed)
        self.diagonal = diagonal
        self.X = rng.normal(0.0, 1.0, (BATCH, N_OBS, D)) / np.sqrt(N_OBS)
        w = rng.normal(0.0, 1.0, (BATCH, D))
        self.alpha = rng.uniform(0.5, 2.0, BATCH)
        self.beta = rng.uniform(2.0, 6.0, BATCH)
        self.y = np.einsum("bnd,bd->bn", self.X, w) + rng.normal(
            0.0, 1.0, (BATCH, N_OBS)
        ) / np.sqrt(self.beta[:, None])
        self.xtx = np.swapaxes(self.X, -1, -2) @ self.X
        self.xty = np.einsum("bnd,bn->bd", self.X, self.y)
        # A random current factor: mean and covariance (diagonal: variances).
        self.m = rng.normal(0.0, 1.0, (BATCH, D))
        if diagonal:
            self.V = rng.uniform(0.2, 1.5, (BATCH, D))
        else:
            a = rng.normal(0.0, 1.0, (BATCH, D, D))
            self.V = (a @ np.swapaxes(a, -1, -2)) / D + 0.3 * np.eye(D)

    # ---- closed-form posterior
    def posterior_precision(self):
        return self.alpha[:, None, None] * np.eye(D) + self.beta[:, None, None] * self.xtx

    def posterior_mean(self):
        return np.linalg.solve(
            self.posterior_precision(), (self.beta[:, None] * self.xty)[..., None]
        )[..., 0]

    def posterior_cov(self):
        if self.diagonal:  # mean-field optimum
            return 1.0 / np.diagonal(self.posterior_precision(), axis1=-2, axis2=-1)
        return np.linalg.inv(self.posterior_precision())

    # ---- the ELBO in standard coordinates, for factor b
    def elbo(self, b, m, V):
        alpha, beta, X, y = self.alpha[b], self.beta[b], self.X[b], self.y[b]
        Vm = np.diag(V) if self.diagonal else V
        r = y - X @ m
        _, logdet = np.linalg.slogdet(Vm)
        kl = 0.5 * (alpha * np.trace(Vm) + alpha * m @ m - D - D * np.log(alpha) - logdet)
        return -0.5 * beta * (r @ r + np.trace(X @ Vm @ X.T)) - kl

    def fd_grad_m(self, m, V):
        g = np.zeros((BATCH, D))
        for b in range(BATCH):
            for i in range(D):
                e = np.zeros(D)
                e[i] = H
                g[b, i] = (self.elbo(b, m[b] + e, V[b]) - self.elbo(b, m[b] - e, V[b])) / (2 * H)
        return g

    def fd_grad_V(self, m, V):
        """dL/dV: for a full factor, symmetric perturbations
        ``V + h (E_ij + E_ji) / 2`` so that the result is the symmetric
        gradient; for a diagonal one, the variances."""
        g = np.zeros_like(V)
        for b in range(BATCH):
            if self.diagonal:
                for i in range(D):
                    e = np.zeros(D)
                    e[i] = H
                    g[b, i] = (self.elbo(b, m[b], V[b] + e) - self.elbo(b, m[b], V[b] - e)) / (
                        2 * H
                    )
                continue
            for i in range(D):
                for j in range(D):
                    e = np.zeros((D, D))
                    e[i, j] += 0.5 * H
                    e[j, i] += 0.5 * H
                    g[b, i, j] = (self.elbo(b, m[b], V[b] + e) - self.elbo(b, m[b], V[b] - e)) / (
                        2 * H
                    )
        return g

    def fd_grad_C(self, m, C):
        """dL/dC for V = C C^T, C upper triangular (diagonal: V = C^2)."""
        g = np.zeros_like(C)
        for b in range(BATCH):
            if self.diagonal:
                for i in range(D):
                    e = np.zeros(D)
                    e[i] = H
                    up, down = C[b] + e, C[b] - e
                    g[b, i] = (self.elbo(b, m[b], up**2) - self.elbo(b, m[b], down**2)) / (2 * H)
                continue
            for i in range(D):
                for j in range(i, D):
                    e = np.zeros((D, D))
                    e[i, j] = H
                    up, down = C[b] + e, C[b] - e
                    g[b, i, j] = (
                        self.elbo(b, m[b], up @ up.T) - self.elbo(b, m[b], down @ down.T)
                    ) / (2 * H)
        return g

    # ---- natural parameters
    def natural(self, m, V):
        if self.diagonal:
            return m / V, -0.5 / V
        P = np.linalg.inv(V)
        return np.einsum("bij,bj->bi", P, m), -0.5 * P

    def target(self, m=None):
        """prior + stats.  Full factor: (beta X^T y, -beta/2 X^T X) added to
        the prior (0, -alpha/2 I); it does not depend on the current factor.
        Diagonal (mean-field) factor: the off-diagonal coupling enters the
        first component through the current mean ``m``."""
        if not self.diagonal:
            return self.beta[:, None] * self.xty, -0.5 * self.posterior_precision()
        diag = np.diagonal(self.xtx, axis1=-2, axis2=-1)
        off = self.xtx - diag[..., None] * np.eye(D)
        eta1 = self.beta[:, None] * (self.xty - np.einsum("bij,bj->bi", off, m))
        eta2 = -0.5 * (self.alpha[:, None] + self.beta[:, None] * diag)
        return eta1, eta2

    def current(self):
        return self.natural(self.m, self.V)


def decode(natural, diagonal):
    """Mean and covariance (diagonal: variances) from natural parameters."""
    eta1, eta2 = natural
    if diagonal:
        return eta1 / (-2 * eta2), 1.0 / (-2 * eta2)
    P = -(eta2 + np.swapaxes(eta2, -1, -2))
    V = np.linalg.inv(P)
    return np.einsum("bij,bj->bi", V, eta1), V


def cholesky_factor(V, diagonal):
    """The triangular factor S-DSVI moves: upper C = L^{-T} with L L^T = V^{-1}."""
    if diagonal:
        return np.sqrt(V)
    return np.swapaxes(np.linalg.inv(np.linalg.cholesky(np.linalg.inv(V))), -1, -2)


def precision_of(natural, diagonal):
    return -2 * natural[1] if diagonal else -(natural[1] + np.swapaxes(natural[1], -1, -2))


DIAGONAL = pytest.mark.parametrize("diagonal", [False, True], ids=["full", "diagonal"])


# --------------------------------------------------------------------------
# the gradient identity the rules rely on
# --------------------------------------------------------------------------
@DIAGONAL
def test_natural_gradient_gives_standard_gradients(diagonal):
    """With g = target - current: dL/dm = g1 + 2 g2 m and dL/dV = g2."""
    prob = Problem(diagonal, seed=1)
    cur = prob.current()
    tgt = prob.target(prob.m)
    g1, g2 = tgt[0] - cur[0], tgt[1] - cur[1]
    if diagonal:
        grad_m = g1 + 2 * g2 * prob.m
    else:
        grad_m = g1 + 2 * np.einsum("bij,bj->bi", g2, prob.m)
    assert_allclose(grad_m, prob.fd_grad_m(prob.m, prob.V), rtol=1e-6, atol=1e-7)
    assert_allclose(g2, prob.fd_grad_V(prob.m, prob.V), rtol=1e-6, atol=1e-7)
    # Also the triangular-factor gradient the S-DSVI rule uses: 2 triu(g2 C).
    C = cholesky_factor(prob.V, diagonal)
    grad_c = 2 * g2 * C if diagonal else np.triu(2 * g2 @ C)
    assert_allclose(grad_c, prob.fd_grad_C(prob.m, C), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------
# NaturalGradient
# --------------------------------------------------------------------------
@DIAGONAL
def test_natural_gradient_blend(diagonal):
    prob = Problem(diagonal, seed=2)
    cur, tgt = prob.current(), prob.target(prob.m)
    rule = NaturalGradient()
    new, state = rule.step(cur, tgt, 1.0, 1.0, None)
    # rho = 1 lands exactly on the target: its arrays themselves, so that a
    # target's unchanged precision stays the very array the step made.
    for t, n in zip(tgt, new):
        assert n is t
    assert state is None
    for rho in (0.1, 0.37, 0.9):
        new, _ = rule.step(cur, tgt, rho, 1.0, None)
        for c, t, n in zip(cur, tgt, new):
            assert_allclose(n, (1 - rho) * c + rho * t, rtol=1e-13, atol=1e-14)
        # backoff is already folded into rho by the engine: ignored here.
        again, _ = rule.step(cur, tgt, rho, 0.25, None)
        assert_array_equal(again[0], new[0])
        assert_array_equal(again[1], new[1])


def test_natural_gradient_one_step_is_the_posterior():
    prob = Problem(diagonal=False, seed=3)
    new, _ = NaturalGradient().step(prob.current(), prob.target(), 1.0, 1.0, None)
    m, V = decode(new, False)
    assert_allclose(m, prob.posterior_mean(), rtol=1e-10, atol=1e-12)
    assert_allclose(V, prob.posterior_cov(), rtol=1e-10, atol=1e-12)


def test_natural_gradient_one_step_diagonal_with_orthogonal_design():
    """With orthogonal columns the posterior is diagonal and the mean-field
    target does not depend on the current mean."""
    prob = Problem(diagonal=True, seed=4)
    q, _ = np.linalg.qr(prob.X)
    prob.X = q * np.array([0.5, 1.0, 1.5, 2.0])
    prob.xtx = np.swapaxes(prob.X, -1, -2) @ prob.X
    prob.xty = np.einsum("bnd,bn->bd", prob.X, prob.y)
    assert_allclose(prob.target(prob.m)[0], prob.target(np.zeros_like(prob.m))[0], atol=1e-12)
    new, _ = NaturalGradient().step(prob.current(), prob.target(prob.m), 1.0, 1.0, None)
    m, v = decode(new, True)
    assert_allclose(m, prob.posterior_mean(), rtol=1e-10, atol=1e-12)
    assert_allclose(
        v, np.diagonal(np.linalg.inv(prob.posterior_precision()), axis1=-2, axis2=-1), rtol=1e-10
    )


# --------------------------------------------------------------------------
# first and second AdaGrad steps against finite-difference gradients
# --------------------------------------------------------------------------
LR = 0.01


@DIAGONAL
def test_hybrid_first_steps_follow_finite_difference_gradients(diagonal):
    prob = Problem(diagonal, seed=5)
    rule = HybridGradient(gradient_learning_rate=LR)
    rho = 0.3
    cur = prob.current()
    new, state = rule.step(cur, prob.target(prob.m), rho, 1.0, None)
    m1, V1 = decode(new, diagonal)
    grad_a = prob.fd_grad_m(prob.m, prob.V)
    # First AdaGrad step: lr * g / |g| = lr * sign(g) (up to the 1e-8 eps).
    assert_allclose(m1 - prob.m, LR * np.sign(grad_a), rtol=1e-6, atol=0)
    # The precision is the natural-gradient blend.
    p_cur = precision_of(cur, diagonal)
    p_tgt = precision_of(prob.target(prob.m), diagonal)
    assert_allclose(
        precision_of(new, diagonal), (1 - rho) * p_cur + rho * p_tgt, rtol=1e-12, atol=1e-12
    )
    assert_allclose(state["mean"], grad_a**2, rtol=1e-6)

    # Second step from the new factor: the accumulator sums both squared
    # gradients and the step is lr * g_b / sqrt(g_a^2 + g_b^2).
    new2, state2 = rule.step(new, prob.target(m1), rho, 1.0, state)
    m2, _ = decode(new2, diagonal)
    grad_b = prob.fd_grad_m(m1, V1)
    assert_allclose(state2["mean"], grad_a**2 + grad_b**2, rtol=1e-6)
    assert_allclose(m2 - m1, LR * grad_b / np.sqrt(grad_a**2 + grad_b**2), rtol=1e-6, atol=1e-12)
    # The state passed in is not modified (the engine may reject the step).
    assert_allclose(state["mean"], grad_a**2, rtol=1e-6)

    # state=None restarts AdaGrad: a sign step again, accumulator = g_b^2.
    new3, state3 = rule.step(new, prob.target(m1), rho, 1.0, None)
    m3, _ = decode(new3, diagonal)
    assert_allclose(m3 - m1, LR * np.sign(grad_b), rtol=1e-6, atol=0)
    assert_allclose(state3["mean"], grad_b**2, rtol=1e-6)


@DIAGONAL
def test_standard_first_steps_follow_finite_difference_gradients(diagonal):
    prob = Problem(diagonal, seed=6)
    rule = StandardGradient(gradient_learning_rate=LR)
    cur = prob.current()
    C0 = cholesky_factor(prob.V, diagonal)
    new, state = rule.step(cur, prob.target(prob.m), 0.7, 1.0, None)
    m1, V1 = decode(new, diagonal)
    C1 = cholesky_factor(V1, diagonal)
    gm_a = prob.fd_grad_m(prob.m, prob.V)
    gc_a = prob.fd_grad_C(prob.m, C0)
    assert_allclose(m1 - prob.m, LR * np.sign(gm_a), rtol=1e-6, atol=0)
    # Lower triangle moves by lr * sign; the upper triangle stays zero.
    assert_allclose(C1 - C0, LR * np.sign(gc_a), rtol=1e-6, atol=1e-12)
    assert_allclose(state["mean"], gm_a**2, rtol=1e-6)
    assert_allclose(state["chol"], gc_a**2, rtol=1e-5, atol=1e-14)

    new2, state2 = rule.step(new, prob.target(m1), 0.7, 1.0, state)
    m2, V2 = decode(new2, diagonal)
    C2 = cholesky_factor(V2, diagonal)
    gm_b = prob.fd_grad_m(m1, V1)
    gc_b = prob.fd_grad_C(m1, C1)
    assert_allclose(state2["mean"], gm_a**2 + gm_b**2, rtol=1e-6)
    assert_allclose(state2["chol"], gc_a**2 + gc_b**2, rtol=1e-5, atol=1e-14)
    assert_allclose(m2 - m1, LR * gm_b / np.sqrt(gm_a**2 + gm_b**2), rtol=1e-6, atol=1e-12)
    with np.errstate(invalid="ignore"):
        expected_dc = np.where(gc_a**2 + gc_b**2 > 0, LR * gc_b / np.sqrt(gc_a**2 + gc_b**2), 0.0)
    assert_allclose(C2 - C1, expected_dc, rtol=1e-5, atol=1e-10)
    # The state passed in is not modified.
    assert_allclose(state["mean"], gm_a**2, rtol=1e-6)
    assert_allclose(state["chol"], gc_a**2, rtol=1e-5, atol=1e-14)
    # state=None restarts AdaGrad: sign steps again, accumulators = g_b^2.
    new3, state3 = rule.step(new, prob.target(m1), 0.7, 1.0, None)
    m3, V3 = decode(new3, diagonal)
    assert_allclose(m3 - m1, LR * np.sign(gm_b), rtol=1e-6, atol=0)
    assert_allclose(cholesky_factor(V3, diagonal) - C1, LR * np.sign(gc_b), rtol=1e-6, atol=1e-12)
    assert_allclose(state3["mean"], gm_b**2, rtol=1e-6)
    assert_allclose(state3["chol"], gc_b**2, rtol=1e-5, atol=1e-14)
    # rho plays no part in S-DSVI.
    other, _ = rule.step(new, prob.target(m1), 0.05, 1.0, state)
    assert_allclose(other[0], new2[0], rtol=1e-14)
    assert_allclose(other[1], new2[1], rtol=1e-14)


@pytest.mark.parametrize("rule_cls", [HybridGradient, StandardGradient])
@DIAGONAL
def test_backoff_scales_ordinary_gradient_steps(rule_cls, diagonal):
    prob = Problem(diagonal, seed=7)
    rule = rule_cls(gradient_learning_rate=LR)
    cur, tgt = prob.current(), prob.target(prob.m)
    full, _ = rule.step(cur, tgt, 0.5, 1.0, None)
    half, _ = rule.step(cur, tgt, 0.5, 0.5, None)
    m_full, V_full = decode(full, diagonal)
    m_half, V_half = decode(half, diagonal)
    sign = np.sign(prob.fd_grad_m(prob.m, prob.V))
    assert_allclose(m_full - prob.m, LR * sign, rtol=1e-6, atol=0)
    assert_allclose(m_half - prob.m, 0.5 * LR * sign, rtol=1e-6, atol=0)
    if rule_cls is HybridGradient:
        # the covariance takes the natural-gradient step, independent of backoff
        assert_allclose(V_half, V_full, rtol=1e-12)
    else:
        C0 = cholesky_factor(prob.V, diagonal)
        sign_c = np.sign(prob.fd_grad_C(prob.m, C0))
        assert_allclose(cholesky_factor(V_full, diagonal) - C0, LR * sign_c, rtol=1e-6, atol=1e-12)
        assert_allclose(
            cholesky_factor(V_half, diagonal) - C0, 0.5 * LR * sign_c, rtol=1e-6, atol=1e-12
        )


# --------------------------------------------------------------------------
# convergence to the closed-form posterior
# --------------------------------------------------------------------------
@pytest.mark.parametrize("rule_cls", [HybridGradient, StandardGradient])
@DIAGONAL
def test_repeated_steps_converge_to_the_posterior(rule_cls, diagonal):
    prob = Problem(diagonal, seed=8)
    # AdaGrad's steps shrink like lr / sqrt(t) while the gradient keeps its
    # sign, so the distance it can travel in T steps is about 2 lr sqrt(T):
    # from this generic start (|m - m*| up to ~3) lr = 0.05 needs over 5000
    # steps, lr = 0.2 is at rounding level well within 2000.
    rule = rule_cls(gradient_learning_rate=0.2)
    natural, state = prob.current(), None
    for t in range(1, 2001):
        m, _ = decode(natural, diagonal)
        natural, state = rule.step(natural, prob.target(m), (t + 1) ** -0.7, 1.0, state)
    m, V = decode(natural, diagonal)
    assert_allclose(m, prob.posterior_mean(), rtol=0, atol=1e-9)
    assert_allclose(V, prob.posterior_cov(), rtol=0, atol=1e-9)
    # and the ELBO there is the maximum: no finite-difference slope left
    assert_allclose(prob.fd_grad_m(m, V), 0.0, atol=1e-5)
    assert_allclose(prob.fd_grad_V(m, V), 0.0, atol=1e-5)


# --------------------------------------------------------------------------
# the factory
# --------------------------------------------------------------------------
def test_make_update_rule():
    for name, cls in (
        ("mc-ssvi", NaturalGradient),
        ("h-mc-ssvi", HybridGradient),
        ("s-dsvi", StandardGradient),
    ):
        rule = make_update_rule(name, 0.25)
        assert type(rule) is cls
        assert isinstance(rule, UpdateRule)
        assert rule.gradient_learning_rate == 0.25
        assert rule.name == name
    assert make_update_rule("s-dsvi").gradient_learning_rate == 1.0
    # the learning rate reaches the step: first AdaGrad step moves by it
    new, _ = make_update_rule("h-mc-ssvi", 0.25).step(
        (np.zeros(1), -0.5 * np.ones(1)), (np.ones(1), -0.5 * np.ones(1)), 1.0, 1.0, None
    )
    assert_allclose(new[0] / (-2 * new[1]), [0.25], rtol=1e-7)


@pytest.mark.parametrize("bad", ["mcssvi", "natural", "", None, "S-DSVI"])
def test_make_update_rule_rejects_unknown_names(bad):
    with pytest.raises(ValueError, match="algorithm"):
        make_update_rule(bad)


def test_per_factor_step_sizes_equal_separate_steps():
    # One rho per factor of a batch is the same as stepping each factor alone.
    from skvi.update_rules import HybridGradient, NaturalGradient

    rng = np.random.RandomState(0)
    d = 3
    A = rng.normal(size=(4, d, d))
    prec = A @ np.swapaxes(A, 1, 2) + d * np.eye(d)
    current = (rng.normal(size=(4, d)), -0.5 * prec)
    B = rng.normal(size=(4, d, d))
    target = (rng.normal(size=(4, d)), -0.5 * (B @ np.swapaxes(B, 1, 2) + d * np.eye(d)))
    rho = np.array([1.0, 0.5, 0.1, 0.0])
    for rule in (NaturalGradient(), HybridGradient(0.3)):
        together, _ = rule.step(current, target, rho, 1.0, None)
        for i in range(4):
            alone, _ = rule.step(
                (current[0][i], current[1][i]), (target[0][i], target[1][i]), rho[i], 1.0, None
            )
            np.testing.assert_allclose(together[0][i], alone[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(together[1][i], alone[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "rule", [NaturalGradient(), HybridGradient(0.3), StandardGradient(0.3)], ids=lambda r: r.name
)
@pytest.mark.parametrize("diagonal", [False, True])
def test_a_factor_with_step_size_zero_keeps_its_value_and_state(rule, diagonal):
    # A row the minibatch does not reach steps by rho = 0: it must not move
    # (an AdaGrad mean step moved it towards its target, here its prior) nor
    # count the step in its accumulators.  The other factors take the steps
    # they take without it.
    rng = np.random.RandomState(1)
    d = 3

    def factors(n):
        if diagonal:
            prec = rng.uniform(0.5, 2.0, (n, d))
        else:
            A = rng.normal(size=(n, d, d))
            prec = A @ np.swapaxes(A, 1, 2) + d * np.eye(d)
        return rng.normal(size=(n, d)), -0.5 * prec

    current, target, before = factors(3), factors(3), factors(3)
    _, state = rule.step(before, current, np.ones(3), 1.0, None)  # a state to keep
    rho = np.array([0.5, 0.0, 1.0])
    new, kept = rule.step(current, target, rho, 1.0, state)
    for a, b in zip(new, current):
        assert_array_equal(a[1], b[1])
    if state is not None:
        for key in state:
            assert_array_equal(kept[key][1], state[key][1])
    moved = [0, 2]
    alone, _ = rule.step(
        tuple(c[moved] for c in current),
        tuple(t[moved] for t in target),
        rho[moved],
        1.0,
        None if state is None else {k: v[moved] for k, v in state.items()},
    )
    for a, b in zip(new, alone):
        assert_allclose(a[moved], b, rtol=1e-12, atol=1e-12)
    # And with no state yet: the held factor's accumulators start at zero.
    if state is not None:
        _, first = rule.step(current, target, rho, 1.0, None)
        for key in first:
            assert_array_equal(first[key][1], 0.0)


def test_secant_fixed_point_finds_the_fixed_point_where_plain_steps_oscillate():
    from scipy.optimize import brentq

    from skvi.update_rules import SecantFixedPoint

    # f(x) = 2.5 cos(x): slope about -1.6 at its fixed point, so plain unit
    # steps x <- f(x) do not converge there.
    f = lambda x: 2.5 * np.cos(x)  # noqa: E731
    root = brentq(lambda x: f(x) - x, 0.0, 2.0)
    plain = 1.0
    for _ in range(60):
        plain = f(plain)
    assert abs(plain - root) > 0.1
    rule, x, state = SecantFixedPoint(), (np.array(1.0),), None
    for _ in range(30):
        x, state = rule.step(x, (f(x[0]),), 1.0, 1.0, state)
    assert float(x[0]) == pytest.approx(root, abs=1e-10)
