"""``python -m agentcore.cli``: the ``agentcore`` command."""

from agentcore.cli.main import main

raise SystemExit(main())
