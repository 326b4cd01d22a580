"""The memory browser at ``/ui`` (docs/ui.md): server-rendered pages of what the agents
remember, read through the same methods and API keys as ``/rpc``."""
