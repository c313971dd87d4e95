"""Sphinx configuration of skvi's documentation.

Build (warnings are errors, as in CI)::

    pip install ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

The user guide is the Markdown pages of this folder (read by myst-parser),
the API reference is generated from the docstrings (autosummary + numpydoc)
and the gallery (``gallery/plot_*.py``) is executed by sphinx-gallery on
every build, on data that ships with skvi or scikit-learn (no download).
"""

import os
import re
import warnings

from threadpoolctl import threadpool_limits

import skvi

# -- Project ---------------------------------------------------------------

project = "skvi"
author = "the skvi developers"
copyright = "the skvi developers, BSD-3-Clause"
version = release = skvi.__version__

# -- General ---------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
# Cross-references in code spans (``rho_t``, ``X``) are not links.
default_role = "literal"

# -- Markdown (the user guide) ------------------------------------------

myst_enable_extensions = ["dollarmath", "colon_fence"]
# The guide's pages link to each other as `docs/engine.md` in code spans,
# not as links; give their section titles anchors so that new pages can.
myst_heading_anchors = 3

# -- API reference ---------------------------------------------------------

# Each module's page lists the classes and functions of its ``__all__`` (the
# estimators are defined in skvi.models and imported into skvi), so a name
# added to ``__all__`` appears in the reference without editing api.rst.
autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False
autodoc_default_options = {"members": True, "inherited-members": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
# numpydoc renders the Parameters / Attributes sections; autodoc lists the
# methods (below), so numpydoc's own member tables would repeat them.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
# The page's table of contents (the right-hand panel) lists a class's
# methods as ``fit()``, ``transform()``: with their parents' names they all
# began with the class's name and, cut to the panel's width, looked alike.
toc_object_entries_show_parents = "hide"


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document skvi's own methods only.

    Estimators inherit ``compute_statistics`` / ``apply_statistics`` from
    :class:`skvi.engine.SVIEstimator` and ``elbo`` from private skvi bases,
    which the reference should show; the methods they inherit from
    scikit-learn (``get_params``, ``set_output``, the metadata-routing
    ``set_*_request`` ...) are scikit-learn's, documented there, and their
    docstrings link to labels of scikit-learn's own user guide.
    """
    if skip or what != "class":
        return skip
    module = getattr(obj, "__module__", None)
    if module is None:
        func = getattr(obj, "fget", None) or getattr(obj, "__func__", None)
        module = getattr(func, "__module__", None)
    if module is not None and module.split(".")[0] != "skvi":
        return True
    return skip


# A numpydoc type such as ``ndarray of shape (n_features_in_,)`` is read as
# reStructuredText, where a word ending in ``_`` is a link to a target of that
# name ("Unknown target name: n_features_in").  scikit-learn writes these
# names in backquotes; skvi's docstrings write them bare (they read well in
# ``help()``), so escape the underscore in the type part of parameter and
# attribute lines before numpydoc parses them.
_FIELD = re.compile(r"^(\s*[*\w][\w, *\\]* : )(.*)$")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[,)\] ]|$)")


def _escape_type_underscores(app, what, name, obj, options, lines):
    for i, line in enumerate(lines):
        match = _FIELD.match(line)
        if match and not line.lstrip().startswith((">>>", "...")):
            head, kind = match.groups()
            lines[i] = head + _TRAILING_UNDERSCORE.sub(r"\\_", kind)


_SECTION_RULE = re.compile(r"^-{3,}\s*$")


def _section_starts(lines):
    """``{title: index}`` of the numpydoc sections of ``lines`` (a title over dashes)."""
    return {lines[i].strip(): i for i in range(len(lines) - 1)
            if lines[i].strip() and _SECTION_RULE.match(lines[i + 1])
            and len(lines[i + 1].strip()) >= len(lines[i].strip())}


def _description_after_parameters(app, what, name, obj, options, lines):
    """Put a class's longer description after its parameters, at the head of its Notes.

    numpydoc renders the extended summary (every paragraph between the
    one-line summary and the first section) before the Parameters, so an
    estimator page opened with several screens of prose before its
    parameters.  In the reference, a class with a Parameters section shows
    the summary, then the Parameters and Attributes, and its description
    opens the Notes section (created when the docstring has none).
    ``help()`` shows the docstring as written.
    """
    if what != "class":
        return
    sections = _section_starts(lines)
    if "Parameters" not in sections:
        return
    first = min(sections.values())
    start = 0
    while start < first and not lines[start].strip():
        start += 1
    while start < first and lines[start].strip():  # the summary paragraph
        start += 1
    description = lines[start:first]
    if not any(line.strip() for line in description):
        return
    while description and not description[0].strip():
        description.pop(0)
    while description and not description[-1].strip():
        description.pop()
    rest = lines[:start] + [""] + lines[first:]
    notes = _section_starts(rest).get("Notes")
    if notes is None:
        while rest and not rest[-1].strip():
            rest.pop()
        rest += ["", "Notes", "-----"] + description + [""]
    else:
        rest[notes + 2:notes + 2] = description + [""]
    lines[:] = rest


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
    # Before numpydoc's own handler (priority 500) reads the docstring.
    app.connect("autodoc-process-docstring", _escape_type_underscores, priority=400)
    app.connect("autodoc-process-docstring", _description_after_parameters, priority=450)


# -- Gallery ---------------------------------------------------------------

# Plots are rendered off-screen; examples must not block on a window.
os.environ.setdefault("MPLBACKEND", "Agg")
# The examples run with one BLAS thread.  On a 2-core machine shared with
# other work, BLAS's own threads fought for the cores: the digits example
# took 43 s with them and 8 s without.
threadpool_limits(limits=1)
warnings.filterwarnings(
    "ignore",
    message="Matplotlib is currently using agg, which is a non-GUI backend",
)

sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "plot_gallery": "True",
    # Fail the build on an example that raises, as -W fails it on warnings.
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    # "Examples using this class" at the foot of each API page.
    "doc_module": ("skvi",),
    "backreferences_dir": "generated/backreferences",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
}

# -- HTML ------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"skvi {release}"
html_static_path = ["_static"]
# Page titles wrap rather than being clipped (a class's name is one long word).
html_css_files = ["skvi.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False
