"""Commands that write records: `kb new` (skeletons, or fields from a model config) and `kb fmt`.
Every write is atomic and never overwrites without being asked.
"""
