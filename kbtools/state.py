"""Where kb keeps its own state for one knowledge base: in the user's cache directory, never in the
repository. Nothing a commit, a pull request or a copied checkout carries can be found there, so no file
in the repository can pose as a journal kb replays.

    $XDG_CACHE_HOME/kb/repos/<digest of the repository's resolved path>/   (default ~/.cache/kb/...)

The directory is made private to the user (0700) and used only when it is theirs; otherwise kb works
without state (StateUnavailable), which costs at most the ability to finish an interrupted kb mv.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


class StateUnavailable(OSError):
    """kb's state directory cannot be had safely (not the user's, shared, or not writable)."""


def _cache_base() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kb"


def state_dir(root: Path, create: bool = True) -> Path:
    """This knowledge base's state directory; made (0700) when `create`. Raises StateUnavailable."""
    key = hashlib.blake2b(os.fsencode(str(root.resolve())), digest_size=12).hexdigest()
    path = _cache_base() / "repos" / key
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StateUnavailable(exc.errno, f"cannot make kb's state directory {path}: {exc.strerror}") from exc
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path  # not made yet (create=False): nothing is stored there
    except OSError as exc:
        raise StateUnavailable(exc.errno, str(exc)) from exc
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise StateUnavailable(0, f"{path} is not a private directory of this user's; kb keeps no state there")
    return path
