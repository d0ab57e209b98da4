"""The executed copies of the notebooks on the site (docs/notebooks/): each is its notebook's cells
run in a named setting, and docs_build/execute_notebooks.py cleans what they show (progress bars,
the paths of the machine that ran them)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "docs_build"))
import execute_notebooks  # after the path insert

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
COPIES = [REPO / "docs" / "notebooks" / path.name for path in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_site_shows_an_executed_copy_of_each_notebook_labelled_with_its_setting(path: Path):
    """docs/notebooks/ holds what docs_build/execute_notebooks.py wrote: the notebook's own cells (so an
    edited notebook needs a new copy), a first cell naming the setting, date, command and machine.
    A copy's command is as it ran at the commit it names: copies made before issue 59 name the
    script's old place, scripts/."""
    copy = nbformat.read(REPO / "docs" / "notebooks" / path.name, as_version=4)
    run = copy.metadata["nmt_execution"]
    assert run["setting"] in ("smoke", "class")
    assert run["command"].startswith(("python docs_build/execute_notebooks.py", "python scripts/execute_notebooks.py"))
    label = copy.cells[0].source
    assert f"**{run['setting']} setting**" in label and run["date"] in label and run["machine"] in label, label
    if run["setting"] == "smoke":
        assert "say nothing about translation" in label
    source = nbformat.read(path, as_version=4)
    assert [c.source for c in copy.cells[1:]] == [c.source for c in source.cells], f"run {run['command']} again"


PROGRESS_BAR = re.compile(r"\d+%\||\d ?(?:it|batch|update)/s\b|\ds/(?:it|batch|update)\b")
"""A tqdm bar's marks: ``44%|████▍ | 77/174 [00:46<02:45,  1.71s/batch]``."""
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|tmp|Users|private|mnt|scratch|var/folders)/")
"""An absolute path of the machine that executed a notebook (``/work/shared/data/multi30k``, ``/tmp/...``)."""


def output_texts(output: dict) -> list[str]:
    """Every text an output shows: a stream's, each text/* of a display or result, an error's."""
    texts = [output.get("text", "")] if output["output_type"] == "stream" else []
    texts += [value for key, value in output.get("data", {}).items() if key.startswith("text/")]
    if output["output_type"] == "error":
        texts += [output["evalue"], *output["traceback"]]
    return [text if isinstance(text, str) else "".join(text) for text in texts]


@pytest.mark.parametrize("path", COPIES, ids=lambda p: p.stem)
def test_a_site_copy_shows_no_progress_bars_and_no_path_of_the_machine_that_ran_it(path: Path):
    """The copies once carried 1,200-2,000 lines of tqdm output each and the data mirror's /work/...
    path: docs_build/execute_notebooks.py cleans them (``--clean-only`` for copies already written)."""
    copy = nbformat.read(path, as_version=4)
    for i, cell in enumerate(copy.cells):
        texts = [text for output in cell.get("outputs", []) for text in output_texts(output)]
        bars = [line for text in texts for line in re.split(r"[\r\n]", text) if PROGRESS_BAR.search(line)]
        assert len(bars) <= 3, f"{path.name} cell {i}: {len(bars)} lines of progress bars, e.g. {bars[0]!r}"
        for text in texts:
            found = MACHINE_PATH.search(text)
            assert not found, f"{path.name} cell {i}: {text[max(found.start() - 40, 0) : found.end() + 40]!r}"
    for text in (copy.cells[0].source, json.dumps(copy.metadata)):
        assert not MACHINE_PATH.search(text), text


def executed(*outputs: dict) -> nbformat.NotebookNode:
    """A notebook of one code cell with these outputs, as nbclient leaves it."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("run = nmt.train(...)", execution_count=1))
    nb.cells[0].outputs = [nbformat.from_dict(output) for output in outputs]
    return nb


def stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def test_cleaning_keeps_what_cells_printed_and_drew_and_one_line_per_training_run(tmp_path: Path):
    workdir = tmp_path / "work"
    figure = {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
    }
    nb = executed(
        stream("stderr", "10:59:18 INFO no prepared corpus in data/multi30k/de-en; preparing it now\n"),
        stream(
            "stderr",
            "10:59:18 INFO Multi30k test2017: no test_2017_flickr.de.gz in mirror /work/shared/data/m30k; skipping\n",
        ),
        stream(
            "stderr",
            "10:59:21 INFO model: 6,272,320 parameters; 29000 training pairs, 174 batches per full epoch, 1000 updates planned\n",
        ),
        stream("stderr", "\repoch 1:   0%|          | 0/174 [00:00<?, ?batch/s]"),
        stream("stderr", "\repoch 1:   1%|          | 1/174 [00:02<06:35,  2.29s/batch, loss=8.988, lr=2.00e-03]"),
        stream("stderr", "\repoch 1:  87%|████████▋ | 152/174 [01:25<00:13,  1.69batch/s, loss=3.513]"),
        stream("stderr", "11:01:06 INFO valid step 174: loss 3.309 ppl 27.36 BLEU 12.77 chrF 28.49 (best)\n"),
        stream("stderr", "11:01:06 INFO   src: Eine Gruppe\n  ref: A group\n  hyp: A group of men\n"),
        stream("stderr", "11:01:07 WARNING the learning rate fell to its floor\n  at step 174\n"),
        stream("stderr", f"{workdir}/x.py:3: UserWarning: something odd\n"),
        stream("stderr", "\repoch 2:  44%|████▍     | 77/174 [00:46<02:45,  1.71s/batch]"),
        stream("stderr", "\rtraining:  44%|████▍     | 132/300 [02:46<03:45,  1.71s/update, epoch=1, loss=4.302]"),
        stream("stderr", "11:09:18 INFO valid step 1000: loss 1.796 ppl 6.02 BLEU 35.95 chrF 57.29 (best)\n"),
        stream("stderr", "\r                                            "),
        stream("stderr", "\r"),
        stream("stdout", "update   174  validation loss 3.309\n"),
        stream("stdout", f"update  1000  validation loss 1.796 in {workdir}/runs/first, data in /tmp/nmt-xyz/data.\n"),
        figure,
        stream(
            "stderr",
            "23:59:30 INFO model: 63,596 parameters; 600 training pairs, 15 batches per full epoch, 20 updates planned\n",
        ),
        stream("stderr", "00:01:00 INFO valid step 20: loss 4.094 ppl 60.00 BLEU 0.00 chrF 0.00\n"),
        stream("stdout", "second run done\n"),
    )
    execute_notebooks.clean(nb, execute_notebooks.machine_paths(workdir))
    outputs = nb.cells[0].outputs
    assert [(o.output_type, o.get("name")) for o in outputs] == [
        ("stream", "stderr"),
        ("stream", "stdout"),
        ("display_data", None),
        ("stream", "stderr"),
        ("stream", "stdout"),
    ]
    assert outputs[0].text.splitlines() == [
        "11:01:07 WARNING the learning rate fell to its floor",
        "  at step 174",
        "./x.py:3: UserWarning: something odd",
        "[training] 6,272,320 parameters, 1000 updates planned; 9.9 min to the last validation, "
        "step 1000: loss 1.796 ppl 6.02 BLEU 35.95 chrF 57.29 (best)",
    ]
    assert (
        outputs[1].text
        == "update   174  validation loss 3.309\nupdate  1000  validation loss 1.796 in ./runs/first, data in …/data.\n"
    )
    assert outputs[2] == nbformat.from_dict(figure)
    assert (
        outputs[3].text
        == "[training] 63,596 parameters, 20 updates planned; 1.5 min to the last validation, step 20: loss 4.094 ppl 60.00 BLEU 0.00 chrF 0.00\n"
    )
    assert outputs[4].text == "second run done\n"
    once = nbformat.writes(nb)
    execute_notebooks.clean(nb, execute_notebooks.machine_paths(tmp_path / "elsewhere"))
    assert nbformat.writes(nb) == once, "a cleaned copy cleans to itself"


def test_clean_only_cleans_the_copies_in_place_and_runs_nothing(tmp_path: Path):
    nb = executed(
        stream("stderr", "\repoch 1:   1%|          | 1/174 [00:02<06:35,  2.29s/batch]"), stream("stdout", "42\n")
    )
    nb.metadata["nmt_execution"] = {
        "command": "python docs_build/execute_notebooks.py --setting smoke --workdir /tmp/w"
    }
    nbformat.write(nb, tmp_path / NOTEBOOKS[0].name)
    execute_notebooks.main(["--clean-only", "--out", str(tmp_path), NOTEBOOKS[0].stem[:2]])
    cleaned = nbformat.read(tmp_path / NOTEBOOKS[0].name, as_version=4)
    assert [o.get("text") for o in cleaned.cells[0].outputs] == ["42\n"]
    assert cleaned.metadata["nmt_execution"]["command"].endswith("--workdir …/w")
    with pytest.raises(SystemExit):
        execute_notebooks.main(["--out", str(tmp_path)])  # neither --setting nor --clean-only


def test_the_repository_goes_first_on_the_kernels_path_once_however_many_notebooks_run():
    import os

    repo = str(execute_notebooks.REPO)
    once = execute_notebooks.with_repository(os.pathsep.join(["/elsewhere", ""]))
    assert once == os.pathsep.join([repo, "/elsewhere"])
    assert execute_notebooks.with_repository(once) == once  # a second notebook adds nothing
    assert execute_notebooks.with_repository(None) == repo
