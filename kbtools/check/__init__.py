"""The checking pipeline: discover and load, schema, links, near-duplicates, debris, constraints, compute
(with the prose check), and the stale-figure pass; `pipeline.check_corpus` runs them in order. Stages add
Diagnostics instead of raising. Nothing here imports the site, the outputs or authoring.
"""
