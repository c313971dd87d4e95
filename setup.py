"""Build the optional compiled kernels; metadata lives in pyproject.toml.

``skvi.models.lda._lda_fast`` (the LDA E-step) and
``skvi.models.matrix_factorization._gaussian_fast`` (moments of many small
Gaussians) are ``optional``: where they
cannot be compiled (no C compiler), the pure-Python package still installs
and falls back to numpy.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """Add ``-O3`` on compilers other than MSVC."""

    def build_extensions(self):
        if self.compiler.compiler_type != "msvc":
            for ext in self.extensions:
                ext.extra_compile_args = ["-O3"] + list(ext.extra_compile_args)
        super().build_extensions()


def extensions():
    try:
        from Cython.Build import cythonize
    except ImportError:  # e.g. --no-build-isolation without Cython
        return []
    exts = cythonize(
        [
            Extension(
                "skvi.models.lda._lda_fast",
                ["skvi/models/lda/_lda_fast.pyx"],
                depends=[
                    "skvi/models/lda/_lda_kernel.h",
                    "skvi/models/lda/_lda_kernel_body.h",
                    "skvi/models/lda/_lda_kernel_iterate.h",
                ],
            ),
            Extension(
                "skvi.models.matrix_factorization._gaussian_fast",
                ["skvi/models/matrix_factorization/_gaussian_fast.pyx"],
            ),
        ],
        compiler_directives={"language_level": 3},
    )
    for ext in exts:
        ext.optional = True  # cythonize does not carry ``optional`` over
    return exts


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
