"""skvi.show_versions, skvi.kernels and the warning when the kernels are missing."""

import warnings
from importlib import metadata

import pytest

import skvi
from skvi import _versions
from skvi.models.lda import estep
from skvi.models.matrix_factorization import nodes


def test_show_versions_prints_the_installed_versions_and_kernels(capsys):
    skvi.show_versions()
    out = capsys.readouterr().out
    for name in ("numpy", "scipy", "scikit-learn", "joblib"):
        assert f"{name} {metadata.version(name)}" in out
    assert f"skvi {skvi.__version__}" in out
    built = skvi.kernels()
    assert built["gaussian"] == (nodes._gaussian_fast is not None)
    if estep._lda_fast is not None:
        assert built["lda"] == estep._lda_fast.get_isa()
        assert f"instruction set {built['lda']}" in out


def test_missing_kernels_warn_once_with_the_remedy(monkeypatch):
    if estep._lda_fast is not None and nodes._gaussian_fast is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _versions.warn_if_kernels_missing()  # both built: silent
    monkeypatch.setattr(estep, "_lda_fast", None)
    monkeypatch.setattr(nodes, "_gaussian_fast", None)
    with pytest.warns(RuntimeWarning, match="C compiler"):
        _versions.warn_if_kernels_missing()
    assert skvi.kernels() == {"lda": None, "gaussian": False}
