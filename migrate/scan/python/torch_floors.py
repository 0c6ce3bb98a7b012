"""The oldest torch a piece of code shows it needs, from the torch APIs it uses: a file whose
project declares no minimum keeps spellings every such torch has (portable_names.py), and a
fallback for a torch older than the API its ``try`` uses never runs with torch_npu's torch
(left_as_written.py)."""

from __future__ import annotations

import ast
import re

# APIs whose use shows the code runs on at least that torch, newest first
_SHOWN_FLOORS = (
    (re.compile(r"\btorch\.accelerator\b"), (2, 6)),
    (re.compile(r"\btorch\.amp\.GradScaler\b|\btorch\.get_device_module\b"), (2, 3)),
    (re.compile(r"\btorch\.compile\(|\btorch\.func\b"), (2, 0)),
    (re.compile(r"\btorch\.(?:amp\.)?autocast\b"), (1, 10)),
)
UNKNOWN_FLOOR = (1, 10)  # code showing none is taken to support torch 1.10, the oldest torch.amp.autocast


def shown_floor(text: str) -> tuple[int, int] | None:
    """The oldest torch the APIs ``text`` uses need, or None where it uses none of them."""
    for pattern, floor in _SHOWN_FLOORS:
        if pattern.search(text):
            return floor
    return None


def code_floor(text: str) -> tuple[int, int]:
    """The oldest torch ``text`` shows it needs (UNKNOWN_FLOOR where it shows none)."""
    return shown_floor(text) or UNKNOWN_FLOOR


_MISSING_API_ERRORS = ("ImportError", "ModuleNotFoundError", "AttributeError", "TypeError")


def catches_missing_api(handler: ast.ExceptHandler) -> bool:
    """Does the handler catch only what a missing name or argument raises?"""
    if handler.type is None:
        return False
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return all(isinstance(n, ast.Name) and n.id in _MISSING_API_ERRORS for n in names)


def fallback_floor(f, handler: ast.ExceptHandler) -> tuple[int, int] | None:
    """The torch a fallback runs below: where ``handler`` catches only what a missing API
    raises and its ``try`` uses an API that needs torch X.Y (``try: scaler =
    torch.amp.GradScaler("cuda")`` ``except AttributeError:``: below 2.3), X.Y; else None."""
    owner = f.parent(handler)
    if not isinstance(owner, ast.Try) or not owner.body or not catches_missing_api(handler):
        return None
    return shown_floor(f.text[f.span(owner.body[0])[0] : f.span(owner.body[-1])[1]])
