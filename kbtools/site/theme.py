"""The site's theme: kb's own templates and static files, overridden file by file by the knowledge base's.

A knowledge base needs no theme of its own to publish: `kb build` uses the one packaged with kb
(kbtools/theme/). A file at the same place under the repository's site/templates/ or site/static/
replaces the packaged one of that name and nothing else, the way MkDocs and Hugo themes are
overridden; a new file there is added.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from jinja2 import BaseLoader, ChoiceLoader, FileSystemLoader

PACKAGED = Path(__file__).resolve().parent.parent / "theme"
PARTS = ("templates", "static")


class Theme:
    def __init__(self, site_path: Path):
        # the repository's layer first: where both hold a file, the repository's wins
        self.layers = [site_path, PACKAGED]

    def files(self, part: str) -> dict[str, Path]:
        """Every file of one part (templates or static) that a build uses: relative name -> the file."""
        chosen: dict[str, Path] = {}
        for layer in reversed(self.layers):
            folder = layer / part
            if folder.is_dir():
                for path in sorted(folder.rglob("*")):
                    if path.is_file():
                        chosen[path.relative_to(folder).as_posix()] = path
        return chosen

    def loader(self) -> BaseLoader:
        return ChoiceLoader([FileSystemLoader(str(layer / "templates")) for layer in self.layers])

    def copy_static(self, out: Path) -> None:
        for name, path in self.files("static").items():
            target = out / "static" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)

    def fingerprint(self) -> str:
        """What every page depends on: the files the build uses, whichever layer each comes from."""
        digest = hashlib.blake2b(digest_size=16)
        for part in PARTS:
            for name, path in self.files(part).items():
                digest.update(f"{part}/{name}\0".encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()
