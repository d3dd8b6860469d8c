"""The static site: pages from the checked corpus and the theme in site/, charts, the calculator's
models, and publishing (search index, the atomic swap into place).
"""
