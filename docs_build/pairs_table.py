"""Attention variants across language pairs: one table per pair, a summary, and whether rankings carry over.

A thin wrapper over :mod:`nmt.comparison.groups` (what ``nmt compare-groups`` runs), in two steps,
so that a table can be finished over several sittings from the JSON lines it is made of:

1. ``--collect DIR``: DIR holds one ``nmt compare --runs-dir DIR/<pair>`` folder per language pair
   (each with its report/report.json and its runs' compare-<split>/scored.json); one JSON line per
   run (pair, variant, seed, BLEU, chrF, the combined test's p and the seeds it covers, updates,
   parameters, forward FLOPs per target token, the run's own training seconds, the device it
   trained on, the sacreBLEU signature) is written to ``--out``.
2. ``FILE.jsonl ...``: the tables, in Markdown on stdout.  Per pair: each variant's mean BLEU over
   seeds ± its 95% t interval, its difference to the baseline ± the interval of the paired
   differences, the paired t-test over seeds, and its rank.  Over two or more pairs, a summary
   (each variant's ΔBLEU and rank per pair), Kendall's tau-b between the pairs' rankings by mean BLEU
   (:mod:`nmt.score.seed_stats`), and the statistics across pairs (:mod:`nmt.score.across`): each
   variant's pooled difference with its interval over the pairs, where it is positive, the
   partial-conjunction count, Holm's adjusted p-values within each pair, and Kendall's W with
   Friedman's test.  Last, each pair's combined test (the comparisons' approximate randomization
   over all seeds' translations, raw and Holm-adjusted) and the power line: the pooled spread
   between seeds and the smallest difference 3, 5 and 10 seeds detect with 80% power
   (:mod:`nmt.comparison.groups_noise`).  With ``--against FILE ...``: the same pairs run on another
   device or code version, which may repeat the seeds, set beside them as a block
   (:func:`nmt.comparison.groups_devices.rerun_table`).

Commands (from the repository root)::

    python docs_build/pairs_table.py --collect runs/pairs --out docs/measurements/pairs_DATE_MACHINE.jsonl \\
        --note machine=H100 --note commit=HASH
    python docs_build/pairs_table.py docs/measurements/pairs_DATE_MACHINE.jsonl
    python docs_build/pairs_table.py docs/measurements/pairs_*_cpu.jsonl --pairs de-en   # one pair of several files
    python docs_build/pairs_table.py CPU.jsonl --against GPU.jsonl   # the same seeds rerun elsewhere, as a block
    python docs_build/pairs_table.py A.jsonl B.jsonl --device "AMD EPYC"   # only the runs of one machine kind
    python docs_build/pairs_table.py A.jsonl B.jsonl --device "AMD EPYC" --against A.jsonl --against-device "Intel Xeon"

``--module FILE.py`` (with ``--collect``) imports a module that registers an attention the runs
used (docs/adding_an_attention.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nmt.comparison.groups import collect, read_records, records_jsonl, tables
from nmt.comparison.groups_noise import Record
from nmt.util.errors import UserError

SCRIPT = "pairs_table.py"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("jsonl", nargs="*", type=Path, help="JSON lines written by --collect, to tabulate.")
    parser.add_argument("--collect", type=Path, help="Folder of nmt compare folders, one per language pair.")
    parser.add_argument("--out", type=Path, help="With --collect: the JSON lines file to write.")
    parser.add_argument("--note", action="append", default=[], help="KEY=VALUE added to every collected line.")
    parser.add_argument(
        "--module", action="append", default=[], help="A module registering an attention the runs used (nmt --module)."
    )
    parser.add_argument(
        "--against",
        nargs="+",
        type=Path,
        default=[],
        help="JSON lines of the same pairs run on another device or code version (the same seeds may "
        "repeat): each arm's difference to the baseline in the files minus in these, as a block.",
    )
    parser.add_argument(
        "--pairs",
        help="Tabulate only these pairs, comma-separated (e.g. de-en), where the files hold more (default: every pair).",
    )
    parser.add_argument(
        "--device",
        help="Tabulate only the runs trained on this device, as their lines name it (device_name, e.g. "
        "'AMD EPYC'), where the files hold runs of several (default: every run).",
    )
    parser.add_argument(
        "--against-device",
        help="With --against: set only the runs of this device beside the files' (as --device does for the files).",
    )
    args = parser.parse_args(argv)
    try:
        if args.collect:
            from nmt.util.registry import allow

            allow(args.module)  # the arms' configs name its attention: their model is built to count FLOPs
            if args.out is None:
                sys.exit(f"{SCRIPT}: error: --collect needs --out FILE.jsonl")
            notes = dict(n.split("=", 1) for n in args.note)
            records = collect(args.collect, notes)
            args.out.write_text(records_jsonl(records), encoding="utf-8")
            print(f"wrote {len(records)} runs to {args.out}", file=sys.stderr)
            return
        if not args.jsonl:
            sys.exit(f"{SCRIPT}: error: give JSON lines files to tabulate, or --collect DIR --out FILE")
        records = read_records(args.jsonl)
        if args.pairs:
            wanted = [p.strip() for p in args.pairs.split(",") if p.strip()]
            missing = sorted(set(wanted) - {r["pair"] for r in records})
            if missing:
                sys.exit(f"{SCRIPT}: error: --pairs names pairs with no runs in these files: {', '.join(missing)}")
            records = [r for r in records if r["pair"] in wanted]
        if args.against_device and not args.against:
            sys.exit(f"{SCRIPT}: error: --against-device needs --against FILE")
        records = on_device(records, args.device, "--device")
        against = (
            on_device(read_records(args.against), args.against_device, "--against-device") if args.against else None
        )
        sys.stdout.write(tables(records, against=against))
    except UserError as exc:
        sys.exit(f"{SCRIPT}: error: {exc}")


def on_device(records: list[Record], device: str | None, option: str) -> list[Record]:
    """The records trained on ``device`` (all of them without one); none is an error naming the devices there are."""
    if device is None:
        return records
    kept = [r for r in records if r.get("device_name") == device]
    if not kept:
        named = ", ".join(sorted({str(r.get("device_name")) for r in records}))
        sys.exit(f"{SCRIPT}: error: {option} {device!r} trained no run of these files (they name: {named})")
    return kept


if __name__ == "__main__":
    main()
