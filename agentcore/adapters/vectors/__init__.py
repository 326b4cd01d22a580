"""Vector store adapters: embedded Qdrant (``edge``: qdrant-edge, on a thread or in a process
of its own) and Qdrant server (``qdrant_server``: qdrant-client). Import them from their
modules: a process that serves the embedded shard never loads qdrant-client."""
