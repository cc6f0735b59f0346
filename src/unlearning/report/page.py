"""A report page built once and written twice: Markdown (as the repository shows it) and self-contained HTML
(tables as HTML, figures embedded), so that every report reads the same in both."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..files import atomic_path

EMPTY = "(nothing to show)"
STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
         "div.t{overflow-x:auto}table{border-collapse:collapse;font-size:90%}"
         "td,th{padding:2px 8px;border-bottom:1px solid #ddd;vertical-align:top}td{max-width:32em}"
         "img{max-width:100%}")
MISSING, LONG = "missing: ", 40  # a missing cell's reason longer than this is shown once, as a note below the page


def select(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The listed columns that `df` has, in that order."""
    return df[[c for c in columns if c in df.columns]]


@dataclass
class Page:
    title: str
    blocks: list[tuple[str, object]] = field(default_factory=list)

    def heading(self, text: str, anchor: str | None = None) -> Page:
        """A section heading; `anchor` gives it an id that links can name (page.md#anchor)."""
        self.blocks.append(("h2", text) if anchor is None else ("h2a", (text, anchor)))
        return self

    def text(self, *lines: str) -> Page:
        """One paragraph; each argument is one line of the Markdown source."""
        self.blocks.append(("p", lines))
        return self

    def bullets(self, items: list[str]) -> Page:
        """A list; each item is a Markdown line starting with '- '."""
        self.blocks.append(("ul", items))
        return self

    def figure(self, file: str, alt: str) -> Page:
        """An image beside the page (a path relative to the page's folder)."""
        self.blocks.append(("img", (file, alt)))
        return self

    def table(self, df: pd.DataFrame, floatfmt: str = ".4g") -> Page:
        self.blocks.append(("table", (df, floatfmt)))
        return self

    def _blocks(self) -> list[tuple[str, object]]:
        """The blocks as shown: in every table, a long "missing: <reason>" cell becomes "missing: see note N", and
        the reasons follow once each, numbered, under a last heading (the CSV files keep every cell's reason)."""
        notes: dict[str, int] = {}

        def short(v):
            if isinstance(v, str) and v.startswith(MISSING) and len(v) - len(MISSING) > LONG:
                return f"{MISSING}see note {notes.setdefault(v[len(MISSING):], len(notes) + 1)}"
            return v

        blocks = [(kind, (body[0].apply(lambda col: col.map(short)), body[1]) if kind == "table" else body)
                  for kind, body in self.blocks]
        if notes:
            blocks += [("h2", "Notes: why cells are missing"),
                       ("ul", [f"- note {n}: {reason}" for reason, n in notes.items()])]
        return blocks

    def markdown(self) -> str:
        lines = [f"# {self.title}", ""]
        for kind, body in self._blocks():
            if kind == "h2":
                lines += [f"## {body}", ""]
            elif kind == "h2a":
                lines += [f'<a id="{body[1]}"></a>', "", f"## {body[0]}", ""]
            elif kind in ("p", "ul"):
                lines += [*body, ""]
            elif kind == "img":
                lines += [f"![{body[1]}]({body[0]})", ""]
            else:
                df, fmt = body  # a "|" inside a cell would end it: escaped, as Markdown's tables read it
                cells = df.apply(lambda col: col.map(lambda v: v.replace("|", "\\|") if isinstance(v, str) else v))
                lines.append(EMPTY + "\n" if df.empty else cells.to_markdown(index=False, floatfmt=fmt) + "\n")
        return "\n".join(lines)

    def html(self, folder: str | Path) -> str:
        parts = [f"<h1>{_inline(self.title)}</h1>"]
        for kind, body in self._blocks():
            if kind == "h2":
                parts.append(f"<h2>{_inline(body)}</h2>")
            elif kind == "h2a":
                parts.append(f"<h2 id='{html.escape(body[1])}'>{_inline(body[0])}</h2>")
            elif kind == "p":
                parts.append(f"<p>{_inline(' '.join(body))}</p>")
            elif kind == "ul":
                parts.append("<ul>" + "".join(f"<li>{_inline(i.removeprefix('- '))}</li>" for i in body) + "</ul>")
            elif kind == "img":
                data = base64.b64encode((Path(folder) / body[0]).read_bytes()).decode()
                parts.append(f"<p><img alt='{html.escape(body[1])}' src='data:image/png;base64,{data}'/></p>")
            else:
                df, fmt = body
                cells = df.apply(lambda col: col.map(lambda v: _inline(v) if isinstance(v, str) else v))
                parts.append(f"<p>{EMPTY}</p>" if df.empty else "<div class='t'>" + cells.to_html(
                    index=False, border=0, na_rep="", escape=False, float_format=lambda v, fmt=fmt: format(v, fmt))
                             + "</div>")
        title = html.escape(re.sub(r"`", "", self.title))
        return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{STYLE}</style>"
                f"</head><body>{''.join(parts)}</body></html>\n")

    def write(self, folder: str | Path, name: str = "index") -> None:
        """<folder>/<name>.md and <folder>/<name>.html (the figures must be written first)."""
        with atomic_path(Path(folder) / f"{name}.md") as tmp:
            tmp.write_text(self.markdown())
        with atomic_path(Path(folder) / f"{name}.html") as tmp:
            tmp.write_text(self.html(folder))


def rewrite_section(folder: str | Path, page: Page, name: str = "index") -> None:
    """In <folder>/<name>.md and <name>.html, where each exists, the section that `page`'s first heading opens (to
    the next heading) replaced by `page`'s blocks, every other byte kept: a section judged again from a report's
    written tables. A file without that heading is refused, naming it."""
    heading = page.blocks[0][1]
    for suffix, start, after, end in ((".md", f"## {heading}\n", "\n## ", None),
                                      (".html", f"<h2>{_inline(heading)}</h2>", "<h2", "</body>")):
        path = Path(folder) / f"{name}{suffix}"
        if not path.is_file():
            continue
        head, found, rest = path.read_text().partition(start)
        if not found:
            raise ValueError(f"{path}: no section {heading!r} to rewrite")
        new = (page.markdown() if suffix == ".md" else page.html(folder)).split(start, 1)[1]
        if end:  # HTML: the section's parts, then the next heading's or the end of the body
            new, tail = new[:new.index(end)], rest[rest.index(after if after in rest else end):]
        else:  # Markdown: a blank line before the next heading, or the page's own ending
            new, tail = ((new.rstrip("\n") + "\n\n", rest[rest.index(after):].lstrip("\n")) if after in rest
                         else (new, ""))
        with atomic_path(path) as tmp:
            tmp.write_text(head + start + new + tail)


def _inline(text: str) -> str:
    """Escaped text with Markdown's `code`, **bold** and [links](target.md#anchor) as HTML (links to .md go to
    the .html)."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"\[([^\]]+)\]\(([^)#]+?)(\.md)?(#[^)]*)?\)",
                  lambda m: f"<a href='{m[2]}{'.html' if m[3] else ''}{m[4] or ''}'>{m[1]}</a>", out)
