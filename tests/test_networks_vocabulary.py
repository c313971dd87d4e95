"""docs/networks.md's table of BayesPy's nodes stays complete and true to skvi.networks.

The table ("Every node of BayesPy") names each node BayesPy exports with its
status in skvi.networks: the same, or not provided and what to use instead.
A BayesPy release that adds a node, or a node that skvi adds, makes these
tests fail until the table says so.
"""

import inspect
import pathlib
import re

import pytest

import skvi.networks

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "networks.md"
HEADING = "### Every node of BayesPy"


def table_rows():
    """The (names, status) of each row of the page's table of BayesPy's nodes."""
    text = PAGE.read_text()
    assert HEADING in text, f"docs/networks.md lost its section {HEADING!r}"
    lines = text.split(HEADING, 1)[1].splitlines()
    rows = []
    for line in lines:
        if rows and not line.startswith("|"):
            break
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| BayesPy |"):
            continue
        first, status = line.strip("|").split("|", 1)
        # The names are the code spans of the first column that are identifiers,
        # not the modules named in parentheses.
        names = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", first.split("(")[0])
        rows.append((names, status.strip()))
    return rows


def bayespy_node_names():
    """The nodes ``bayespy.nodes`` exports: its public classes and node-making functions."""
    nodes = pytest.importorskip("bayespy.nodes")
    return {
        name
        for name, value in vars(nodes).items()
        if name[:1].isupper() and (inspect.isclass(value) or inspect.isfunction(value))
    }


def test_table_names_every_node_of_bayespy():
    listed = {name for names, _ in table_rows() for name in names}
    missing = sorted(bayespy_node_names() - listed)
    assert not missing, f"docs/networks.md's table of BayesPy's nodes lacks {missing}"


def test_table_says_the_same_only_of_what_skvi_networks_exports():
    rows = table_rows()
    assert len(rows) > 20
    for names, status in rows:
        assert status.startswith(("the same", "not provided")), (names, status)
        for name in names:
            provided = name in skvi.networks.__all__
            assert provided == status.startswith("the same"), (
                f"{name}: the table says {status!r}, but skvi.networks "
                f"{'exports' if provided else 'does not export'} it"
            )
