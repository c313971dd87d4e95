"""What skvi runs on: versions of its dependencies and its compiled kernels."""

import platform
import sys
import warnings
from importlib import metadata

__all__ = ["kernels", "show_versions"]

_DEPENDENCIES = ("numpy", "scipy", "scikit-learn", "joblib")


def kernels():
    """Which compiled kernels are built, and the instruction set of LDA's.

    Returns
    -------
    dict
        ``{'lda': isa or None, 'gaussian': bool}``: the instruction set the
        LDA E-step kernel chose at import (``'avx512'``, ``'avx2'`` or
        ``'baseline'``), None when it is not built; whether matrix
        factorization's kernel of Gaussian moments is built.

    Examples
    --------
    >>> from skvi import kernels
    >>> sorted(kernels())
    ['gaussian', 'lda']
    """
    from .models.lda import estep
    from .models.matrix_factorization import nodes

    lda = estep._lda_fast
    return {
        "lda": None if lda is None else lda.get_isa(),
        "gaussian": nodes._gaussian_fast is not None,
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
    print(f"LDA E-step kernel: {'built, instruction set ' + lda if lda else 'not built (numpy fallback)'}")
    print(f"Gaussian moments kernel: {'built' if built['gaussian'] else 'not built (numpy fallback)'}")


def warn_if_kernels_missing():
    """Warn once, at import, when the compiled kernels were not built."""
    built = kernels()
    missing = [name for name, ok in (("LDA E-step", built["lda"]), ("Gaussian moments", built["gaussian"])) if not ok]
    if missing:
        warnings.warn(
            f"skvi's compiled kernels ({', '.join(missing)}) are not built, so "
            "SVILatentDirichletAllocation and SVIMatrixFactorization run on slower numpy "
            "code. They are built when a C compiler is present at install: install one "
            "(e.g. gcc) and reinstall skvi. skvi.show_versions() tells what is in use.",
            RuntimeWarning,
            stacklevel=3,
        )
