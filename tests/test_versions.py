"""skvi.show_versions, skvi.kernels and the warning when the kernels are missing."""

import os
import pathlib
import shutil
import subprocess
import sys
import warnings
from importlib import machinery, metadata

import pytest

import skvi
from skvi import _versions
from skvi.expfam import linalg
from skvi.models.lda import estep
from skvi.models.matrix_factorization import nodes
from skvi.networks import _picked


def test_show_versions_prints_the_installed_versions_and_kernels(capsys):
    skvi.show_versions()
    out = capsys.readouterr().out
    for name in ("numpy", "scipy", "scikit-learn", "joblib"):
        assert f"{name} {metadata.version(name)}" in out
    assert f"skvi {skvi.__version__}" in out
    built = skvi.kernels()
    assert built["gaussian"] == (nodes._gaussian_fast is not None)
    assert built["gaussian_batch"] == (linalg._gaussian_batch is not None)
    assert built["picked"] == (_picked._picked_fast is not None)
    for name in ("gaussian", "gaussian_batch", "picked"):
        state = "built" if built[name] else "not built (numpy fallback)"
        assert f"{_versions._KERNEL_NAMES[name]} kernel: {state}" in out
    if estep._lda_fast is not None:
        assert built["lda"] == estep._lda_fast.get_isa()
        assert f"instruction set {built['lda']}" in out


def test_missing_kernels_warn_once_with_the_remedy(monkeypatch):
    modules = [(estep, "_lda_fast"), (nodes, "_gaussian_fast")]
    modules += [(linalg, "_gaussian_batch"), (_picked, "_picked_fast")]
    if all(getattr(module, name) is not None for module, name in modules):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _versions.warn_if_kernels_missing()  # all built: silent
    for module, name in modules:
        monkeypatch.setattr(module, name, None)
    with pytest.warns(RuntimeWarning, match="C compiler") as record:
        _versions.warn_if_kernels_missing()
    assert "LDA E-step, Gaussian moments, small Gaussians' moments, picked product" in str(
        record[0].message
    )
    assert skvi.kernels() == {
        "lda": None,
        "gaussian": False,
        "gaussian_batch": False,
        "picked": False,
    }


# ------------------------------------------- the message when kernels are missing
SUFFIX = machinery.EXTENSION_SUFFIXES[0]
PACKAGE = pathlib.Path(skvi.__file__).resolve().parent
ROOT = PACKAGE.parent


def _copy_source_tree(dest):
    """The checkout's package and build files, without compiled kernels or build record."""
    shutil.copytree(
        PACKAGE,
        dest / "skvi",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "_build_info.py", "__pycache__", "*.c"),
    )
    for name in ("setup.py", "pyproject.toml"):
        shutil.copy(ROOT / name, dest / name)
    assert not any(p.suffix in (".so", ".pyd") for p in (dest / "skvi").rglob("*"))
    return dest


def _installed_copy(site, kernels=True, record=None):
    """A package folder as pip installs it: no setup.py beside it, kernel files if asked."""
    package = site / "skvi"
    shutil.copytree(
        PACKAGE,
        package,
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "_build_info.py", "__pycache__", "*.c"),
    )
    if kernels:
        for parts in _versions._KERNEL_FILES.values():
            package.joinpath(*parts[:-1], parts[-1] + SUFFIX).write_bytes(b"")
    if record is not None:
        (package / "_build_info.py").write_text(record)
    return package


def _run_quickstart(cwd, pythonpath):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, pythonpath)))
    return subprocess.run(
        [sys.executable, "-m", "skvi"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_quickstart_in_a_checkout_says_the_source_tree_is_imported(tmp_path):
    # 'pip install . && python -m skvi' in the checkout's root imports
    # the source tree (the current directory comes first on sys.path), whose
    # kernels are not built, while the installed copy has them.
    src = _copy_source_tree(tmp_path / "checkout")
    installed = _installed_copy(
        tmp_path / "site-packages",
        kernels=True,
        record="KERNELS = {'lda': True, 'gaussian': True}\nCOMPILER = 'cc'\n",
    )
    proc = _run_quickstart(cwd=src, pythonpath=[tmp_path / "site-packages"])
    assert proc.returncode == 0, proc.stderr
    assert "q(mu)    = N(mean=26.1663, sd=1.3215)" in proc.stdout  # the numpy fallback runs
    message = " ".join(proc.stderr.split())
    assert f"skvi is imported from the source tree {src}" in message
    assert f"The installed skvi in {installed} has them" in message
    assert "run Python from another directory" in message
    assert "compiler" not in message  # a compiler was there: no advice to install one


def test_a_source_tree_built_without_a_compiler_says_to_install_one(tmp_path):
    src = _copy_source_tree(tmp_path / "checkout")
    (src / "skvi" / "_build_info.py").write_text(
        "KERNELS = {'lda': False, 'gaussian': False}\nCOMPILER = None\n"
    )
    proc = _run_quickstart(cwd=tmp_path, pythonpath=[src])
    assert proc.returncode == 0, proc.stderr
    message = " ".join(proc.stderr.split())
    assert f"skvi is imported from the source tree {src}, where the compiled kernels" in message
    assert "No C compiler was found when skvi was built: install one" in message


@pytest.mark.parametrize(
    "record, says, not_says",
    [
        (
            "KERNELS = {'lda': False, 'gaussian': False}\nCOMPILER = None\n",
            "No C compiler was found when skvi was built: install one",
            "could not compile",
        ),
        (
            "KERNELS = {'lda': False, 'gaussian': True}\nCOMPILER = 'gcc'\n",
            "found the C compiler gcc but could not compile them",
            "install one",
        ),
        (
            "KERNELS = {'lda': True, 'gaussian': True}\nCOMPILER = 'gcc'\n",
            "compiled when skvi was built but do not import",
            "install one",
        ),
        (None, "this install recorded nothing", "could not compile"),
    ],
)
def test_an_installed_copy_advises_from_its_build_record(tmp_path, record, says, not_says):
    package = _installed_copy(tmp_path / "site-packages", kernels=False, record=record)
    message = _versions._missing_kernels_message(["LDA E-step"], package, path=[])
    assert message.startswith("skvi's compiled kernels (LDA E-step) are not built")
    assert says in message and not_says not in message


def test_a_source_tree_beside_an_installed_copy_without_kernels(tmp_path):
    src = _copy_source_tree(tmp_path / "checkout")
    installed = _installed_copy(
        tmp_path / "site",
        kernels=False,
        record="KERNELS = {'lda': False, 'gaussian': False}\nCOMPILER = None\n",
    )
    message = _versions._missing_kernels_message(
        ["LDA E-step", "Gaussian moments"], src / "skvi", path=[str(src), str(tmp_path / "site")]
    )
    assert f"(nor in the installed skvi in {installed})" in message
    assert "No C compiler was found" in message
    # With a compiler recorded and nothing failed, it says how to build in place.
    (installed / "_build_info.py").write_text(
        "KERNELS = {'lda': True, 'gaussian': True}\nCOMPILER = 'gcc'\n"
    )
    message = _versions._missing_kernels_message(
        ["LDA E-step"], src / "skvi", path=[str(tmp_path / "site")]
    )
    assert (
        "Build them in this tree with 'pip install -e .'" in message
        and "install one" not in message
    )
