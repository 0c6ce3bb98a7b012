"""Rule kinds for non-Python files."""
