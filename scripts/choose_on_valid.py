"""Pick a run's model on validation, then read the test split once: best.pt or the average of the last N.

The rule of configs/multi30k_de_en_gpu_reg.yaml: average the last ``--last`` validated
checkpoints (``nmt average``), translate the validation split with best.pt and with the
average (beam ``--beam``), keep the one with the higher validation BLEU (best.pt on a tie), and
translate ``--test`` with that one alone.  Each step is the nmt command a shell would run, so the
files land where they would by hand: ``RUN/checkpoints/avg_lastN.pt`` and
``RUN/eval-{best,avg_lastN}-{split}-b{beam}/``.

Command (from the repository root, after ``nmt train`` wrote RUN)::

    python scripts/choose_on_valid.py runs/multi30k_de_en_gpu_reg --last 5 --beam 5 --test test2016

One JSON line per evaluation on stdout (``event``: ``valid`` for each candidate, ``chosen``,
then ``test``), logs of the nmt commands on stderr.  Every argument is checked before the first
command runs (so before ``avg_lastN.pt`` is rewritten): the run's step checkpoints for ``--last``,
the beam against the model, both splits against the run's prepared corpus (Multi30k's upstream
names, such as ``test_2016_flickr``, name its splits too).  A bad one, or any other user error, is
one line ``choose_on_valid.py: error: ...`` and exit status 2, as the nmt CLI gives; a failed nmt
command ends the script with that command's status.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

from _script_args import Parser, fail, whole_number
from nmt.run.paths import RunPaths, report_json
from nmt.util.errors import UserError

PROG = "choose_on_valid.py"


def nmt(*args: str) -> None:
    """One nmt command in a process of its own, its output on stderr; a failure ends the script
    with the command's status (2 for a user error, whose line the command printed above)."""
    done = subprocess.run([sys.executable, "-m", "nmt", *args], stdout=sys.stderr, check=False)
    if done.returncode != 0:
        print(f"{PROG}: error: nmt {' '.join(args)} exited with status {done.returncode}", file=sys.stderr)
        sys.exit(done.returncode)


def check_arguments(run: Path, last: int, beam: int, valid: str, test: str) -> tuple[str, Optional[str]]:
    """Everything the nmt commands would refuse part-way, refused now: our names of the
    validation and test splits (None: no test split), or a UserError."""
    import torch

    from nmt.data.splits import check_split
    from nmt.decode.inference import check_beam, load_checkpoint
    from nmt.training.average import check_output, resolve

    paths = RunPaths(run)
    if not paths.best.is_file():
        raise UserError(f"{paths.best} not found; train the run first")
    check_output(average_path(run, last), resolve([run], last=last, best=None), force=True)
    loaded = load_checkpoint(paths.best, torch.device("cpu"))
    check_beam(beam, loaded.model)
    valid_split = check_split(loaded.config.data, valid, "--valid")
    if test == "none":
        return valid_split, None
    test_split = check_split(loaded.config.data, test, "--test")
    if test_split == valid_split:
        raise UserError(
            f"--test {test} is the split the choice is made on (--valid {valid}); give another test split, or none"
        )
    return valid_split, test_split


def average_path(run: Path, last: int) -> Path:
    """The average this script writes (and replaces on a second call) beside the run's checkpoints."""
    return RunPaths(run).checkpoints / f"avg_last{last}.pt"


def evaluate(run: Path, checkpoint: Path, name: str, split: str, beam: int) -> dict[str, Any]:
    """BLEU, chrF and the length ratio of one checkpoint on one split, from the report.json nmt eval writes."""
    out = run / f"eval-{name}-{split}-b{beam}"
    nmt("eval", "--checkpoint", str(checkpoint), "--split", split, "--beam", str(beam), "--out", str(out))
    (system,) = json.loads(report_json(out).read_text(encoding="utf-8"))["systems"].values()
    scores = {key: system[key] for key in ("bleu", "chrf", "length_ratio")}
    return {"checkpoint": str(checkpoint), "split": split, "beam": beam, **scores}


def main(argv: list[str] | None = None) -> None:
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="Run folder written by nmt train.")
    parser.add_argument(
        "--last",
        type=whole_number(2, why="an average of one checkpoint is that checkpoint"),
        default=5,
        help="Checkpoints to average (default: 5).",
    )
    parser.add_argument("--beam", type=whole_number(1), default=5, help="Beam size for every evaluation (default: 5).")
    parser.add_argument("--valid", default="valid", help="Split the choice is made on (default: valid).")
    parser.add_argument(
        "--test",
        default="test2016",
        help="Split read once with the chosen model (default: test2016); 'none' reads no test split, to compare "
        "configurations on validation before any of them is read on test.",
    )
    args = parser.parse_args(argv)
    try:
        valid, test = check_arguments(args.run, args.last, args.beam, args.valid, args.test)
        choose(args.run, args.last, args.beam, valid, test)
    except UserError as exc:
        fail(PROG, str(exc))


def choose(run: Path, last: int, beam: int, valid: str, test: Optional[str]) -> None:
    """Average, evaluate both candidates on ``valid``, keep the better, read ``test`` with it (None: no test)."""
    paths = RunPaths(run)
    avg_name = f"avg_last{last}"
    average = average_path(run, last)
    # --force: a second call (--test none first, then --test SPLIT) replaces this script's own average
    nmt("average", str(run), "--last", str(last), "-o", str(average), "--force")
    scores = {}
    for name, checkpoint in (("best", paths.best), (avg_name, average)):
        scores[name] = evaluate(run, checkpoint, name, valid, beam)
        print(json.dumps({"event": "valid", "model": name, **scores[name]}), flush=True)
    chosen = avg_name if scores[avg_name]["bleu"] > scores["best"]["bleu"] else "best"
    print(json.dumps({"event": "chosen", "model": chosen, "rule": f"higher {valid} BLEU"}), flush=True)
    if test is None:
        return
    result = evaluate(run, Path(scores[chosen]["checkpoint"]), chosen, test, beam)
    print(json.dumps({"event": "test", "model": chosen, **result}), flush=True)


if __name__ == "__main__":
    main()
