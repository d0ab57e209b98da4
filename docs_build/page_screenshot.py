"""A PNG of the `nmt serve` page after translating one sentence (the README's screenshot).

Starts ``nmt serve`` on a free loopback port with the given checkpoints, opens the page in the
system's headless Chromium (``make test-browser`` installs it), types ``--text``, waits for
every model's result and saves the window.

Command behind docs/serve_page.png::

    python docs_build/page_screenshot.py --out docs/serve_page.png --width 1950 --height 1250 \\
        --checkpoint bahdanau=runs/compare_m30k_600/bahdanau_s1/checkpoints/best.pt \\
        --checkpoint luong_general=runs/compare_m30k_600/luong_general_s1/checkpoints/best.pt \\
        --checkpoint qkv=runs/compare_m30k_600/qkv_s1/checkpoints/best.pt \\
        --text "Ein Mann fährt mit dem Fahrrad die Straße entlang."
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Optional

# nmt serve as a child process is the benchmarks' helper (scripts/_serve_process.py, bench_serve.py's too):
# shared from there rather than copied here.
sys.path.append(str(Path(__file__).resolve().parents[1] / "scripts"))

from _chromium import headless_chromium, missing, translate_on_page
from _serve_process import server_process


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkpoint",
        action="append",
        required=True,
        help="PATH or NAME=PATH, as for nmt serve; repeat for side-by-side models.",
    )
    parser.add_argument("--text", required=True, help="The sentence to type.")
    parser.add_argument("--out", type=Path, required=True, help="Where to write the PNG.")
    parser.add_argument("--width", type=int, default=1500, help="Window width in pixels (default: 1500).")
    parser.add_argument("--height", type=int, default=1100, help="Window height in pixels (default: 1100).")
    args = parser.parse_args(argv)
    if (why := missing()) is not None:
        print(f"page_screenshot.py: error: {why}", file=sys.stderr)
        sys.exit(2)
    server_args = [a for path in args.checkpoint for a in ("--checkpoint", path)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        server_process(server_args, Path(tmp) / "server.log") as url,
        headless_chromium(args.width, args.height) as driver,
    ):
        translate_on_page(driver, url, args.text)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(args.out))
    print(args.out)


if __name__ == "__main__":
    main()
