"""Shared test helpers."""

import pytest

from skvi import SVIMatrixFactorization


class _PriorStartMF(SVIMatrixFactorization):
    """Matrix factorization whose every fit starts at the prior covariances.

    A batch ``fit`` starts its nodes tighter than an online one (see
    ``SVIMatrixFactorization._initial_nodes``); tests that compare one
    coordinate-ascent sweep with one online step, or one sweep of two
    update paths, use this to start both from the same state.
    """

    def _initial_nodes(self, name, n, rng, rated, tight=False):
        return super()._initial_nodes(name, n, rng, rated, tight=False)


@pytest.fixture
def prior_start_mf():
    """:class:`SVIMatrixFactorization` starting at the prior covariances."""
    return _PriorStartMF


#: The start of the reason of every skip for want of the shared data folder.
DATA_SKIP = "no shared data (set SKVI_DATA)"


def _data_home_origin():
    """How :func:`skvi.datasets.get_data_home` chose the data folder, for a skip's reason."""
    import os
    from pathlib import Path

    import skvi.datasets

    if os.environ.get("SKVI_DATA"):
        return "from $SKVI_DATA"
    checkout = Path(skvi.datasets.__file__).resolve().parents[2]
    beside = checkout.parent / "shared" / "data"
    if beside.is_dir():
        return f"shared/data beside the checkout {checkout}"
    return (
        f"$SKVI_DATA is unset and {beside} (shared/data beside the checkout {checkout}) "
        "does not exist, so the default"
    )


@pytest.fixture
def shared_data():
    """A function: the path of a file of the shared data folder, or a skip.

    The folder is :func:`skvi.datasets.get_data_home`'s: ``$SKVI_DATA``,
    else ``shared/data`` beside the checkout (the project's layout, and
    CI's), else ``~/skvi_data``.  A test that needs a file absent from it
    skips with a reason that names the file, where the folder came from
    and ``SKVI_DATA``; the run's summary counts these skips (see
    ``pytest_terminal_summary`` below), so that they are never silent.
    """

    from skvi.datasets import get_data_home

    root = get_data_home()

    def find(*parts):
        path = root.joinpath(*parts)
        if not path.exists():
            pytest.skip(
                f"{DATA_SKIP}: {path} not found; the data folder is {root} "
                f"({_data_home_origin()}). Set SKVI_DATA to the folder that holds "
                f"{parts[0]}/ (the project's shared/data) to run this test."
            )
        return path

    return find


@pytest.fixture(scope="module")
def client():
    """A dask LocalCluster of two one-thread worker processes on loopback, and its client."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=40,
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def pytest_terminal_summary(terminalreporter):
    """Say how many tests skipped for want of the shared data, and how to run them.

    Without ``-rs`` pytest shows a skip as an ``s`` only; these skips leave
    real-data checks out of the run, so the summary names them.
    """
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and DATA_SKIP in str(report.longrepr[2])
    ]
    if skipped:
        from skvi.datasets import get_data_home

        terminalreporter.write_sep(
            "-", f"{len(skipped)} tests skipped for want of the shared data", yellow=True
        )
        terminalreporter.write_line(
            f"The data folder is {get_data_home()} ({_data_home_origin()}), and lacks their "
            "files. Set SKVI_DATA to the folder of the data sets (the project's shared/data) "
            "to run them; pytest -rs lists them."
        )
