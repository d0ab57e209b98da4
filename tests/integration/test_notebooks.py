"""The notebooks of notebooks/: each runs from top to bottom in its smoke setting, and none is
committed with outputs.

The smoke setting (``setting: smoke`` in the folder's ``nmt-class.yaml``) trains tiny models on the embedded synthetic corpus for
a few updates, so a whole notebook takes seconds; its cells assert on what the library returned.
Each runs in a kernel of this interpreter, in a temporary folder, so nothing lands in the repository.
Notebooks 07 and 09 leave lines to the student: they run here as their lecturer's copies in
notebooks/source/, answers written (tests/integration/test_exercises.py tests the student versions).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from conftest import REPO, run_cli

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT = 300
"""Seconds after which a cell counts as hung: a guard, not a claim about speed (the machine is shared)."""


def smoke_environment() -> dict[str, str]:
    """The kernel's environment: this checkout's nmt first on the path, no display."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}


def smoke_folder(folder: Path, **fields: object) -> Path:
    """``folder`` with the notebooks' setting file saying smoke (and ``fields``), as ``nmt class setting --smoke`` writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nmt-class.yaml").write_text(yaml.safe_dump({"setting": "smoke", **fields}), encoding="utf-8")
    return folder


def test_the_ten_notebooks_are_there_in_order():
    assert [p.name[:3] for p in NOTEBOOKS] == [f"{i:02d}_" for i in range(1, 11)], [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_notebook_is_committed_with_outputs(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, f"{path.name} cell {i}"
    assert "widgets" not in nb["metadata"], path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_cell_only_installs_nmt_where_it_is_missing(path: Path):
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "code", path.name
    assert "import nmt" in first.source and "except ImportError" in first.source, first.source
    # the URL is written into the cell, or the cell stops in one line: no made-up address, no variable to set
    assert '\nREPOSITORY = ""\n' in first.source and 'nmt-attention @ git+{REPOSITORY}"' in first.source, first.source
    assert "raise ImportError(\"nmt is not installed: write the repository's git URL into REPOSITORY" in first.source


def with_repository(source: str, url: str) -> str:
    """The first cell with ``url`` written into it, as a student writes it."""
    assert source.count('REPOSITORY = ""') == 1, source
    return source.replace('REPOSITORY = ""', f"REPOSITORY = {url!r}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_cell_without_a_url_stops_in_one_line(path: Path, monkeypatch: pytest.MonkeyPatch):
    from IPython.core.inputtransformer2 import TransformerManager

    source = TransformerManager().transform_cell(nbformat.read(path, as_version=4).cells[0].source)
    monkeypatch.setitem(sys.modules, "nmt", None)
    with pytest.raises(
        ImportError, match=r"^nmt is not installed: write the repository.s git URL into REPOSITORY above"
    ):
        exec(compile(source, path.name, "exec"), {})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_cell_stops_in_one_line_when_the_install_gave_no_nmt(path: Path, monkeypatch: pytest.MonkeyPatch):
    """%pip install reports a failure and returns: the cell went on, and the next cell failed with
    ModuleNotFoundError, far from the cause.  Run as IPython runs it, with an install that installs nothing."""
    from IPython.core.inputtransformer2 import TransformerManager

    source = TransformerManager().transform_cell(
        with_repository(nbformat.read(path, as_version=4).cells[0].source, "https://example.invalid/nmt")
    )
    magics: list[tuple[str, str]] = []

    class FailedInstall:
        def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> None:
            magics.append((name, line))  # pip printed its error; nothing was installed

    monkeypatch.setitem(sys.modules, "nmt", None)  # `import nmt` raises ImportError, as where it is missing
    with pytest.raises(SystemExit) as stopped:
        exec(compile(source, path.name, "exec"), {"get_ipython": FailedInstall})
    assert [name for name, _ in magics] == ["pip", "pip"], magics
    message = str(stopped.value.code)
    assert "\n" not in message and message.startswith("nmt did not install from https://example.invalid/nmt: "), message


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_first_cell_upgrades_pip_before_it_installs_nmt(path: Path, monkeypatch: pytest.MonkeyPatch):
    """Python 3.11's bundled pip (23.2) refuses ``nmt-attention @ git+URL``: the cell upgrades pip first."""
    from IPython.core.inputtransformer2 import TransformerManager

    source = TransformerManager().transform_cell(
        with_repository(nbformat.read(path, as_version=4).cells[0].source, "https://example.invalid/nmt")
    )
    magics: list[tuple[str, str]] = []

    class Install:
        def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> None:
            magics.append((name, line))

    monkeypatch.setitem(sys.modules, "nmt", None)
    with pytest.raises(SystemExit):
        exec(compile(source, path.name, "exec"), {"get_ipython": Install})
    assert magics[0] == ("pip", "install --quiet --upgrade pip"), magics
    assert magics[1][0] == "pip" and "nmt-attention @ git+" in magics[1][1], magics


SETTING_LINE = "CLASS = nmt.class_setting()"


def setup_cell(path: Path) -> str:
    """The notebook's setup cell: the code cell that reads the class setting."""
    return next(
        c.source for c in nbformat.read(path, as_version=4).cells if SETTING_LINE in c.source and c.cell_type == "code"
    )


def test_every_notebook_sets_the_class_time_limit_with_the_same_lines_and_reports_each_runs_end():
    """The class setting is read in one block of the setup cell, the same in every notebook, and
    every nmt.train call of a notebook passes its limit and says what ended the run.  Notebook 07
    trains only through nmt.compare, which runs every run for its updates (no time limit).  No
    notebook reads an environment variable of its own."""
    blocks = {}
    for path in NOTEBOOKS:
        setup = setup_cell(path)
        blocks[path.name] = setup[setup.index(SETTING_LINE) : setup.index("def report_stop")]
        assert "NMT_" not in nbformat.read(path, as_version=4).cells[0].source + setup, path.name
    assert len(set(blocks.values())) == 1, "the class setting's lines differ between notebooks"
    for path in NOTEBOOKS:
        code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        calls = re.findall(r"^( *)run = nmt\.train\((.*)\)\n\1report_stop\(run\)$", code, re.M)
        assert calls or "nmt.compare(" in code, f"{path.name}: no training run"
        assert len(calls) == code.count("= nmt.train("), f"{path.name}: a training run without report_stop"
        for _, arguments in calls:
            assert "**LIMIT" in arguments or "settings" in arguments, f"{path.name}: {arguments}"
        assert all("**LIMIT" in line for line in code.splitlines() if line.strip().startswith("settings = {")), (
            path.name
        )


def run_setup(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], folder: Path, **fields: object
) -> dict:
    """Notebook 01's setup cell run in ``folder``, whose nmt-class.yaml holds ``fields``, as a kernel runs it; its names."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nmt-class.yaml").write_text(yaml.safe_dump(fields), encoding="utf-8")
    monkeypatch.chdir(folder)
    names: dict = {}
    exec(compile(setup_cell(NOTEBOOKS[0]), "setup", "exec"), names)
    names["printed"] = capsys.readouterr().out
    return names


def test_nmt_class_minutes_caps_each_class_run_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    import nmt

    limited = run_setup(monkeypatch, capsys, tmp_path / "limited", setting="class", minutes=7.5)
    assert limited["LIMIT"] == {"train.time_budget_min": 7.5}
    assert "stops after its updates or after 7.5 minutes" in limited["printed"], limited["printed"]
    unlimited = run_setup(monkeypatch, capsys, tmp_path / "unlimited")
    assert unlimited["LIMIT"] == {"train.time_budget_min": None}, "the updates alone, not the class config's cap"
    assert "minutes: N in the setting would also stop it" in unlimited["printed"]
    assert run_setup(monkeypatch, capsys, tmp_path / "smoke", setting="smoke", minutes=7.5)["LIMIT"] == {}
    for bad in ("ten", 0, -3):
        with pytest.raises(nmt.UserError, match="minutes"):
            run_setup(monkeypatch, capsys, tmp_path / "bad", setting="class", minutes=bad)

    # a run the time limit ended, and one its updates ended, each said in one line
    monkeypatch.chdir(tmp_path / "limited")
    tiny = {
        "runs_dir": "runs",
        "data": {
            "corpus": "synthetic",
            "src": "en",
            "tgt": "de",
            "synthetic_sizes": {"train": 200, "valid": 10, "test": 10},
        },
        "model": {"emb_size": 16, "hidden_size": 16},
        "train": {"max_tokens": 500, "max_steps": 4, "valid_every": 2, "tensorboard": False},
    }
    timed = nmt_train(tiny, {"name": "timed", "train.time_budget_min": 1e-6})
    counted = nmt_train(tiny, {"name": "counted"})
    capsys.readouterr()
    limited["report_stop"](timed)
    limited["report_stop"](counted)
    timed_line, counted_line = capsys.readouterr().out.splitlines()
    assert timed_line.startswith("timed: stopped by the time limit (the setting's minutes) at update 1 of 4, after ")
    assert counted_line.startswith("counted: stopped by its updates at update 4 of 4, after "), counted_line


def nmt_train(config: dict, overrides: dict):
    import nmt

    return nmt.train(config, overrides, progress=False)


def test_notebook_02_titles_each_matrix_with_the_validation_of_the_checkpoint_it_draws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The panels draw best.pt's attention; their BLEU and update are that checkpoint's validation,
    not the last one's (in the class setting best.pt was update 174 and the titles said update 180's BLEU)."""
    import nmt

    for key, value in smoke_environment().items():
        monkeypatch.setenv(key, value)
    smoke_folder(tmp_path)
    path = next(p for p in NOTEBOOKS if p.name.startswith("02_"))
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import json\nprint(json.dumps({n: [steps[n], bleu[n]] for n in bleu}))"))
    NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    shown = json.loads(nb.cells[-1].outputs[0].text)
    assert len(shown) == 5
    for name, (step, bleu) in shown.items():
        folder = tmp_path / "runs" / "smoke" / ("notebook_energy_" + name.replace(" ", "_").replace("-", "_").lower())
        drawn = nmt.load(folder).step
        assert step == drawn, f"{name}: titled with update {step}, draws update {drawn}"
        assert bleu == next(row["bleu"] for row in nmt.Run.open(folder).history if row["step"] == drawn), name
    titles = [c.source for c in nb.cells if "plot_attention" in c.source]
    assert titles and "steps[name]" in titles[0] and "bleu[name]" in titles[0]


def test_notebook_08_reads_the_rwth_gold_in_the_class_setting_or_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    """The class setting's gold cell, which CI never runs (its clone has no ../shared/): without the
    archive it stops in one line naming ``nmt data fetch-alignments`` and the setting's alignments; after that command
    (from a local copy, where this checkout has one) it reads the 508 RWTH pairs with no variable set and
    finds the pair it draws.  The cell alone, as a kernel runs it: nothing trains."""
    import tarfile
    import tempfile

    import nmt

    path = next(p for p in NOTEBOOKS if p.name.startswith("08_"))
    cell = next(c.source for c in nbformat.read(path, as_version=4).cells if "SMOKE_GOLD = [" in c.source)
    named = nmt.ClassSetting(alignments=tmp_path)
    names = {"tarfile": tarfile, "tempfile": tempfile, "Path": Path, "nmt": nmt, "SMOKE": False, "CLASS": named}
    with pytest.raises(FileNotFoundError, match="nmt class setting --alignments DIR") as missing:
        exec(compile(cell, "gold", "exec"), dict(names))
    assert str(tmp_path) in str(missing.value) and "\n" not in str(missing.value)
    assert "nmt data fetch-alignments" in str(missing.value)
    shared = REPO.parent / "shared" / "data" / "alignments"
    if not (shared / "DeEnGoldAlignment.tar.gz").is_file():
        pytest.skip("no RWTH archive in ../shared/data/alignments/ beside this checkout")
    # where `nmt data fetch-alignments --mirror DIR` run in the notebook's folder puts it: nothing to set
    names["CLASS"] = nmt.ClassSetting()
    monkeypatch.chdir(tmp_path)
    assert run_cli(["data", "fetch-alignments", "--mirror", str(shared)], capsys)[0] == 0
    exec(compile(cell, "gold", "exec"), names)
    assert Path(str(names["alignments_archive"]())).resolve().parent == (tmp_path / "data" / "alignments").resolve()
    assert len(names["sources"]) == len(names["targets"]) == len(names["gold"]) == 508
    assert names["targets"][names["PAIR"]] == "We are voting for the report ."


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_runs_in_its_smoke_setting(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Twice in one folder, as a class re-runs it: the second run retrains its runs with
    overwrite=True, which refuses a run folder holding anything training did not write, so the
    notebook keeps its reports out of its runs; and its smoke runs never share a folder with the
    class setting's (runs_dir runs/smoke), which a re-run in the smoke setting would delete."""
    for key, value in smoke_environment().items():
        monkeypatch.setenv(key, value)  # the kernel inherits this process's environment
    smoke_folder(tmp_path)
    class_run = tmp_path / "runs" / "notebook_first_model" / "notes.txt"  # a class-setting run's name
    class_run.parent.mkdir(parents=True)
    class_run.write_text("the 9-minute class model")
    lecturers = REPO / "notebooks" / "source" / path.name  # an exercise runs answered, as its lecturer's copy
    for _ in range(2):
        nb = nbformat.read(lecturers if lecturers.is_file() else path, as_version=4)
        client = NotebookClient(
            nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        )
        client.execute()  # raises CellExecutionError, with the cell and its traceback, when a cell fails
    assert class_run.read_text() == "the 9-minute class model"
    assert not (tmp_path / "evaluations").exists(), "the smoke setting writes only under runs/smoke"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "every cell ran"
    assert any(o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in code[-1].outputs)
    assert nb.cells[-1].cell_type == "markdown", "a notebook ends in one sentence on its figure"
    assert (tmp_path / "runs").is_dir() and (tmp_path / "data").is_dir(), "runs and corpora go to the temporary folder"


def test_notebook_07_with_a_lecturers_pack_trains_only_the_students_arm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """``nmt class pack --smoke`` in the notebooks' folder: notebook 07 finds class-pack/, reuses the pack's
    Bahdanau runs (their checkpoints untouched) and trains the student's energy at the pack's three seeds."""
    for key, value in smoke_environment().items():
        monkeypatch.setenv(key, value)
    smoke_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert run_cli(["class", "pack", "--smoke", "--no-progress"], capsys)[0] == 0
    pack = tmp_path / "class-pack"
    baseline = {
        seed: (pack / "runs" / f"bahdanau_s{seed}" / "checkpoints" / "best.pt").read_bytes() for seed in (1, 2, 3)
    }
    nb = nbformat.read(REPO / "notebooks" / "source" / "07_your_own_attention.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "lecturer's pack class-pack: bahdanau at seeds 1, 2, 3, 20 updates each" in printed, printed
    for seed, weights in baseline.items():
        assert (pack / "runs" / f"bahdanau_s{seed}" / "checkpoints" / "best.pt").read_bytes() == weights, seed
        assert (pack / "runs" / f"scaled_cosine_s{seed}" / "checkpoints" / "best.pt").is_file(), seed
    report = json.loads(
        (tmp_path / "runs" / "smoke" / "evaluations" / "notebook_own_attention" / "report.json").read_text()
    )
    assert [row["seeds"] for row in report["variants"]] == [[1, 2, 3], [1, 2, 3]]
