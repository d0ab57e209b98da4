"""nmt compare on a Transformer config: without --variants, one arm of the config's own model."""

from __future__ import annotations

import json

from conftest import run_cli, toy_overrides

TRANSFORMER = ["model.arch=transformer"] + [
    f"model.transformer.{o}" for o in ("d_model=16", "heads=2", "ff_size=32", "enc_layers=1", "dec_layers=1")
]


def test_a_transformer_config_compares_its_own_model_over_seeds(tmp_path, toy_files, capsys):
    _, files = toy_files
    base = [s for s in toy_overrides(tmp_path, files) if not s.startswith(("name=", "runs_dir=", "model."))]
    args = ["compare", "--runs-dir", str(tmp_path / "cmp"), "--no-progress", "--seeds", "1,2", "--steps", "6"]
    args += [arg for s in [*base, *TRANSFORMER] for arg in ("--set", s)] + ["--beam", "1"]
    code, _out, err = run_cli(args, capsys)
    assert code == 0, err
    report = json.loads((tmp_path / "cmp" / "report" / "report.json").read_text(encoding="utf-8"))
    (row,) = report["variants"]
    assert row["variant"] == "transformer" and row["seeds"] == [1, 2] and row["p_seeds"] is None
    assert sorted(p.name for p in (tmp_path / "cmp").glob("transformer_s*")) == ["transformer_s1", "transformer_s2"]
