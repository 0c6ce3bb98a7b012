"""Detectors: one module per family of findings, each function registered with
``@detector("PERFnnn")`` under its row of data/findings.yaml (migrate/perf/catalog.py)."""
