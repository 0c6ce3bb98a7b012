"""Errors that the CLI turns into one clear line and exit code 2."""


class UsageError(Exception):
    """Bad input from the user: a missing path, an unreadable model, a bad option value."""


class RuleError(ValueError):
    """A rule row that cannot be used: a bad code, kind, params key or type, a duplicate."""
