"""What kb offers other libraries, each imported only when asked for: the link graph as a networkx graph
(kbtools.interop.graph, the `graph` extra) and typed records as pydantic models generated from kb's own schemas
(kbtools.interop.models, the `models` extra). No `kb check` imports this package."""
