"""The report pages: Markdown's inline code, bold and links converted in HTML, everything else escaped; tables
whose rows keep their cells."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest

from conftest import ROOT
from unlearning.report.page import Page, rewrite_section


def test_inline_markdown_becomes_html_and_the_rest_is_escaped(tmp_path):
    page = Page("T").text("**Decentralized client removal**: see [the report](sglu/index.md), `x < y` & more")
    page.table(pd.DataFrame({"status": ["**violated**: 1 < 2"]}))
    html = page.html(tmp_path)
    assert "<strong>Decentralized client removal</strong>" in html and "**" not in html
    assert "<a href='sglu/index.html'>the report</a>" in html and "<code>x &lt; y</code> &amp; more" in html
    assert "<strong>violated</strong>: 1 &lt; 2" in html


def test_a_long_missing_reason_is_shown_once_as_a_note(tmp_path):
    reason = "data/raw/MNIST/raw/train-images-idx3-ubyte not found; needs a network: run prepare"
    df = pd.DataFrame({"cell": ["a", "b", "c"], "status": [f"missing: {reason}", f"missing: {reason}", "within"]})
    page = Page("t").table(df).table(df.assign(status="missing: short"))
    md = page.markdown()
    assert md.count(reason) == 1 and md.count("missing: see note 1") == 2 and "missing: short" in md
    assert md.rstrip().endswith(f"- note 1: {reason}")
    assert md.count("## Notes: why cells are missing") == 1
    page.write(tmp_path)
    html = (tmp_path / "index.html").read_text()
    assert html.count(reason) == 1 and "<div class='t'><table" in html
    assert df.status.iloc[0] == f"missing: {reason}"  # the frame (and so its CSV) keeps the reason


def test_the_front_page_names_its_section_columns_in_words(tmp_path):
    from unlearning.report.index import Summary, write_index

    table = pd.DataFrame({"method": ["PDUDT"], "memorisation_gap": [0.01], "rmia_tpr_at_1pct_fpr": [0.02]})
    write_index([Summary("common_ground", "Common ground", "h", "yes", {}, [("table", (table, ".4g"))])], "quick",
                tmp_path)
    md = (tmp_path / "index.md").read_text()
    assert "memorisation gap (forget - test)" in md and "RMIA TPR at 1 % FPR" in md and "memorisation_gap" not in md


def test_every_front_page_count_links_its_list_of_cells(tmp_path):
    """Each count of the first table links the page `counted`, where that paper's cells of that kind are listed
    (as many as the count), in Markdown and in HTML (the anchor kept, .md turned to .html)."""
    from unlearning.report.index import Summary, write_index

    (tmp_path / "p").mkdir()
    pd.DataFrame({"cell": ["a", "b", "c"], "value": [1, 2, 3],
                  "status": ["within", "outside", "missing: no data"]}).to_csv(tmp_path / "p" / "t.csv", index=False)
    counts = {"within": 1, "outside": 1, "missing": 1}
    write_index([Summary("p", "Paper", "h", "no", counts, tables=("t",))], "quick", tmp_path)
    md, html = (tmp_path / "index.md").read_text(), (tmp_path / "index.html").read_text()
    for name in counts:
        assert f"[1](counted.md#p-{name})" in md and f"<a href='counted.html#p-{name}'>1</a>" in html
    counted = (tmp_path / "counted.md").read_text()
    assert '<a id="p-outside"></a>' in counted and "## Paper: outside (1)" in counted
    assert "cell b, value 2" in counted and "missing: no data" in counted
    assert "id='p-within'" in (tmp_path / "counted.html").read_text()


def _cells(line: str) -> int:
    """The cells of a Markdown table row: split at every "|" not escaped."""
    return len(re.split(r"(?<!\\)\|", line.strip().strip("|")))


def test_a_bar_inside_a_cell_stays_in_its_cell():
    """issue 69: "uninformative: |ours - paper| = 1.8 lies within ..." split CDFL's status cells in three."""
    md = Page("t").table(pd.DataFrame({"value": [1.0], "status": ["uninformative: |ours - paper| = 1.8"]})).markdown()
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert len(rows) == 3 and {_cells(r) for r in rows} == {2} and "\\|ours - paper\\|" in rows[2]


def test_every_recorded_and_golden_pages_table_rows_have_their_headers_cells():
    broken = []
    for page in sorted([*(ROOT / "reports" / "recorded").rglob("*.md"), *(ROOT / "tests" / "regression").glob("*.md")]):
        header = None
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if not line.startswith("|"):
                header = None
            elif header is None:
                header = _cells(line)
            elif _cells(line) != header:
                broken.append(f"{page.relative_to(ROOT)}:{number}")
    assert not broken, f"table rows with more or fewer cells than their header: {broken}"


def test_rewriting_a_section_gives_the_page_built_with_it(tmp_path):
    """page.rewrite_section (a record judged again from its tables): the Markdown and HTML equal those of the page
    built with the new section, wherever the section stands; a page without it is refused, naming it."""
    def page(middle: str, last: bool) -> Page:
        built = Page("R").text("intro").heading("A").table(pd.DataFrame({"x": [1]}))
        sections = [("B", middle), ("C", "the end")]
        for heading, text in (sections if not last else sections[::-1]):
            built.heading(heading).text(text)
        return built

    for last in (False, True):
        page("old", last).write(tmp_path)
        rewrite_section(tmp_path, Page("").heading("B").text("new | one"))
        (tmp_path / "want").mkdir()
        page("new | one", last).write(tmp_path / "want")
        for name in ("index.md", "index.html"):
            assert (tmp_path / name).read_text() == (tmp_path / "want" / name).read_text(), (name, last)
        shutil.rmtree(tmp_path / "want")
    with pytest.raises(ValueError, match="index.md: no section 'Z' to rewrite"):
        rewrite_section(tmp_path, Page("").heading("Z").text("z"))
