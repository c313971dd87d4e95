"""What skvi runs on: versions of its dependencies and its compiled kernels."""

import ast
import os
import platform
import sys
import warnings
from importlib import machinery, metadata
from pathlib import Path

__all__ = ["kernels", "show_versions"]

_DEPENDENCIES = ("numpy", "scipy", "scikit-learn", "joblib")


def kernels():
    """Which compiled kernels are built, and the instruction set of LDA's.

    Returns
    -------
    dict
        ``{'lda': isa or None, 'gaussian': bool, 'gaussian_batch': bool,
        'picked': bool}``: the instruction set the LDA E-step kernel chose at
        import (``'avx512'``, ``'avx2'`` or ``'baseline'``), None when it is
        not built; whether matrix factorization's kernel of Gaussian moments,
        the family layer's kernel of many small Gaussians' moments
        (:func:`skvi.expfam.small_gaussian_moments`, which the networks'
        Gaussian nodes use) and the networks' kernel of a product of picked
        factors (matrix factorisation as a network) are built.

    Examples
    --------
    >>> from skvi import kernels
    >>> sorted(kernels())
    ['gaussian', 'gaussian_batch', 'lda', 'picked']
    """
    from .expfam import linalg
    from .models.lda import estep
    from .models.matrix_factorization import nodes
    from .networks import _picked

    lda = estep._lda_fast
    return {
        "lda": None if lda is None else lda.get_isa(),
        "gaussian": nodes._gaussian_fast is not None,
        "gaussian_batch": linalg._gaussian_batch is not None,
        "picked": _picked._picked_fast is not None,
    }


def show_versions():
    """Print the versions skvi runs with and which compiled kernels it uses.

    Paste its output into a bug report.

    Examples
    --------
    >>> from skvi import show_versions
    >>> show_versions()  # doctest: +ELLIPSIS
    skvi ...
    python ...
    numpy ...
    """
    from . import __version__

    print(f"skvi {__version__}")
    print(f"python {sys.version.split()[0]} ({platform.platform()})")
    for name in _DEPENDENCIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:  # pragma: no cover - a broken install
            version = "not installed"
        print(f"{name} {version}")
    built = kernels()
    lda = built["lda"]
    print(
        f"LDA E-step kernel: {'built, instruction set ' + lda if lda else 'not built (numpy fallback)'}"
    )
    for name in ("gaussian", "gaussian_batch", "picked"):
        state = "built" if built[name] else "not built (numpy fallback)"
        print(f"{_KERNEL_NAMES[name]} kernel: {state}")


_KERNEL_FILES = {
    "lda": ("models", "lda", "_lda_fast"),
    "gaussian": ("models", "matrix_factorization", "_gaussian_fast"),
    "gaussian_batch": ("expfam", "_gaussian_batch"),
    "picked": ("networks", "_picked_fast"),
}
_KERNEL_NAMES = {
    "lda": "LDA E-step",
    "gaussian": "Gaussian moments",
    "gaussian_batch": "small Gaussians' moments",
    "picked": "picked product",
}


def _build_record(package_dir):
    """``{'KERNELS': ..., 'COMPILER': ...}`` from ``package_dir/_build_info.py``, or {}.

    ``setup.py`` writes that file when it builds the kernels; a source tree
    that was never built has none.  It is parsed, not imported, so that
    another copy of skvi can be read too.
    """
    path = Path(package_dir) / "_build_info.py"
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return {}
    record = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    record[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
    return record


def _source_root(package_dir):
    """The checkout that holds ``package_dir`` when it is a source tree, else None."""
    root = Path(package_dir).parent
    if (root / "setup.py").is_file() and (root / "pyproject.toml").is_file():
        return root
    return None


def _has_kernels(package_dir):
    """Which compiled kernel files ``package_dir`` holds, by name."""
    suffixes = tuple(machinery.EXTENSION_SUFFIXES)
    found = {}
    for name, parts in _KERNEL_FILES.items():
        folder = Path(package_dir).joinpath(*parts[:-1])
        try:
            found[name] = any(
                p.name.startswith(parts[-1] + ".") and p.name.endswith(suffixes)
                for p in folder.iterdir()
            )
        except OSError:
            found[name] = False
    return found


def _other_copy(package_dir, path=None):
    """Another skvi package on ``sys.path`` (e.g. the one pip installed), or None."""
    here = Path(package_dir).resolve()
    for entry in sys.path if path is None else path:
        candidate = Path(entry or os.curdir) / "skvi"
        try:
            if (candidate / "__init__.py").is_file() and candidate.resolve() != here:
                return candidate.resolve()
        except OSError:
            continue
    return None


def _compiler_advice(record):
    """What to do about missing kernels, from a build record (see ``setup.py``)."""
    if not record:
        return (
            "They are built at install when a C compiler is present (this install "
            "recorded nothing): without one, install one (e.g. gcc) and reinstall skvi."
        )
    compiler, built = record.get("COMPILER", ""), record.get("KERNELS", {})
    if compiler is None:
        return (
            "No C compiler was found when skvi was built: install one (e.g. gcc, or "
            "Xcode's command line tools on macOS) and reinstall skvi."
        )
    if not all(built.values()):
        found = f"found the C compiler {compiler} but " if compiler else ""
        return (
            f"The build {found}could not compile them: reinstall with 'pip install -v' to see why."
        )
    return (
        "They were compiled when skvi was built but do not import here: reinstall skvi "
        "for this Python."
    )


def _missing_kernels_message(missing, package_dir, path=None):
    """The warning when the kernels named in ``missing`` are not built, with what to do.

    ``package_dir`` is the imported skvi's folder; ``path`` the list searched
    for another copy of skvi (``sys.path`` when None).
    """
    kernels_ = f"compiled kernels ({', '.join(missing)})"
    slow = (
        "so SVILatentDirichletAllocation, SVIMatrixFactorization and the networks' Gaussian "
        "nodes run on slower numpy code."
    )
    tail = " skvi.show_versions() tells what is in use."
    root = _source_root(package_dir)
    if root is None:  # an installed copy
        advice = _compiler_advice(_build_record(package_dir))
        return f"skvi's {kernels_} are not built, {slow} {advice}{tail}"
    where = f"skvi is imported from the source tree {root}"
    other = _other_copy(package_dir, path)
    if other is not None and all(_has_kernels(other).values()):
        return (
            f"{where} (Python puts the current directory first on its path with "
            f"'python -m' and 'python -c'), where the {kernels_} are not built, {slow} "
            f"The installed skvi in {other} has them: run Python from another directory "
            "to use it (e.g. 'cd ~ && python -m skvi'), or build the kernels in this tree "
            f"with 'pip install -e .'.{tail}"
        )
    record = _build_record(package_dir) or (_build_record(other) if other is not None else {})
    if record and (record.get("COMPILER") is None or not all(record.get("KERNELS", {}).values())):
        advice = _compiler_advice(record)  # the build of this tree (or the installed one) failed
    else:
        advice = "Build them in this tree with 'pip install -e .' (it needs a C compiler)."
    nor = "" if other is None else f" (nor in the installed skvi in {other})"
    return f"{where}, where the {kernels_} are not built{nor}, {slow} {advice}{tail}"


def warn_if_kernels_missing():
    """Warn once, at import, when the compiled kernels are not built.

    The message says why and what to do: when skvi is imported from a source
    checkout (``python -m skvi`` run in the checkout's root after
    ``pip install .``) while an installed copy has the kernels, to run from
    another directory; to install a C compiler only when the build found
    none (``setup.py`` records it in ``skvi/_build_info.py``).
    """
    built = kernels()
    missing = [_KERNEL_NAMES[name] for name in _KERNEL_FILES if not built[name]]
    if missing:
        package_dir = Path(__file__).resolve().parent
        warnings.warn(
            _missing_kernels_message(missing, package_dir),
            RuntimeWarning,
            stacklevel=3,
        )
