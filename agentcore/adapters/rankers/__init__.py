"""The learned ranking of search candidates: a gradient-boosted tree ensemble fitted offline
(``benchmarks/ranker``), shipped as ``relevance_model.json`` and evaluated here with numpy."""
