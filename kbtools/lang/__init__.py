"""The small languages kb reads, shared by the checker and the site: units (pint with kb's own definitions),
formulas (a checked subset of Python expressions) and Markdown (wikilinks, inline values, headings).
They import nothing else of kb.
"""
