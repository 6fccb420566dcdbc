"""Take the README's picture again: the Expression explorer on the slide example at step 9, presentation mode,
in headless Debian Chromium at 1400x900 (this checkout's app, served on a free loopback port), saved as a
small PNG (128 colours).

    python tools/readme_picture.py                    # writes docs/expression_explorer.png
    python tools/readme_picture.py --out /tmp/p.png   # elsewhere
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
URL_PATH = "/Expression_explorer?step=9&present=1"
SIZE = (1400, 900)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "expression_explorer.png")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    from conftest import CHROMIUM, CHROMIUM_ARGS, _wait_idle, streamlit_server   # the browser tests' harness
    from PIL import Image
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.png"
        with streamlit_server("app/Home.py", Path(tmp) / "server.log") as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": SIZE[0], "height": SIZE[1]})
                page.set_default_timeout(120_000)
                page.goto(url + URL_PATH)
                _wait_idle(page, 180)
                page.screenshot(path=str(raw))
            finally:
                browser.close()
        image = Image.open(raw).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT,
                                                        dither=Image.Dither.NONE)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        image.save(args.out, optimize=True)
    print(f"{args.out}: {SIZE[0]}x{SIZE[1]}, {args.out.stat().st_size / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
