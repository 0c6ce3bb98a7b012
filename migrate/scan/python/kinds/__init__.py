"""Matcher families for Python files, one module per rule ``kind``.

A kind is a function ``run(pyfile, rules)`` registered with
``@rule_kind(name, engine="python", params=..., tokens=...)`` (migrate.core.kinds); it
receives every selected rule of its kind at once (so tables from several rules can be
merged, longest match first), or, when the kind declares ``compile=``, the table compiled
from them once per run (migrate/scan/ruleset.py), and reports findings on the PyFile. The
registry finds the modules of this package by itself: a new kind is a new module.
"""
