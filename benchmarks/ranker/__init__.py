"""The ranking model of memory.search: its training data and its fitting.

``dataset`` stores conversations (LoCoMo's JSON shape: sessions of turns, questions with their
evidence turns) in an embedded service in this process, one scope per conversation, and asks
every question through the service's own candidate generation (``EnhancedRetrieval.candidates``),
so the features a model is fitted on are the ones it reads when it serves. ``fit`` fits a
LightGBM LambdaRank model on one set of conversations, measures evidence recall on others, and
writes the model the service loads (``agentcore/adapters/rankers``).

    .venv/bin/python -m benchmarks.ranker features FILE.json --out FEATURES.npz
    .venv/bin/python -m benchmarks.ranker fit --train A.npz [B.npz] --test C.npz [--write]
"""
