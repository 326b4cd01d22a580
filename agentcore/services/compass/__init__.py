"""COMPASS: a task's reasoning stages (``stages``), their compression into stage summaries and
a task brief (``compression`` over ``drafts``), the metrics of every compression
(``metrics``), and the orchestration that runs compressions as jobs and serves a task's
context at each level (``orchestration``)."""
