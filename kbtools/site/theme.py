"""The site's theme: kb's own templates and static files, overridden file by file by the knowledge base's.

A knowledge base needs no theme of its own to publish: `kb build` uses the one packaged with kb
(kbtools/theme/). A file at the same place under the repository's site/templates/ or site/static/
replaces the packaged one of that name and nothing else, the way MkDocs and Hugo themes are
overridden; a new file there is added.

A theme arrives in pull requests like records do, so it is treated as input, not as code kb trusts
(docs/theme.md): templates run in Jinja's sandbox and see only the plain data kb hands them, and a
theme file is read only from inside its own directory — a link that leaves it, a FIFO, a device, or a
/proc file is left out with a warning, never read, rendered or published.
"""

from __future__ import annotations

import hashlib
import os
import stat
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jinja2 import BaseLoader, BytecodeCache, Environment, TemplateError, TemplateNotFound, select_autoescape
from jinja2.bccache import Bucket
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from kbtools.corpus import Settings
from kbtools.diagnostics import one_line
from kbtools.files import NotReadable, read_regular_file
from kbtools.outputs.targets import OutputError

PACKAGED = Path(__file__).resolve().parent.parent / "theme"
MAX_THEME_FILE_BYTES = 64 * 1024 * 1024  # a template, a stylesheet, a script, a font, an image
PARTS = ("templates", "static")

# what a template may look into: the plain data kb hands it, and Jinja's own helpers (loop, macros,
# namespace(), an imported template's macros); any other object's attributes are refused, so an object
# added to a page's context later cannot hand a theme a method that writes or reads files
_DATA = (str, int, float, type(None), list, tuple, dict, set, frozenset, range, Mapping, Markup)
_JINJA_MODULES = ("jinja2.",)


class ThemeError(OutputError):
    """A theme kb will not build a site from; the message names the file (and line). An OutputError, so
    every command that builds a site refuses it as it refuses an output directory: a message, exit 2."""


class ThemeSandbox(ImmutableSandboxedEnvironment):
    """Jinja's sandbox (no Python internals, no changing what kb passed in), narrowed to plain data."""

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        plain = isinstance(obj, _DATA) or type(obj).__module__.startswith(_JINJA_MODULES)
        return plain and super().is_safe_attribute(obj, attr, value)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


class Theme:
    def __init__(self, settings: Settings):
        self.root = Path(os.path.realpath(settings.root))
        # the repository's layer first: where both hold a file, the repository's wins
        self.layers = [settings.site_path, PACKAGED]
        self.problems: list[str] = []  # files left out, one line each: the build's warnings
        self.refused: dict[str, dict[str, str]] = {part: {} for part in PARTS}  # part -> name -> why
        self._files = {part: self._collect(part) for part in PARTS}
        self.shown_names: dict[str, str] = {}  # a template's file -> how messages name it

    # ------------------------------------------------------------ which files the theme is made of
    def shown(self, path: str | Path) -> str:
        """A theme file as messages name it: relative to the repository when it lies there."""
        text = str(path)
        root = str(self.root)
        return one_line(text[len(root) + 1 :] if _inside(text, root) and text != root else text)

    def _refuse(self, part: str, name: str, path: str, why: str) -> None:
        self.refused[part][name] = f"{self.shown(path)} {why}"
        self.problems.append(f"{self.shown(path)} {why}: not used")

    def _collect(self, part: str) -> dict[str, Path]:
        """Every file of one part (templates or static) that a build uses: relative name -> the file.
        A part's directory counts as the theme's own only where it lies, not where a link would take it:
        site/static linked to ~/.ssh is not a theme directory."""
        chosen: dict[str, Path] = {}
        for layer in reversed(self.layers):
            top = str(Path(os.path.realpath(layer.parent)) / layer.name / part)
            if not os.path.lexists(top):
                continue
            real_top = os.path.realpath(top)
            if real_top != top:
                self._refuse(part, "", top, f"is a link to {one_line(os.readlink(top))}, outside the theme")
                continue
            if not os.path.isdir(top):
                self._refuse(part, "", top, "is not a directory")
                continue
            for current, dirs, files in os.walk(top, followlinks=True):
                real_current = os.path.realpath(current)
                for name in sorted(dirs):
                    full = os.path.join(current, name)
                    real = os.path.realpath(full)
                    rel = os.path.relpath(full, top)
                    if not _inside(real, real_top):
                        dirs.remove(name)
                        self._refuse(
                            part, rel, full, f"is a link to {one_line(os.readlink(full))}, outside {self.shown(top)}/"
                        )
                    elif _inside(real_current, real):  # a link back up the tree: walked once, not forever
                        dirs.remove(name)
                for name in files:
                    full = os.path.join(current, name)
                    rel = Path(os.path.relpath(full, top)).as_posix()
                    why = self._why_not(full, real_top, top)
                    if why:
                        self._refuse(part, rel, full, why)
                    else:
                        chosen[rel] = Path(full)
        return dict(sorted(chosen.items()))

    def _why_not(self, path: str, real_top: str, top: str) -> str | None:
        """Why a file in a theme directory is not used, or None: it must be a regular file inside it."""
        if not _inside(os.path.realpath(path), real_top):
            return f"is a link to {one_line(os.readlink(path))}, outside {self.shown(top)}/"
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            return f"cannot be read ({exc.strerror})"
        if not stat.S_ISREG(mode):
            return "is not a regular file (a FIFO, socket or device)"
        return None

    def files(self, part: str) -> dict[str, Path]:
        return self._files[part]

    def read(self, path: Path) -> bytes:
        """A theme file's bytes, read as kb reads every file it did not write (kbtools.files): a file swapped
        for a FIFO or a device since the theme was listed is refused, not waited on."""
        try:
            return read_regular_file(path, MAX_THEME_FILE_BYTES)[0]
        except NotReadable as exc:
            raise ThemeError(f"{self.shown(path)}: {exc}; a theme file must be a regular file") from None

    # ------------------------------------------------------------ what the build does with it
    def environment(self) -> Environment:
        return ThemeSandbox(
            loader=ThemeLoader(self),
            autoescape=select_autoescape(default=True),
            trim_blocks=True,
            lstrip_blocks=True,
            bytecode_cache=COMPILED,
        )

    def copy_static(self, out: Path) -> None:
        for name, path in self.files("static").items():
            target = out / "static" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.read(path))

    def fingerprint(self) -> str:
        """What every page depends on: the files the build uses, whichever layer each comes from."""
        digest = hashlib.blake2b(digest_size=16)
        for part in PARTS:
            for name, path in self.files(part).items():
                digest.update(f"{part}/{name}\0".encode())
                digest.update(self.read(path))
        return digest.hexdigest()

    def not_found(self, name: str) -> str:
        """Why a template name names no template: it is not in the theme, or the theme file was left out."""
        for refused, why in self.refused["templates"].items():
            if refused == "" or name == refused or name.startswith(refused + "/"):
                return f"no template {one_line(repr(name))} in the theme: {why}"
        return f"no template {one_line(repr(name))} in the theme"

    def error(self, exc: Exception, template: str) -> ThemeError:
        """A template's failure as one line naming the template file and line where Jinja gives them."""
        where = self.shown_names.get(getattr(exc, "filename", None) or "", "")
        line = getattr(exc, "lineno", None) if isinstance(exc, TemplateSyntaxError) else None
        for frame, lineno in traceback.walk_tb(exc.__traceback__):  # Jinja puts the template's lines in
            if frame.f_code.co_filename in self.shown_names:
                where, line = self.shown_names[frame.f_code.co_filename], lineno
        if not where:
            where = f"template {one_line(template)}"
        if isinstance(exc, TemplateNotFound):
            what = exc.message or self.not_found(str(exc.name))
        elif isinstance(exc, SecurityError):
            what = f"{(exc.message or '').rstrip('.')}; a theme may use only the data kb hands its templates (docs/theme.md)"
        elif isinstance(exc, TemplateError):
            what = exc.message or type(exc).__name__
        else:
            what = f"the template failed: {type(exc).__name__}: {exc}"
        return ThemeError(f"{where}:{line}: {one_line(what)}" if line else f"{where}: {one_line(what)}")


class CompiledTemplates(BytecodeCache):
    """Templates compiled earlier in this process (a `kb serve` builds again on every save): Jinja keys each
    by its name and file and checks the source's checksum before using it, so an edited template compiles
    afresh. Kept in memory only: nothing compiled is ever read from disk."""

    def __init__(self) -> None:
        self.compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self.compiled.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self.compiled[bucket.key] = bucket.bytecode_to_string()


COMPILED = CompiledTemplates()


class ThemeLoader(BaseLoader):
    """Templates by name from the theme's files and nowhere else: a name not among them (`..`, an absolute
    path, a link the theme left out) is not found."""

    def __init__(self, theme: Theme):
        self.theme = theme

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        path = self.theme.files("templates").get(template)
        if path is None:
            raise TemplateNotFound(template, self.theme.not_found(template))
        try:
            source = self.theme.read(path).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ThemeError(f"{self.theme.shown(path)}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        self.theme.shown_names[str(path)] = self.theme.shown(path)
        return source, str(path), lambda: True  # one environment per build: never stale

    def list_templates(self) -> list[str]:
        return list(self.theme.files("templates"))
