"""Write generated conversations as JSON:
``.venv/bin/python -m benchmarks.conversations --seed 1 --count 40 --out conversations.json``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import generate_conversations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    samples = generate_conversations(args.seed, args.count)
    args.out.write_text(json.dumps(samples, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    questions = sum(len(sample["qa"]) for sample in samples)
    print(f"wrote {len(samples)} conversations, {questions} questions to {args.out}")


if __name__ == "__main__":
    main()
