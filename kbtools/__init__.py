"""kb: the checker and site builder for the LLM-inference cost knowledge base."""

__version__ = "0.1.0"
