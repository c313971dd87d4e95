"""Build the optional compiled kernels; metadata lives in pyproject.toml.

The kernels are ``optional``: where they cannot be compiled (no C
compiler), the pure-Python package still installs and falls back to numpy.
They are ``skvi.models.lda._lda_fast`` (the LDA E-step),
``skvi.models.matrix_factorization._gaussian_fast`` (the user and item node
steps of matrix factorization), ``skvi.expfam._gaussian_batch`` (the moments
of many small Gaussians, which the networks' Gaussian nodes use) and
``skvi.networks._picked_fast`` (the networks' sums of products of picked
factors).
"""

import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: The short name of each kernel in ``skvi/_build_info.py`` (as ``skvi.kernels()`` names them).
KERNELS = {
    "skvi.models.lda._lda_fast": "lda",
    "skvi.models.matrix_factorization._gaussian_fast": "gaussian",
    "skvi.expfam._gaussian_batch": "gaussian_batch",
    "skvi.networks._picked_fast": "picked",
}


class BuildExt(build_ext):
    """Add ``-O3`` on compilers other than MSVC; record what was built.

    After the build, ``skvi/_build_info.py`` (beside the built package, and
    in the source tree for an in-place or editable build) says which kernels
    were built and which C compiler was found, so that skvi can tell a user
    whose kernels are missing whether installing a compiler would help.
    """

    def build_extensions(self):
        if self.compiler.compiler_type != "msvc":
            for ext in self.extensions:
                ext.extra_compile_args = ["-O3"] + list(ext.extra_compile_args)
        super().build_extensions()

    def run(self):
        super().run()
        self._write_build_info()

    def _compiler_found(self):
        """The C compiler's executable when it exists, None when absent, '' when unknown."""
        compiler = getattr(self, "compiler", None)
        command = getattr(compiler, "compiler_so", None)
        if not command:  # MSVC and others that do not name an executable
            return ""
        return command[0] if shutil.which(command[0]) else None

    def _write_build_info(self):
        built = {}
        for ext in self.extensions:
            path = os.path.join(self.build_lib, self.get_ext_filename(self.get_ext_fullname(ext.name)))
            built[KERNELS.get(ext.name, ext.name)] = os.path.exists(path)
        text = (
            '"""What the build of skvi compiled (written by setup.py at build time; not in git)."""\n\n'
            f"KERNELS = {built!r}\n"
            "# The C compiler the build found (None: none was found; '': not known).\n"
            f"COMPILER = {self._compiler_found()!r}\n"
        )
        folders = [os.path.join(self.build_lib, "skvi")]
        if self.inplace:
            folders.append(self.get_finalized_command("build_py").get_package_dir("skvi"))
        for folder in folders:
            if os.path.isdir(folder):
                with open(os.path.join(folder, "_build_info.py"), "w") as fh:
                    fh.write(text)


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
                # The family layer's compiled Gaussian map, which the kernel cimports.
                depends=["skvi/expfam/_gaussian_small.pxd"],
            ),
            Extension(
                "skvi.expfam._gaussian_batch",
                ["skvi/expfam/_gaussian_batch.pyx"],
                depends=["skvi/expfam/_gaussian_small.pxd"],
            ),
            Extension("skvi.networks._picked_fast", ["skvi/networks/_picked_fast.pyx"]),
        ],
        compiler_directives={"language_level": 3},
    )
    for ext in exts:
        ext.optional = True  # cythonize does not carry ``optional`` over
    return exts


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
