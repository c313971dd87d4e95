"""The engine's contract: hooks, per-row factor groups, the map-reduce split."""

import copy
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.validation import validate_data

from skvi import (
    GaussianGammaVB,
    SVILatentDirichletAllocation,
    SVILogisticRegression,
    SVIMatrixFactorization,
    SVIPoissonRegression,
)
from skvi.engine import (
    ENGINE_PARAMETER_CONSTRAINTS,
    ModelSettings,
    OPTIONAL_HOOKS,
    REQUIRED_HOOKS,
    RowGroupSpec,
    RowStatistics,
    Statistics,
    SVIEstimator,
)
from skvi.expfam import UnivariateGaussian
from skvi.schedules import RobbinsMonro

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------- hooks
def _hooks_named_in(text):
    return set(re.findall(r"(?<![\w.])(_[a-z][a-z_]*)(?=[`(\s:])", text))


def test_docs_and_base_document_the_same_hooks():
    hooks = set(REQUIRED_HOOKS) | set(OPTIONAL_HOOKS)
    for hook in hooks:  # every hook has its stub or default, with a docstring
        assert getattr(SVIEstimator, hook).__doc__, hook
    page = (ROOT / "docs" / "engine.md").read_text()
    table = page[page.index("## What a model supplies") : page.index("## Services for models")]
    assert _hooks_named_in(table) == hooks


def _estimator_classes():
    """Every estimator of ``skvi.__all__``, and the network estimator."""
    import skvi
    from skvi.networks import SVIBayesianNetwork

    classes = [getattr(skvi, n) for n in skvi.__all__]
    classes = [c for c in classes if isinstance(c, type) and issubclass(c, SVIEstimator)]
    return classes + [SVIBayesianNetwork]


def test_models_override_few_engine_methods_and_no_fit_loop():
    # The engine's private methods (of every engine class of SVIEstimator's
    # MRO) that some estimator redefines: a few hooks, and nothing else (no
    # model reaches into the loop).
    engine = {
        k
        for b in SVIEstimator.__mro__
        if b.__module__.startswith("skvi.engine")
        for k in b.__dict__
        if k.startswith("_") and not k.startswith("__")
    }
    overridden = set()
    for cls in _estimator_classes():
        for base in cls.__mro__:
            if not base.__module__.startswith("skvi.engine"):
                overridden |= engine & set(base.__dict__)
    assert overridden <= set(REQUIRED_HOOKS) | set(OPTIONAL_HOOKS)
    assert len(overridden) <= 14
    sources = [p.read_text() for p in (ROOT / "skvi" / "models").rglob("*.py")]
    assert not any("def partial_fit" in text for text in sources)
    pools = re.compile(
        r"concurrent\.futures|joblib import .*Parallel|threading\.Thread|multiprocessing"
    )
    assert not any(pools.search(text) for text in sources)


def test_no_model_overrides_the_loop_or_the_split():
    # fit, partial_fit and the map-reduce split are the engine's alone: a
    # model is told the engine's decisions (FitContext, StepContext) in its
    # hooks instead of redefining the loop.  Running the engine's own method
    # under a resource limit (the GLMs' BLAS threads) redefines nothing.
    loop = ("fit", "partial_fit", "compute_statistics", "apply_statistics", "elbo")
    for cls in _estimator_classes():
        for base in cls.__mro__:
            if base.__module__.startswith(("skvi.engine", "sklearn")):
                continue
            redefined = [
                name
                for name in loop
                if name in base.__dict__
                and getattr(base.__dict__[name], "__wrapped__", None)
                is not getattr(SVIEstimator, name)
            ]
            assert not redefined, f"{base.__qualname__} redefines {redefined}"


def _settings_after_small_fits():
    """Each estimator's ModelSettings after a small fit, for the settings its parameters choose."""
    import warnings

    from skvi import (
        SVIBayesianGaussianMixture,
        SVICorrelatedTopicModel,
        SVIHierarchicalDirichletProcess,
        SVILinearRegression,
        SVIOverdispersedPoissonRegression,
        SVISparseGPClassifier,
        SVISparseGPRegressor,
    )
    from skvi.networks import Gamma, GaussianARD, SVIBayesianNetwork

    def normal(n):
        return GaussianARD(GaussianARD(0, 1e-3, shape=(2,)), Gamma(1e-3, 1e-3, plates=(2,)),
                           plates=(n,), shape=(2,))  # fmt: skip

    rng = np.random.RandomState(0)
    Xg = rng.normal(size=(60, 2))
    counts = sp.csr_matrix(rng.poisson(0.5, size=(40, 12)).astype(float))
    yb = (Xg[:, 0] > 0).astype(int)
    yp = rng.poisson(1.0, size=60)
    Xr, yr = _ratings(n_users=8, n_items=6, n=60)
    small = dict(max_iter=2, random_state=0)
    fits = [
        (GaussianGammaVB(max_iter=2), Xg, None),
        (SVILatentDirichletAllocation(n_components=2, learning_method="batch", **small), counts),
        (SVILatentDirichletAllocation(n_components=2, learning_method="online", **small), counts),
        (SVIHierarchicalDirichletProcess(n_components=3, **small), counts),
        (SVICorrelatedTopicModel(n_components=2, init="random", **small), counts),
        (SVIMatrixFactorization(n_components=2, **small), Xr, yr),
        (SVIMatrixFactorization(n_components=2, likelihood="bernoulli", **small), Xr, yr > 3),
        (
            SVIMatrixFactorization(
                n_components=2, children_per_node=3, learning_method="online", **small
            ),
            Xr,
            yr,
        ),
        (SVILogisticRegression(**small), Xg, yb),
        (SVIPoissonRegression(**small), Xg, yp),
        (SVIOverdispersedPoissonRegression(learning_method="batch", **small), Xg, yp),
        (SVILinearRegression(**small), Xg, Xg[:, 0]),
        (SVIBayesianGaussianMixture(n_components=2, **small), Xg),
        (SVISparseGPRegressor(objective="predictive", n_inducing=4, **small), Xg, Xg[:, 0]),
        (SVISparseGPClassifier(n_inducing=4, **small), Xg, yb),
        (SVIBayesianNetwork(model=normal, **small), Xg),
    ]
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est, *data in fits:
            est.fit(*[d for d in data if d is not None])
            out.append((type(est).__name__, est._settings))
    return out


def _uses(settings, field):
    """Whether ``settings`` set ``field`` to other than ModelSettings' default."""
    import inspect

    default = inspect.signature(ModelSettings).parameters[field].default
    value = getattr(settings, field)
    if field == "factors":
        return bool(value)
    if field == "update_rules":
        return any(rule is not None for rule in value.values())
    if isinstance(value, (dict, tuple)):
        return bool(value)
    return value != default


def _settings_users():
    import inspect

    fields = list(inspect.signature(ModelSettings).parameters)
    users = {field: set() for field in fields}
    for name, settings in _settings_after_small_fits():
        for field in fields:
            if _uses(settings, field):
                users[field].add(name)
    return users


def test_model_settings_are_few_and_shared():
    # The contract's target: at most 12 settings, each used by at least two
    # estimators; what serves one model is its own code.
    users = _settings_users()
    assert len(users) <= 12
    lonely = {field: names for field, names in users.items() if len(names) < 2}
    assert not lonely, lonely


def _engine_imports():
    """Each module of skvi/engine to the engine modules it imports (at its top or lazily)."""
    import ast

    engine = ROOT / "skvi" / "engine"
    graph = {}
    for path in engine.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if path.name == "__init__.py" else parts)
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - node.level + 1]
                if node.module:
                    imported.add(".".join(base + node.module.split(".")))
                else:  # from . import blocks: the submodules
                    imported |= {".".join(base + [alias.name]) for alias in node.names}
        graph[module] = {m for m in imported if m.startswith("skvi.engine")}
    return graph


def test_no_two_engine_modules_import_each_other():
    # Each collaborator stands on the ones below it: a pair that imports
    # each other (even lazily, inside a function) has a piece in the wrong
    # module.  The package's __init__ gathers the public names and is left out.
    graph = _engine_imports()
    graph.pop("skvi.engine", None)
    pairs = sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, ()))
    assert not pairs


def test_no_module_outgrows_a_reading():
    # Sizes as `ruff format` lays the code out (CI checks the formatting), so
    # that a limit is met by splitting a module by concern, never by folding
    # lines; the engine's contract is held small by the test above.
    for path in (ROOT / "skvi").rglob("*.py"):
        assert len(path.read_text().splitlines()) <= 1000, path.relative_to(ROOT)


def test_networks_delegate_the_family_mathematics_to_expfam():
    # One family layer: the networks' nodes are graph, plates and messages;
    # factorisations, log-determinants and the gamma family of special
    # functions live in skvi/expfam, which the nodes call in their convention.
    words = re.compile(
        r"\b(cholesky|cho_factor|cho_solve|potrf|potri|slogdet|eigh|eigvalsh"
        r"|digamma|psi|gammaln|multigammaln)\b"
    )
    networks = ROOT / "skvi" / "networks"
    paths = sorted(networks.rglob("*.py")) + sorted(networks.rglob("*.pyx"))
    assert any(path.suffix == ".pyx" for path in paths)
    for path in paths:
        found = sorted(set(words.findall(path.read_text())))
        assert not found, f"{path.name}: {found}"
        assert len(path.read_text().splitlines()) <= 1000, path.name


def test_models_delegate_the_gaussian_linear_algebra_to_expfam():
    # One family layer: the Gaussian natural-to-moments map and the
    # factorisations of positive definite matrices (the covariance's factor,
    # log-determinants, eigenvalues) are written once, in skvi/expfam, and the
    # models call them.  The sparse GPs (their kernels' gradients in
    # skvi/models/_kernels.py) keep their own Gaussian-process algebra.
    words = re.compile(r"\b(cholesky|cho_factor|cho_solve|potrf|potri|slogdet|eigh|eigvalsh)\b")
    models = ROOT / "skvi" / "models"
    paths = [
        path
        for pattern in ("*.py", "*.pyx", "*.pxd", "*.h")
        for path in sorted(models.rglob(pattern))
        if "sparse_gp" not in str(path.relative_to(models)) and path != models / "_kernels.py"
    ]
    # The likelihoods' expectations (the softmax's covariance roots) too.
    paths += sorted((ROOT / "skvi" / "likelihoods").rglob("*.py"))
    assert any(path.suffix == ".pyx" for path in paths)
    for path in paths:
        found = sorted(set(words.findall(path.read_text())))
        assert not found, f"{path.relative_to(ROOT)}: {found}"


def test_the_factors_are_set_in_one_place():
    # One fit state owns the factors: every collaborator that decides a new
    # value hands it to FitState, the only module that assigns them.
    assigns = re.compile(r"natural_params_(\[[^\]]*\])?\s*=(?!=)")
    writers = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "skvi").rglob("*.py")
        if assigns.search(path.read_text())
    }
    assert writers == {"skvi/engine/state.py"}


@pytest.mark.parametrize("hook", REQUIRED_HOOKS)
def test_missing_required_hook_raises_naming_it(hook):
    class Empty(SVIEstimator):
        pass

    args = {
        "_prepare_data": (None, None, None, True),
        "_initialize_globals": (None, None, None),
        "_prior_natural": (),
        "_local_step": (None, None),
        "_expected_stats": ("f", None, None, None),
        "_local_bound": (None, None, None),
        "_global_bound": (None,),
    }[hook]
    with pytest.raises(NotImplementedError, match=re.escape(hook)):
        getattr(Empty(), hook)(*args)


# ------------------------------------------------------ per-row factor groups
class RowMeans(SVIEstimator):
    """Per-row Gaussian means: x ~ N(m_r, 1) for the row r of each point, m_r ~ N(0, 1).

    X has two columns: the row id and the value.  Each row's statistics are
    ``(sum x, -n / 2)`` over its points; its target is ``prior + N_r / C_r``
    times them.
    """

    _parameter_constraints = dict(ENGINE_PARAMETER_CONSTRAINTS)
    _settings = ModelSettings(
        {"means": UnivariateGaussian},
        row_groups={
            "means": RowGroupSpec(
                ids=lambda name, X: X[:, 0].astype(np.int64),
                grow=lambda name, n_new, rated, random_state: (
                    np.zeros(n_new),
                    np.full(n_new, -0.5),
                ),
            )
        },
    )

    def __init__(
        self,
        learning_method="online",
        batch_size=4,
        max_iter=1,
        tol=0.0,
        learning_offset=1.0,
        learning_decay=0.7,
        learning_rate=None,
        total_samples="auto",
        update_order="sequential",
        step_safety=True,
        random_state=None,
        verbose=0,
    ):
        self.learning_method = learning_method
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.learning_rate = learning_rate
        self.total_samples = total_samples
        self.update_order = update_order
        self.step_safety = step_safety
        self.random_state = random_state
        self.verbose = verbose

    def _prepare_data(
        self, X, y, sample_weight, reset, classes=None, vocabulary=None, partial=False
    ):
        return validate_data(self, X, reset=reset, ensure_all_finite=False)

    def _initialize_globals(self, X, random_state, summary):
        n = int(X[:, 0].max()) + 1
        return {"means": (np.zeros(n), np.full(n, -0.5))}

    def _prior_natural(self):
        return {"means": (np.array(0.0), np.array(-0.5))}

    def _local_step(self, X, params):
        return None

    def _expected_stats(self, name, X, local, params):
        ids = X[:, 0].astype(np.int64)
        rows, inverse = np.unique(ids, return_inverse=True)
        sums = np.bincount(inverse, weights=X[:, 1])
        counts = np.bincount(inverse).astype(float)
        return RowStatistics(rows, (sums, -0.5 * counts), counts)

    def _local_bound(self, X, local, params):
        return 0.0

    def _global_bound(self, params):
        return 0.0


def test_row_groups_step_each_row_by_its_own_counter_and_count():
    # Three minibatches; row 2 is first seen in the second, row 3 in the third.
    schedule = RobbinsMonro(offset=1.0, decay=0.7)
    batches = [
        np.array([[0, 1.0], [0, 3.0], [1, 2.0]]),
        np.array([[0, 5.0], [2, -1.0], [2, -3.0]]),
        np.array([[1, 4.0], [2, 0.0], [3, 7.0]]),
    ]
    est = RowMeans(batch_size=3)
    for X in batches:
        est.partial_fit(X)
    # By hand: row r's step k uses rho = schedule(k) and its N_r / C_r, with
    # N_r the running count of its points.
    eta = {r: np.array([0.0, -0.5]) for r in range(4)}
    steps = dict.fromkeys(range(4), 0)
    totals = dict.fromkeys(range(4), 0)
    for X in batches:
        for r, n in zip(*np.unique(X[:, 0].astype(int), return_counts=True)):
            totals[r] += n
        for r in np.unique(X[:, 0].astype(int)):
            x = X[X[:, 0] == r, 1]
            steps[r] += 1
            rho = schedule(steps[r])
            target = np.array([0.0, -0.5]) + totals[r] / x.size * np.array([x.sum(), -0.5 * x.size])
            eta[r] = (1 - rho) * eta[r] + rho * target
    got = est.natural_params_["means"]
    for r in range(4):
        np.testing.assert_allclose([got[0][r], got[1][r]], eta[r], rtol=1e-12)
    np.testing.assert_array_equal(est._row_steps("means"), [2, 2, 2, 1])
    np.testing.assert_array_equal(est._row_totals("means"), [3, 2, 3, 1])


def test_rejected_step_commits_no_row_counter():
    est = RowMeans(batch_size=2).partial_fit(np.array([[0, 1.0], [1, 1.0]]))
    before = est.natural_params_["means"]
    with pytest.warns(Warning):
        est.partial_fit(np.array([[0, np.inf], [1, 1.0]]))  # target not finite: skipped
    np.testing.assert_array_equal(est._row_steps("means"), [1, 1])
    np.testing.assert_array_equal(est.natural_params_["means"][0], before[0])


# ------------------------------------------------------- the map-reduce split
def _ratings(n_users=30, n_items=20, n=400, seed=0):
    rng = np.random.RandomState(seed)
    X = np.column_stack([rng.randint(n_users, size=n), rng.randint(n_items, size=n)])
    y = 3 + rng.normal(size=n)
    return X, y


def _cases():
    rng = np.random.RandomState(0)
    Xg = rng.normal(2.0, 1.5, size=(300, 3))
    counts = sp.csr_matrix(rng.poisson(0.4, size=(120, 25)).astype(float))
    Xl = rng.normal(size=(300, 4))
    yb = (Xl @ [1.0, -1.0, 0.5, 0.0] + rng.normal(size=300) > 0).astype(int)
    yp = rng.poisson(np.exp(0.3 * Xl[:, 0]))
    Xr, yr = _ratings()
    return [
        ("gaussian_gamma", GaussianGammaVB(), Xg, None),
        ("lda", SVILatentDirichletAllocation(n_components=3, random_state=0), counts, None),
        ("logistic", SVILogisticRegression(expectation="quadrature", random_state=0), Xl, yb),
        ("poisson", SVIPoissonRegression(expectation="quadrature", random_state=0), Xl, yp),
        ("mf", SVIMatrixFactorization(n_components=2, random_state=0), Xr, yr),
    ]


def _flat(params):
    return np.concatenate([np.ravel(a) for name in sorted(params) for a in params[name]])


@pytest.mark.parametrize("name, est, X, y", _cases(), ids=[c[0] for c in _cases()])
def test_statistics_of_two_blocks_add_to_those_of_the_blocks_stacked(name, est, X, y):
    n = X.shape[0]
    warm = slice(0, n)  # every id known to the model
    a, b = slice(n // 3, 2 * n // 3), slice(2 * n // 3, n)
    if y is None:
        est.partial_fit(X[warm])
        blocks = [(X[a], None), (X[b], None)]
        both = (X[n // 3 :], None)
    else:
        est.partial_fit(X[warm], y[warm])
        blocks = [(X[a], y[a]), (X[b], y[b])]
        both = (X[n // 3 :], y[n // 3 :])
    one, two = copy.deepcopy(est), copy.deepcopy(est)
    summed = sum(one.compute_statistics(*blk) for blk in blocks)
    stacked = two.compute_statistics(*both)
    assert isinstance(summed, Statistics) and summed.n_samples == stacked.n_samples
    one.apply_statistics(summed, total_samples=n)
    two.apply_statistics(stacked, total_samples=n)
    before = _flat(est.natural_params_)
    after_one, after_two = _flat(one.natural_params_), _flat(two.natural_params_)
    assert not np.allclose(after_one, before)  # the step moved the globals
    np.testing.assert_allclose(after_one, after_two, rtol=1e-10, atol=1e-12)


def test_apply_statistics_with_unit_step_is_the_closed_form_posterior():
    # Gaussian-Gamma with the precision fixed at its current mean: one unit
    # step from all the data is the conjugate update of the mean's factor.
    X = np.random.RandomState(1).normal(4.0, 2.0, size=(500, 1))
    est = GaussianGammaVB(learning_rate=1.0, update_order="joint").partial_fit(X[:5])
    e_gamma = est.precision_shape_ / est.precision_rate_
    est.apply_statistics(est.compute_statistics(X), total_samples=500)
    b0, m0 = 1e-3, 0.0
    precision = b0 + 500 * e_gamma
    np.testing.assert_allclose(est.mean_precision_, precision, rtol=1e-12)
    np.testing.assert_allclose(est.mean_, (b0 * m0 + e_gamma * X.sum()) / precision, rtol=1e-12)


def test_compute_statistics_before_fit_raises():
    with pytest.raises(AttributeError, match="fit or partial_fit first"):
        GaussianGammaVB().compute_statistics(np.zeros((3, 1)))


# --------------------------------------------------- n_jobs: blocks on threads
def _threaded_cases():
    rng = np.random.RandomState(2)
    n = 5000
    Xg = rng.normal(1.0, 2.0, size=(n, 3))
    Xl = rng.normal(size=(n, 4))
    yb = (Xl @ [1.0, -1.0, 0.5, 0.0] + rng.normal(size=n) > 0).astype(int)
    return [
        ("gaussian_gamma", GaussianGammaVB(max_iter=3, tol=0), Xg, None),
        (
            "logistic",
            SVILogisticRegression(
                expectation="quadrature", learning_method="batch", max_iter=3, tol=0, random_state=0
            ),
            Xl,
            yb,
        ),
    ]


@pytest.mark.parametrize(
    "name, est, X, y", _threaded_cases(), ids=[c[0] for c in _threaded_cases()]
)
def test_n_jobs_splits_minibatches_into_blocks_with_the_same_fit(name, est, X, y, monkeypatch):
    one = copy.deepcopy(est).set_params(n_jobs=1)
    two = copy.deepcopy(est).set_params(n_jobs=2)
    sizes = []

    def spy(method):
        original = getattr(type(two), method)

        def spied(self, data, *args):
            sizes.append(data.shape[0])
            return original(self, data, *args)

        return spied

    fit_args = (X,) if y is None else (X, y)
    one.fit(*fit_args)
    # The local step, or the bound that also gives the next local step.
    for method in ("_local_step", "_local_bound"):
        monkeypatch.setattr(type(two), method, spy(method))
    two.fit(*fit_args)
    assert 2500 in sizes  # the minibatch ran as two blocks of 2500 rows
    np.testing.assert_allclose(
        _flat(two.natural_params_), _flat(one.natural_params_), rtol=1e-9, atol=1e-12
    )
    np.testing.assert_allclose(two.lower_bounds_, one.lower_bounds_, rtol=1e-10)


@pytest.mark.parametrize("module", ["skvi", "skvi.engine", "skvi.engine.dask", "skvi.distributed"])
def test_import_skvi_does_not_import_dask(module):
    # dask is imported by the dask backend's functions when they run, never
    # by importing skvi, its engine, the backend or its public face.
    code = (
        f"import sys, {module}; "
        "bad = [m for m in ('dask', 'distributed') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_import_skvi_registers_nothing():
    # The engine imports its dask backend the first time it meets dask
    # input: importing skvi imports neither the backend nor its public face.
    code = (
        "import sys, numpy, skvi; "
        "from skvi.engine.executor import _BACKENDS, backend_for; "
        "assert backend_for(numpy.zeros((2, 2))) is None; "
        "bad = [m for m in ('skvi.engine.dask', 'skvi.distributed') if m in sys.modules]; "
        "assert not bad and not _BACKENDS, (bad, _BACKENDS)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
