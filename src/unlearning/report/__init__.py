"""Paper tables (pandas), figures (seaborn) and the Markdown/HTML report."""
