"""What a plain install must do, run by ``make package`` in the fresh environment made from the wheel
and from the git URL (default dependencies only): train a tiny model, translate and score with it from
Python and from the command line, and refuse an engine of the ``export`` extra in one line.

``make package`` once checked only ``import nmt; nmt.load``, which passed while loading any model
failed for want of safetensors (then only in the ``export`` extra).  Run from outside the
repository, so nothing is imported from the working tree::

    cd /tmp && /path/to/venv/bin/python /path/to/.ci/package_smoke.py
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import nmt

TINY: dict[str, Any] = {
    "runs_dir": "runs",
    "name": "smoke",
    "data": {
        "corpus": "synthetic",
        "root": "data",
        "synthetic_sizes": {"train": 400, "valid": 20, "test": 20},
        "synthetic_max_words": 8,
        "vocab_size": 200,
    },
    "model": {"emb_size": 16, "hidden_size": 16},
    "train": {"max_steps": 6, "valid_every": 3, "keep_last": 2, "max_tokens": 800, "threads": 1, "tensorboard": False},
    "decode": {"beam": 2},
}
EXPORT_EXTRA = ("onnx", "onnxscript", "onnxruntime", "ctranslate2")


def main() -> None:
    installed = [name for name in EXPORT_EXTRA if importlib.util.find_spec(name) is not None]
    assert not installed, f"the export extra's {installed} are installed: this checks a plain install"
    nmt_command = Path(sys.executable).with_name("nmt")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "config.yaml").write_text(json.dumps(TINY), encoding="utf-8")  # JSON is YAML
        run = nmt.train(
            root / "config.yaml", [f"runs_dir={root / 'runs'}", f"data.root={root / 'data'}"], progress=False
        )
        translator = run.translator()
        (result,) = translator.translate(["The cats do not like the dogs."], return_attention=True)
        (forced,) = translator.score(["The cats do not like the dogs."], [result.hypotheses[0].tokens])
        assert abs(forced.total - result.hypotheses[0].log_prob) < 1e-3, (forced.total, result.hypotheses[0].log_prob)
        scores = nmt.evaluate(run.folder, split="test", out=root / "eval").records[0]
        cli = subprocess.run(
            [str(nmt_command), "translate", "--checkpoint", str(run.best)],
            input="The dog runs.\n",
            capture_output=True,
            text=True,
            check=True,
        )
        export = subprocess.run(
            [str(nmt_command), "export", "--checkpoint", str(run.best), "--format", "onnx", "-o", str(root / "x")],
            capture_output=True,
            text=True,
        )
        assert export.returncode == 2 and "pip install 'nmt-attention[export]'" in export.stderr, export.stderr
        released = subprocess.run(
            [
                str(nmt_command),
                "export",
                "--checkpoint",
                str(run.best),
                "--format",
                "safetensors",
                "-o",
                str(root / "release"),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert released.returncode == 0
        (again,) = nmt.load(root / "release").translate(["The cats do not like the dogs."])
        assert again.text == result.text, (again.text, result.text)
        # The user tools of the package: model selection and diagnosis, as commands and functions.
        selection = nmt.select(run.folder, last=2, beam=2, test="test")
        assert selection.chosen and (run.folder / "selection.json").is_file()
        tool = subprocess.run(
            [str(nmt_command), "diagnose", "fit-gap", str(run.best), "--train-pairs", "20"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert tool.stdout.strip().startswith("{"), tool.stdout
        refused = subprocess.run(
            [str(nmt_command), "select", str(run.folder), "--last", "9"], capture_output=True, text=True
        )
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    print(
        f"package smoke: trained {TINY['train']['max_steps']} updates, translated {result.text!r} "
        f"(forced score {forced.total:.3f}), test BLEU {scores['bleu']:.2f}, the CLI wrote {cli.stdout.strip()!r}, "
        f"a safetensors export translates alike, onnx export asks for the extra, nmt select chose {selection.chosen}, "
        "nmt diagnose fit-gap ran, a bad --last is one line"
    )


if __name__ == "__main__":
    main()
