"""Downloads of the fetchers: streaming a file, its checks, and the folder it is staged in.

A download goes to a temporary folder inside the data set's folder and is
moved into place only once it is checked; whatever fails, nothing is left
behind: neither the partial file nor a folder the download created.
"""

import hashlib
import os
import re
import shutil
import tempfile
import urllib.request
from pathlib import Path

#: Seconds a download waits for the server before giving up.
TIMEOUT = 60


class DataNotFoundError(FileNotFoundError):
    """A data set is neither in the data folder nor downloadable now.

    Raised by the fetchers of :mod:`skvi.datasets` when the set's files are
    missing and ``download_if_missing=False``, or when the download failed
    (no network, a server error).  The message names the URL of each file
    and the folder to put it in.  It is an :class:`OSError` (as scikit-learn's
    fetchers raise) and a :class:`FileNotFoundError`.

    See Also
    --------
    skvi.datasets.get_data_home : the folder the fetchers read.

    Examples
    --------
    >>> import tempfile
    >>> from skvi.datasets import DataNotFoundError, fetch_libsvm
    >>> try:
    ...     fetch_libsvm("w8a", data_home=tempfile.mkdtemp(), download_if_missing=False)
    ... except DataNotFoundError as exc:
    ...     print(isinstance(exc, OSError), "binary/w8a" in str(exc))
    True True
    """


def _urlopen(url, timeout=TIMEOUT):
    """Open ``url`` (``http(s)://`` or ``file://``) for reading."""
    from .. import __version__

    request = urllib.request.Request(url, headers={"User-Agent": f"skvi/{__version__}"})
    return urllib.request.urlopen(request, timeout=timeout)


def _missing(what, urls, folder, root, extract=False):
    """The DataNotFoundError of files that are absent and not to be downloaded."""
    if extract:
        how = "extract its files into"
    else:
        how = f"put {'it' if len(urls) == 1 else 'them'} in"
    return DataNotFoundError(
        f"{what}: not found in {folder} and download_if_missing=False. Download "
        f"{' and '.join(urls)} and {how} {folder}{os.sep}, or call with "
        "download_if_missing=True. The fetchers read "
        f"data_home, else $SKVI_DATA, else skvi.datasets.get_data_home() (now {root})."
    )


def _unreachable(what, url, folder, exc, extract=False):
    """The DataNotFoundError of a download that failed (offline, server error)."""
    how = "extract the files of the archive into" if extract else "put the file in"
    return DataNotFoundError(
        f"{what}: could not download {url} ({exc}). Download it where there is a "
        f"network, {how} {folder}{os.sep} and call again (or set $SKVI_DATA or "
        "data_home to the folder that holds it)."
    )


def _download(url, path, what, folder, md5=None, extract=False):
    """Stream ``url`` into the new file ``path``; check its size and MD5.

    A failure to download raises :class:`DataNotFoundError`; a file whose
    size differs from the server's Content-Length or whose MD5 differs from
    ``md5`` raises :class:`OSError` (the caller drops it).
    """
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    try:
        with _urlopen(url) as response, open(path, "wb") as out:
            announced = response.headers.get("Content-Length")
            while True:
                chunk = response.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
    except OSError as exc:  # URLError, HTTPError, timeouts, resets
        raise _unreachable(what, url, folder, exc, extract) from exc
    if announced is not None and size != int(announced):
        raise OSError(
            f"{what}: the download of {url} stopped after {size} of {announced} bytes; "
            "nothing was kept, call again to retry."
        )
    if md5 is not None and digest.hexdigest() != md5.lower():
        raise OSError(
            f"{what}: {url} has the MD5 checksum {digest.hexdigest()}, not the published "
            f"{md5.lower()}: the file is corrupted or was changed at the source, and was "
            "not kept."
        )


def _published_md5(url, what, folder):
    """The MD5 that ``url`` (a ``.md5`` file in ``md5sum`` or BSD layout) states."""
    try:
        with _urlopen(url) as response:
            text = response.read(4096).decode("ascii", "replace")
    except OSError as exc:
        raise _unreachable(what, url, folder, exc, extract=True) from exc
    found = re.search(r"\b[0-9a-fA-F]{32}\b", text)
    if found is None:
        raise OSError(f"{what}: {url} states no MD5 checksum; nothing was downloaded.")
    return found.group(0)


class _Staging:
    """A temporary folder inside ``folder`` whose files move into it once checked.

    ``folder`` and any of its parents that do not exist yet are created;
    on leaving, the temporary folder is removed, and so is every folder
    created here that is still empty (all of them when the download
    failed: a fetch that fails leaves the disk as it found it, no empty
    ``~/skvi_data`` behind).
    """

    def __init__(self, folder):
        self.folder = Path(folder)

    def __enter__(self):
        # The folders to create, deepest first: those to remove again when empty.
        self.created = []
        missing = self.folder
        while not missing.exists() and missing != missing.parent:
            self.created.append(missing)
            missing = missing.parent
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=".download-", dir=self.folder))
        return self

    def keep(self, names):
        for name in names:
            os.replace(self.path / name, self.folder / name)

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)
        for folder in self.created:
            try:
                folder.rmdir()
            except OSError:  # not empty: files were kept (or another fetch put some)
                break
        return False


def _check(ok, what, url, problem):
    if not ok:
        raise OSError(f"{what}: the file downloaded from {url} {problem}; it was not kept.")
