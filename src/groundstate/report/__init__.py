"""Rendering: terminal tables now; HTML reports are built on the same summaries."""
