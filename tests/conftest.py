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


@pytest.fixture
def shared_data():
    """A function: the path of a file of the shared data folder, or a skip.

    The folder is ``$SKVI_DATA``, defaulting to ``../shared/data`` beside the
    repository; a test that needs it skips with the path when it is absent.
    """

    from skvi.datasets import get_data_home

    root = get_data_home()

    def find(*parts):
        path = root.joinpath(*parts)
        if not path.exists():
            pytest.skip(f"{path} not found (set SKVI_DATA)")
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
