"""Errors that the CLI turns into one clear line and exit code 2."""


class UsageError(Exception):
    """Bad input from the user: a missing path, an unreadable model, a bad option value."""


class FileProblem(Exception):
    """One file cannot be scanned (syntax error, not a notebook...): an ``errors`` entry."""


class RuleError(ValueError):
    """A rule row that cannot be used: a bad code, kind, params key or type, a duplicate."""


def too_deep(exc: BaseException) -> str:
    """What a RecursionError or MemoryError met on one file means: Python's parser (and the
    recursive walks over its tree) give up on deeply nested code (300 nested lambdas, 200
    nested brackets) with one of them; that file is an error, the run goes on."""
    if isinstance(exc, MemoryError):
        return "nesting too deep for Python's parser, or out of memory (MemoryError)"
    return "nesting too deep (RecursionError)"
