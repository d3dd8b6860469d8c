"""kb's version: one module of its own, so that whatever records the version (a store's key, a report, an export)
imports it without importing the package's public entry points (kbtools.open and its check)."""

__version__ = "0.1.0"
