"""The report pages in a real browser (issue 40, item 5): headless Chromium (Debian's `chromium` package) opens the
tiny run's front page and a paper's page; every figure loads, every link leads to a file, and no table makes the
page wider than the window; the common ground's decentralized tables show every column, their rows a few lines.
Skipped where no Chromium is installed."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=(
    "no Chromium installed: scripts/bootstrap.sh installs it as root on Debian (scripts/get_browser.sh); elsewhere put "
    "chromium or google-chrome on PATH"))
WIDTH = 1280
# run after the page has loaded: what the browser made of it, written into the DOM that --dump-dom prints
CHECK = """<script>window.addEventListener('load', function () {
  var images = Array.from(document.images);
  document.body.setAttribute('data-check', JSON.stringify({
    images: images.length,
    broken: images.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).length,
    links: Array.from(document.links).map(function (a) { return a.href; }),
    tables: Array.from(document.querySelectorAll('div.t')).map(function (d) {
      var h = d.previousElementSibling;
      while (h && h.tagName !== 'H2') { h = h.previousElementSibling; }
      var rows = Array.from(d.querySelectorAll('tr')).map(function (r) { return r.getBoundingClientRect().height; });
      return {section: h ? h.textContent : '', overflow: d.scrollWidth > d.clientWidth,
              tallest: Math.max.apply(null, rows), line: parseFloat(getComputedStyle(d).fontSize) * 1.2}; }),
    page_width: document.documentElement.scrollWidth, window_width: window.innerWidth}));
});</script>"""


def rendered(page: Path, tmp_path: Path) -> dict:
    """The page as headless Chromium renders it at WIDTH pixels: its copy in `tmp_path` with CHECK added and a
    <base> at the page's own folder, so that its relative links resolve as from the page."""
    text = page.read_text()
    base = f"<head><base href='{page.parent.resolve().as_uri()}/'>"
    copy = tmp_path / f"check-{page.parent.name}.html"
    copy.write_text(text.replace("<head>", base, 1).replace("</body>", CHECK + "</body>", 1))
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={WIDTH},900",
                          "--virtual-time-budget=5000", "--dump-dom", copy.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    found = re.search(r'data-check="([^"]*)"', dom)
    assert found, f"{page}: the check script did not run in Chromium"
    return json.loads(html.unescape(found[1]))


@pytest.mark.parametrize("page", ["index.html", "common_ground/index.html", "cdfl/index.html"])
def test_report_page_renders_in_chromium(tiny_run, tmp_path, page):
    path = tiny_run / "reports" / page
    r = rendered(path, tmp_path)
    assert r["images"] == path.read_text().count("<img") and r["broken"] == 0  # every figure decodes
    files = [Path(unquote(urlparse(link).path)) for link in r["links"] if link.startswith("file:")]
    assert all(f.is_file() for f in files), [str(f) for f in files if not f.is_file()]
    assert r["page_width"] <= r["window_width"] == WIDTH  # tables scroll in their box, the page does not widen


def test_the_common_grounds_decentralized_tables_fit_the_window(tiny_run, tmp_path):
    """issue 56, item 6: at 1,280 px each decentralized view shows all its columns (no horizontal scroll) and no row
    is more than three lines tall (the long verdicts are notes under the table, not cells)."""
    r = rendered(tiny_run / "reports" / "common_ground" / "index.html", tmp_path)
    views = [t for t in r["tables"] if t["section"].startswith("Decentralized")]
    assert len(views) >= 6, [t["section"] for t in r["tables"]]
    for t in views:
        assert not t["overflow"], t
        assert t["tallest"] <= 3 * t["line"] + 8, t
