"""The report pages' HTML: Markdown's inline code, bold and links converted, everything else escaped."""

from __future__ import annotations

import pandas as pd

from unlearning.report.page import Page


def test_inline_markdown_becomes_html_and_the_rest_is_escaped(tmp_path):
    page = Page("T").text("**Decentralized client removal**: see [the report](sglu/index.md), `x < y` & more")
    page.table(pd.DataFrame({"status": ["**violated**: 1 < 2"]}))
    html = page.html(tmp_path)
    assert "<strong>Decentralized client removal</strong>" in html and "**" not in html
    assert "<a href='sglu/index.html'>the report</a>" in html and "<code>x &lt; y</code> &amp; more" in html
    assert "<strong>violated</strong>: 1 &lt; 2" in html
