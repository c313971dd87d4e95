"""skvi.plotting: the lines drawn are the fitted estimators' arrays."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from skvi import GaussianGammaVB, SVILatentDirichletAllocation, SVILogisticRegression

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from skvi.plotting import (  # noqa: E402
    plot_elbo,
    plot_hinton,
    plot_pdf,
    plot_step_sizes,
    plot_top_words,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def fitted():
    X = np.random.RandomState(0).normal(size=(300, 2))
    svi = GaussianGammaVB(learning_method="online", batch_size=30, max_iter=4, tol=0).fit(X)
    batch = GaussianGammaVB(max_iter=5, tol=0).fit(X)
    return X, svi, batch


def test_import_skvi_does_not_import_matplotlib():
    code = (
        "import sys, skvi, skvi.plotting, skvi.engine; "
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("x, field", [("time", "time"), ("samples", "samples"), ("steps", "steps")])
def test_plot_elbo_draws_each_history(fitted, x, field):
    X, svi, batch = fitted
    ax = plot_elbo([svi, batch], x=x, labels=["svi", "batch"])
    lines = ax.get_lines()
    assert len(lines) == 2
    for line, est in zip(lines, (svi, batch)):
        np.testing.assert_array_equal(line.get_xdata(), est.history_[field])
        np.testing.assert_array_equal(line.get_ydata(), est.lower_bounds_)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["svi", "batch"]
    if x == "samples":  # independently: four passes of 300 rows
        np.testing.assert_array_equal(lines[0].get_xdata(), [300, 600, 900, 1200])


def test_plot_elbo_skips_passes_without_elbo_and_draws_on_given_axes():
    counts = sp.csr_matrix(np.random.RandomState(0).poisson(0.5, size=(80, 20)).astype(float))
    lda = SVILatentDirichletAllocation(
        n_components=2,
        learning_method="online",
        batch_size=20,
        max_iter=4,
        evaluate_every=2,
        random_state=0,
    ).fit(counts)
    fig, ax = plt.subplots()
    assert plot_elbo(lda, x="samples", ax=ax) is ax
    (line,) = ax.get_lines()
    np.testing.assert_array_equal(line.get_xdata(), [160, 320])  # passes 2 and 4
    np.testing.assert_array_equal(line.get_ydata(), lda.lower_bounds_)
    never = SVILatentDirichletAllocation(n_components=2, max_iter=2, random_state=0).fit(counts)
    with pytest.raises(ValueError, match="evaluate_every"):
        plot_elbo(never)
    with pytest.raises(ValueError, match="x must be"):
        plot_elbo(lda, x="passes")
    with pytest.raises(NotFittedError):
        plot_elbo(GaussianGammaVB())


def test_plot_elbo_default_labels_number_repeated_classes(fitted):
    _, svi, batch = fitted
    ax = plot_elbo([svi, batch])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["GaussianGammaVB (1)", "GaussianGammaVB (2)"]


def test_plot_step_sizes_draws_the_trace(fitted):
    _, svi, _ = fitted
    ax = plot_step_sizes(svi)
    (line,) = ax.get_lines()
    t = np.arange(1, svi.n_batch_iter_ + 1)
    np.testing.assert_array_equal(line.get_xdata(), t)
    np.testing.assert_allclose(
        line.get_ydata(), (t + 10.0) ** -0.7, rtol=1e-15
    )  # the default schedule


def test_plot_step_sizes_marks_rejected_steps():
    rng = np.random.RandomState(0)
    X = 3 * rng.normal(size=(60, 4))
    y = (X @ [1.0, -1.0, 0.5, 0.0] > 0).astype(int)
    clf = SVILogisticRegression(
        learning_rate=1.0,
        algorithm="s-dsvi",
        gradient_learning_rate=10.0,
        expectation="quadrature",
        batch_size=20,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.partial_fit(X, y, classes=[0, 1])
    trace = clf.step_trace_
    ax = plot_step_sizes(clf)
    curve, marks = ax.get_lines()[:2]
    np.testing.assert_array_equal(curve.get_ydata(), trace["rho"])
    hit = trace["rejected"] > 0
    assert hit.any()
    np.testing.assert_array_equal(marks.get_xdata(), trace["t"][hit])
    np.testing.assert_array_equal(marks.get_ydata(), trace["rho"][hit])


def test_plot_top_words_bars_are_the_topics_top_probabilities():
    rng = np.random.RandomState(0)
    counts = sp.csr_matrix(rng.poisson(0.5, size=(80, 15)).astype(float))
    lda = SVILatentDirichletAllocation(n_components=3, random_state=0).fit(counts)
    words = np.array([f"word{j}" for j in range(15)])
    axes = plot_top_words(lda, words, n_words=5)
    assert len(axes) == 3
    for k, ax in enumerate(axes):
        p = lda.components_[k] / lda.components_[k].sum()
        order = np.argsort(-p, kind="stable")[:5]
        np.testing.assert_allclose([bar.get_width() for bar in ax.patches], p[order], rtol=1e-12)
        assert [t.get_text() for t in ax.get_yticklabels()] == list(words[order])
        assert ax.get_title() == f"Topic {k}"
    # Chosen topics on given axes.
    fig, given = plt.subplots(1, 2)
    axes = plot_top_words(lda, words, n_words=3, ax=given, topics=[2, 0])
    assert [ax.get_title() for ax in axes] == ["Topic 2", "Topic 0"]
    with pytest.raises(ValueError, match="axes"):
        plot_top_words(lda, words, ax=given)
    with pytest.raises(ValueError, match="15 features"):
        plot_top_words(lda, words[:-1])


@pytest.mark.parametrize("name", ["plot_elbo", "plot_step_sizes", "plot_top_words"])
def test_numpydoc(name):
    validate = pytest.importorskip("numpydoc.validate").validate
    codes = {"GL08", "SS01", "PR01", "PR02", "PR07", "RT01", "RT03", "EX01"}
    errors = [f"{c}: {m}" for c, m in validate(f"skvi.plotting.{name}")["errors"] if c in codes]
    assert not errors


@pytest.mark.parametrize("n_topics, n_words", [(10, 10), (7, 5), (12, 3)])
def test_plot_top_words_labels_do_not_overlap(n_topics, n_words):
    # Drawn, the text of each chart (its title, its words, its tick labels
    # and axis label) stays clear of every other chart's, and inside the figure.
    rng = np.random.RandomState(1)
    counts = sp.csr_matrix(rng.poisson(0.4, size=(120, 40)).astype(float))
    lda = SVILatentDirichletAllocation(n_components=n_topics, random_state=0, max_iter=3).fit(
        counts
    )
    words = np.array([f"{'abcdefghijklmno'[j % 15] * (3 + j % 9)}" for j in range(40)])
    axes = plot_top_words(lda, words, n_words=n_words)
    fig = axes[0].figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = []
    for ax in axes:
        pieces = [ax.title, ax.xaxis.label]
        low, high = ax.get_xlim()
        pieces += ax.get_yticklabels()  # the words
        pieces += [t for t in ax.get_xticklabels() if low <= t.get_position()[0] <= high]
        boxes = [t.get_window_extent(renderer) for t in pieces if t.get_text()]
        texts.append(boxes)
    frame = fig.bbox
    for i, boxes in enumerate(texts):
        for box in boxes:
            assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1
            assert frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1
        for j in range(i):
            clash = [(a, b) for a in boxes for b in texts[j] if a.overlaps(b)]
            assert not clash, (i, j, clash[:2])
        # Nor does any text of one chart run over the bars of another.
        for j, other in enumerate(axes):
            if j != i:
                assert not any(box.overlaps(other.get_window_extent(renderer)) for box in boxes)


# ------------------------------------------------- network nodes' posteriors
def test_plot_pdf_draws_the_conjugate_posteriors_in_closed_form():
    from scipy import stats

    from skvi.networks import VB, Gamma, GaussianARD

    # A mean of known precision: q(mu) is N(m, 1 / p) exactly, after one sweep.
    rng = np.random.RandomState(0)
    y_obs = rng.normal(2.0, 0.5, size=20)
    mu = GaussianARD(0.0, 1e-2, name="mu")
    y = GaussianARD(mu, 4.0, plates=(20,))
    y.observe(y_obs)
    VB(y, mu).update(repeat=1, verbose=False)
    precision = 1e-2 + 4.0 * 20
    mean = 4.0 * y_obs.sum() / precision
    line = plot_pdf(mu).lines[0]
    x = line.get_xdata()
    np.testing.assert_allclose(
        line.get_ydata(), stats.norm.pdf(x, mean, precision**-0.5), rtol=1e-10
    )
    assert x.min() == pytest.approx(mean - 4 * precision**-0.5)
    # A precision of known mean: q(tau) is Gamma(a + n / 2, b + sum y^2 / 2).
    tau = Gamma(2.0, 3.0, name="tau")
    z = GaussianARD(0.0, tau, plates=(20,))
    z.observe(y_obs)
    VB(z, tau).update(repeat=1, verbose=False)
    grid = np.linspace(0.01, 1.0, 50)
    line = plot_pdf(tau, x=grid).lines[0]
    reference = stats.gamma.pdf(grid, 2.0 + 10.0, scale=1.0 / (3.0 + 0.5 * y_obs @ y_obs))
    np.testing.assert_allclose(line.get_ydata(), reference, rtol=1e-10)


def test_plot_pdf_of_a_vector_draws_each_marginal_and_of_a_beta_the_first_outcome():
    from scipy import stats

    from skvi.networks import VB, Bernoulli, Beta, Gaussian

    x = Gaussian(np.array([1.0, -2.0]), np.array([[2.0, 0.5], [0.5, 1.0]]))
    ax = plot_pdf(x, x=np.linspace(-3, 3, 13))
    cov = np.linalg.inv([[2.0, 0.5], [0.5, 1.0]])
    for i, line in enumerate(ax.lines):
        reference = stats.norm.pdf(line.get_xdata(), [1.0, -2.0][i], np.sqrt(cov[i, i]))
        np.testing.assert_allclose(line.get_ydata(), reference, rtol=1e-10)
    # Beta(1, 1) and 7 successes in 10: q(p) = Beta(8, 4).
    p = Beta([1.0, 1.0])
    b = Bernoulli(p, plates=(10,))
    b.observe(np.array([1] * 7 + [0] * 3))
    VB(b, p).update(repeat=1, verbose=False)
    line = plot_pdf(p, x=np.linspace(0.05, 0.95, 19)).lines[0]
    np.testing.assert_allclose(
        line.get_ydata(), stats.beta.pdf(line.get_xdata(), 8.0, 4.0), rtol=1e-10
    )


def test_plot_hinton_squares_have_the_area_of_the_values_and_their_sign():
    from skvi.networks import GaussianARD

    values = np.array([[1.0, -0.25], [0.0, 0.5]])
    ax = plot_hinton(values)
    areas = [square.get_width() * square.get_height() for square in ax.patches]
    np.testing.assert_allclose(areas, np.abs(values).ravel() / 1.0)
    colours = [square.get_facecolor()[:3] for square in ax.patches]
    assert colours[0] == (1.0, 1.0, 1.0) and colours[1] == (0.0, 0.0, 0.0)
    # A node: its prior mean, the same diagram.
    node = GaussianARD(values, 1.0, shape=(2,))
    node_areas = [s.get_width() ** 2 for s in plot_hinton(node).patches]
    np.testing.assert_allclose(node_areas, areas)


def test_plot_pdf_and_hinton_refuse_what_they_cannot_draw():
    from skvi.networks import Categorical, Dirichlet

    with pytest.raises(ValueError, match="GaussianARD, Gaussian, Gamma or Beta"):
        plot_pdf(Categorical(Dirichlet(np.ones(3))))
    with pytest.raises(ValueError, match="GaussianARD, Gaussian, Gamma or Beta"):
        plot_pdf(np.ones(3))
    with pytest.raises(ValueError, match="at most two axes"):
        plot_hinton(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="finite"):
        plot_hinton(np.array([[1.0, np.nan]]))
