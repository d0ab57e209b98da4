"""Raw data behind every published table: each results section with a table names its JSON lines in
docs/measurements/ (a file that exists) or says plainly that it is unrecorded; the comparison
pages' tables are exactly what docs_build/pairs_table.py prints from their JSON lines, and the
alignment page's AER tables what docs_build/aer_table.py prints from theirs, and the equal-time
table what docs_build/equal_time_table.py prints."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "docs" / "results.md", REPO / "docs" / "pairs.md"]
MEASUREMENT = re.compile(r"docs/measurements/[\w.\-]+\.jsonl")


def sections(page: Path) -> list[tuple[str, str]]:
    """(heading, text) of every ## and ### section of ``page``, code blocks left out."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    parts = re.split(r"\n(?=#{2,3} )", text)
    return [(part.splitlines()[0], part) for part in parts if part.startswith("#")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_results_table_names_its_measurement_file_or_says_it_is_unrecorded(page: Path) -> None:
    missing, absent = [], []
    for heading, text in sections(page):
        if not any(line.startswith("|") for line in text.splitlines()):
            continue
        files = MEASUREMENT.findall(text)
        if not files and "unrecorded" not in text:
            missing.append(heading)
        absent += [f for f in files if not (REPO / f).is_file()]
    assert not missing, f"{page.name}: tables without a measurement file or 'unrecorded': {missing}"
    assert not absent, f"{page.name} names measurement files that do not exist: {absent}"


@pytest.mark.parametrize(
    "page,measurements",
    [
        (  # the four caption pairs, every seed on the CPU at one code version, the H100's seeds set against them
            "pairs.md",
            "pairs_2026-11-28_cpu.jsonl pairs_2026-11-30_cpu.jsonl --pairs de-en,en-de,fr-en,cs-en "
            "--against docs/measurements/pairs_2026-11-27_h100.jsonl",
        ),
        ("pairs.md", "pairs_2026-11-27_h100.jsonl"),  # the H100 sitting's seeds 1-3, a set of their own
        (  # every comparison of the page side by side, each on the one machine: pools, heterogeneity, widest family
            "pairs.md",
            "pairs_2026-11-28_cpu.jsonl pairs_2026-11-30_cpu.jsonl pairs_europarl_2026-11-30_cpu.jsonl "
            "pairs_europarl_rerun_2026-11-30_cpu.jsonl pairs_tatoeba_2026-11-30_cpu.jsonl --device 'AMD EPYC'",
        ),
        (  # the five arms on the Europarl sample on one machine, the first sitting's other machine as a block
            "pairs.md",
            "pairs_europarl_2026-11-30_cpu.jsonl pairs_europarl_rerun_2026-11-30_cpu.jsonl --device 'AMD EPYC' "
            "--against docs/measurements/pairs_europarl_2026-11-30_cpu.jsonl --against-device 'Intel(R) Xeon(R) Processor'",
        ),
        ("pairs.md", "pairs_tatoeba_2026-11-30_cpu.jsonl"),  # the five arms on Tatoeba de-en, one device
        ("adding_an_attention.md", "cosine_2026-11-28_cpu.jsonl"),  # the worked comparison of a user's attention
        ("results.md", "every_variant_2026-11-28_cpu.jsonl"),  # the lecture variants, seeds 4-6, one pair
        ("results.md", "normalize_2026-11-29_cpu.jsonl"),  # sparsemax and 1.5-entmax against the softmax
        ("results.md", "state_2026-11-29_cpu.jsonl"),  # coverage, local-p and local-m against Bahdanau
        ("adding_an_attention.md", "europarl_state_2026-11-29_cpu.jsonl"),  # coverage, 1.5-entmax on Europarl
        ("results.md", "protocol_2026-11-29_cpu.jsonl"),  # the protocol's built-ins, one code version
    ],
)
def test_comparison_tables_are_what_pairs_table_prints_from_their_json_lines(page: str, measurements: str) -> None:
    assert_rows_printed_by("pairs_table.py", page, measurements)


def test_the_equal_time_table_is_what_its_script_prints_from_its_json_lines() -> None:
    """The RNN against the Transformer at equal time on Tatoeba: runs, arms and learning curves."""
    assert_rows_printed_by("equal_time_table.py", "results.md", "equal_time_tatoeba_2026-11-30_cpu.jsonl")


@pytest.mark.parametrize(
    "measurements",
    [
        "align_rwth_2026-11-28_cpu.jsonl",
        "align_rwth_pairs_2026-11-28_cpu.jsonl",
        "align_rwth_every_variant_2026-11-28_cpu.jsonl",
        "align_rwth_europarl_2026-11-29_cpu.jsonl",
        "align_rwth_europarl_variants_2026-11-30_cpu.jsonl",
        "align_rwth_protocol_2026-11-29_cpu.jsonl",
    ],
)
def test_alignment_tables_are_what_aer_table_prints_from_their_json_lines(measurements: str) -> None:
    """One of the page's AER tables is exactly the printed one: no row missing, none added or left
    stale by hand (a quoted published figure aside, which is not a measurement)."""
    rows = assert_rows_printed_by("aer_table.py", "alignment.md", measurements)
    text = (REPO / "docs" / "alignment.md").read_text(encoding="utf-8")
    tables = [
        [line for line in block.splitlines() if not set(line) <= set("|-: ") and not line.startswith("| published")]
        for block in re.findall(r"(?m)^\| aligner \| attention read \|.*\n(?:\|.*\n?)*", text)
    ]
    assert rows in tables


@pytest.mark.parametrize(
    "page,measurements",
    [
        ("results.md", "state_effects_2026-11-29_cpu.jsonl"),
        ("adding_an_attention.md", "europarl_state_effects_2026-11-29_cpu.jsonl"),
        ("results.md", "protocol_effects_2026-11-29_cpu.jsonl"),
    ],
)
def test_the_coverage_effects_tables_are_what_their_script_prints(page: str, measurements: str) -> None:
    """The repeated n-grams and length ratios on a page are coverage_effects.py --table of their lines."""
    printed = subprocess.run(
        [sys.executable, "scripts/coverage_effects.py", "--table", f"docs/measurements/{measurements}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    rows = [line for line in printed.strip().splitlines() if line.startswith("|")]
    assert rows and all(line in text for line in rows)


def assert_rows_printed_by(script: str, page: str, measurements: str) -> list[str]:
    """Every table row ``docs_build/script`` prints of ``measurements`` (file names, space-separated)
    stands in ``page``, which names the files; returns the printed rows (header first)."""
    names, _, options = measurements.partition(" --")  # "a.jsonl --pairs de-en": files, then shell-quoted options
    files = [f"docs/measurements/{name}" for name in names.split()]
    printed = subprocess.run(
        [sys.executable, f"docs_build/{script}", *files, *(shlex.split(f"--{options}") if options else [])],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    assert all(file in text for file in files)
    rows = [line for line in printed.splitlines() if line.startswith("|") and not set(line) <= set("|-: ")]
    assert rows and [row for row in rows if row not in text] == []
    return rows
