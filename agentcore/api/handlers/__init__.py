"""One module per method family: each parses its methods' params, calls one service and
returns a result model. ``api/methods.py`` puts them in one table; the transport (JSON-RPC,
MCP, keys, errors) stays in ``api/``."""
