"""The NPU spelling of code that names CUDA, token by token (one respeller for every copy
the port makes for the NPU: a vendor chain's arm, npu_work_arm.py; the CUDA arm of a
conditional expression, npu_ternary_copy.py).

``torch.cuda.X`` -> ``torch.npu.X`` (the callers allow only names whose NPU counterpart has
the same name, MIG101), ``tensor.cuda()`` -> ``tensor.npu()``, the device strings ``"cuda"``
and ``"cuda:0"``, an f-string's ``f"cuda:{i}"`` and its ``torch.cuda.X`` fields, the names a
copy renames; any other token mentioning CUDA (``cudnn``, ``"cuda_data_parallel"``, a comment)
has no NPU spelling and the whole answer is None.
"""

from __future__ import annotations

import io
import re
import tokenize
from functools import partial

from migrate.scan.npu_names import CUDA_STACK

_DEVICE_STRING = re.compile(r"""^([rbuRBU]*)(['"])cuda(:\d+)?\2$""")
_FSTRING_DEVICE = re.compile(r"""^([rRfF]*['"])cuda:\{""")
# the device named in a message the NPU arm copies (timm's `assert torch.cuda.is_available(),
# f'CUDA is not available ...'`): the NPU's arm says NPU, as its engineers wrote
_MESSAGE_WORD = re.compile(r"\b(?:CUDA|GPU)(s?)\b")


# what a copy may respell: torch.cuda.X whose NPU counterpart has the same name (MIG101),
# device strings (MIG201), tensor.cuda() (MIG202); any other finding leaves the code as it is
COPYABLE = frozenset({"MIG101", "MIG201", "MIG202"})


def fixable(f, findings: list) -> tuple[list, dict[int, int]]:
    """The findings a copy may take over (not NPU-aware, with a fix), and each one's offset."""
    live = [x for x in findings if not x.npu_aware and x.fix is not None]
    return live, {id(x): f.index.offset(x.line, x.column - 1) for x in live}


def _npu_word(m: re.Match) -> str:
    return f"NPU{m.group(1)}"


_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)  # Python 3.12+
_FSTRING_MIDDLE = getattr(tokenize, "FSTRING_MIDDLE", -1)


def respelled(text: str, torch_local: str, renames: dict[str, str], words: bool = True) -> str | None:
    """``text`` with ``torch.cuda`` -> ``torch.npu``, ``.cuda(`` -> ``.npu(``, ``"cuda"`` ->
    ``"npu"`` and the names in ``renames`` renamed; None if any other token mentions CUDA.
    ``words``: a message naming CUDA or the GPU names the NPU (``"CUDA is not available"``);
    without, a string about CUDA makes it None. Raises tokenize.TokenError, SyntaxError."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    for i, tok in enumerate(tokens):
        low = tok.string.lower()
        worded = tok.type in (tokenize.STRING, _FSTRING_MIDDLE) and _MESSAGE_WORD.search(tok.string)
        if not CUDA_STACK.search(low) and not worded:
            continue
        if tok.type not in (tokenize.NAME, tokenize.STRING, _FSTRING_MIDDLE):
            return None  # a comment about CUDA
        new = npu_token(tokens, i, torch_local, renames, words)
        if new is None:
            return None
        (row, col), (end_row, end_col) = tok.start, tok.end
        edits.append((starts[row - 1] + col, starts[end_row - 1] + end_col, new))
    for a, b, new in reversed(edits):
        text = text[:a] + new + text[b:]
    return text


def npu_token(tokens, i: int, torch_local: str, renames: dict[str, str], words: bool = True) -> str | None:
    """The NPU spelling of the token ``tokens[i]`` that mentions CUDA, or None."""
    value = tokens[i].string
    word = partial(_MESSAGE_WORD.sub, _npu_word) if words else _as_is
    if tokens[i].type == tokenize.STRING:
        m = _DEVICE_STRING.match(value)
        if m is not None:
            return f"{m.group(1)}{m.group(2)}npu{m.group(3) or ''}{m.group(2)}"
        if "f" not in value.split(value[-1])[0].lower():
            new = word(value)  # a message naming the device
            return None if CUDA_STACK.search(new) else new
        # an f-string (one token before Python 3.12): torch.cuda.X in its fields, a device
        # "cuda:{i}" as its whole text's start, the device named in its text
        new = re.sub(rf"(?<![\w.]){re.escape(torch_local)}\.cuda\.", f"{torch_local}.npu.", value)
        new = word(_FSTRING_DEVICE.sub(r"\1npu:{", new))
        return None if CUDA_STACK.search(new) else new
    if tokens[i].type == _FSTRING_MIDDLE:  # Python 3.12+: f"cuda:{i}" is three tokens
        start = i > 0 and tokens[i - 1].type == _FSTRING_START
        if start and value.startswith("cuda:"):
            value = "npu:" + value[len("cuda:") :]
        value = word(value)
        return None if CUDA_STACK.search(value) else value
    prev = [t.string for t in tokens[max(0, i - 2) : i]]
    nxt = tokens[i + 1].string if i + 1 < len(tokens) else ""
    if value == "cuda" and (prev == [torch_local, "."] or (prev[-1:] == ["."] and nxt == "(")):
        return "npu"  # torch.cuda.X, tensor.cuda()
    return renames.get(value)


def _as_is(text: str) -> str:
    return text
