"""Decomposition rules, one module per op family. Every module here is imported by the
registry's package walk: adding a rule is adding a file (see ../registry.py)."""
