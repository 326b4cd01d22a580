"""The OpenSpec v1.0.0 Knowledge Provider face: REST under ``/openspec/v1`` over the same
method table, keys and error table as JSON-RPC (docs/openspec.md)."""
