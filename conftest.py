"""Collection of skvi's doctests: those of the optional extras need the extra."""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None:
    # The dask backend and its public face: their examples run a cluster.
    collect_ignore += ["skvi/distributed.py", "skvi/engine/dask"]
