"""Command line of ``benchmarks.ranker`` (see its docstring)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from agentcore.services.relevance import FEATURES

from .dataset import Features, extract
from .fit import (
    MODEL,
    Params,
    calibration,
    combined,
    export,
    recall,
    reference,
    spread,
    subset,
    train,
    write,
)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ranker")
    commands = parser.add_subparsers(dest="command", required=True)
    feats = commands.add_parser("features", help="store conversations, write their features")
    feats.add_argument("conversations", type=Path)
    feats.add_argument("--out", type=Path, required=True)
    feats.add_argument("--limit", type=int, default=None, help="the first N conversations")
    feats.add_argument("--pool", type=int, default=30, help="SEARCH_CANDIDATES")
    feats.add_argument(
        "--small", type=float, default=0.0, help="share of questions also asked of a small scope"
    )
    fit = commands.add_parser("fit", help="fit on some feature files, measure on others")
    fit.add_argument("--train", type=Path, nargs="+", required=True)
    fit.add_argument("--test", type=Path, nargs="*", default=[])
    fit.add_argument("--columns", nargs="*", default=list(FEATURES))
    fit.add_argument("--rounds", type=int, default=Params.rounds)
    fit.add_argument("--leaves", type=int, default=Params.leaves)
    fit.add_argument("--no-monotone", action="store_true")
    fit.add_argument("--write", action="store_true", help=f"write the model to {MODEL}")
    fit.add_argument("--trained-on", default="", help="what the training files hold (noted)")
    halves = commands.add_parser(
        "halves", help="fit on half the conversations, measure on the rest"
    )
    halves.add_argument("features", type=Path)
    halves.add_argument("--columns", nargs="*", default=list(FEATURES))
    args = parser.parse_args()

    if args.command == "features":
        extract(args.conversations, args.pool, args.limit, args.small).save(args.out)
        return
    if args.command == "fit":
        params = Params(leaves=args.leaves, rounds=args.rounds, monotone=not args.no_monotone)
        data = combined([Features.load(p) for p in args.train])
        model = train(data, params, args.columns)
        use = [FEATURES.index(c) for c in args.columns]
        report = {}
        for path in args.test:
            test = Features.load(path)
            report[path.name] = {
                "model": recall(test, model.predict(test.x[:, use])),
                "fusion": recall(test, test.x[:, FEATURES.index("fused")]),
            }
        print(json.dumps(report, indent=2))
        if args.write:
            raw = model.predict(data.x[:, use])
            scale = calibration(raw, data.label)
            note = {
                "spread": spread(data, raw, scale),
                "reference": reference(data, raw),
                "version": args.trained_on.split()[0] if args.trained_on else "unnamed",
                "trained_on": args.trained_on,
                "embedder": data.embedder,
                "questions": len(data.group),
            }
            write(MODEL, export(model, args.columns, scale, note))
            print(f"wrote {MODEL}")
        return
    data = Features.load(args.features)
    use = [FEATURES.index(c) for c in args.columns]
    conversations = np.unique(data.conversation)
    first = np.isin(data.conversation, conversations[: len(conversations) // 2])
    report = {}
    for name, fit_on in (("fit on first half, test on second", first), ("swapped", ~first)):
        model = train(subset(data, fit_on), Params(), args.columns)
        test = subset(data, ~fit_on)
        report[name] = {
            "model": recall(test, model.predict(test.x[:, use])),
            "fusion": recall(test, test.x[:, FEATURES.index("fused")]),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
