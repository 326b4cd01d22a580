"""The ``agentcore`` command: ``main`` is its entry, ``service`` the commands that run the
service here, ``keys`` API keys, ``calls`` the commands that call a running service (with
``output`` for tables and ``transfer`` for export/import)."""
