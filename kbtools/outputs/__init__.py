"""What kb writes from a checked corpus without building a site: check reports (text, JSON, GitHub,
SARIF), explanations, queries and exports. They read the corpus; they never re-parse records.
"""
