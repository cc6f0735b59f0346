"""Shared by every paper's report: paper-against-ours status (compare), one figure style (style), pages
written as Markdown and HTML (page), and the front page (index). Names no paper."""
