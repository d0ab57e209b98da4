"""The one tour: README.md and the getting-started page run the same experiment, configs/tour.yaml,
which keeps everything it writes under tour/ (ignored by git), and the page shows that file as it is."""

from __future__ import annotations

import re
from pathlib import Path

from nmt import config as C

REPO = Path(__file__).resolve().parents[2]
TOUR = REPO / "configs" / "tour.yaml"


def test_the_getting_started_page_shows_the_tour_config_as_it_is() -> None:
    page = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    shown = re.search(r"### 1\. A config\n.*?```yaml\n(?P<body>.*?)```", page, re.DOTALL)
    assert shown is not None, "the getting-started page no longer shows the tour's config"
    assert shown["body"] == TOUR.read_text(encoding="utf-8").split("\n", 1)[1]  # all but the schema line


def test_the_tour_writes_under_one_ignored_folder_and_both_pages_use_it() -> None:
    tour = C.load(TOUR)
    assert Path(tour.runs_dir).parts[0] == Path(tour.data.root).parts[0] == "tour"
    assert "/tour/" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    for page in ("README.md", "docs/getting-started.md"):
        text = (REPO / page).read_text(encoding="utf-8")
        assert "--config configs/tour.yaml" in text and "tiny.yaml" not in text and " runs/tour" not in text, page
