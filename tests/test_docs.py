"""The README's code and the quickstart run and give the right numbers."""

import importlib.util
import pathlib
import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
HAS_DASK = all(importlib.util.find_spec(m) is not None for m in ("dask", "distributed"))


def test_readme_tour_runs_and_recovers_the_generating_mean():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for block in blocks:
            if "import dask" in block and not HAS_DASK:
                continue  # the dask extra is not installed (the min-versions job)
            exec(compile(block, str(README), "exec"), namespace)
    # The tour's data are N(5, 2^2): every fit must recover the mean.
    for name in ("vb", "svi", "stream", "est"):
        np.testing.assert_allclose(namespace[name].mean_, 5.0, atol=0.05)
    if HAS_DASK:
        # The fit on a dask cluster takes the in-memory fit's steps.
        dist, vb = namespace["dist"], namespace["vb"]
        np.testing.assert_allclose(dist.mean_, vb.mean_, rtol=1e-12)
        np.testing.assert_allclose(dist.lower_bounds_, vb.lower_bounds_, rtol=1e-10)
    # The topic model predicts held-out words better than the unigram model
    # (one topic), whose document-completion perplexity is computed here.
    from skvi.metrics import document_completion_perplexity, split_document_tokens

    train, test = namespace["train"], namespace["test"]
    word_p = (np.asarray(train.sum(axis=0)).ravel() + 1.0 / 6)
    word_p /= word_p.sum()
    keep = np.asarray(test.sum(axis=1)).ravel() >= 2
    _, heldout = split_document_tokens(test, random_state=0)
    heldout = heldout[keep].tocoo()
    unigram = np.exp(-np.dot(heldout.data, np.log(word_p[heldout.col])) / heldout.data.sum())
    assert namespace["perplexity"] < 0.9 * unigram
    assert namespace["npmi"].shape == (6,) and np.all(np.abs(namespace["npmi"]) <= 1)


def test_quickstart_main_prints_posterior(capsys):
    from skvi.__main__ import main

    main()
    out = capsys.readouterr().out
    # Newcomb's data: 66 values with mean 26.212; the vague prior shrinks it
    # by a relative 1e-3 / (1e-3 + 66 E[gamma]) = 0.17%.
    assert "66 measurements" in out
    assert re.search(r"q\(mu\)\s+= N\(mean=26\.16", out)
