"""AgentCore Memory: the memory service of an agent platform."""

__version__ = "0.1.0"
