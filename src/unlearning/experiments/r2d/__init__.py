"""Rewind-to-Delete (Mu & Klabjan 2025): its commands. The steps, report and tables come later (issue 14)."""
