"""The memory lifecycle: promotion, session close, compaction, expiry, export and import."""
