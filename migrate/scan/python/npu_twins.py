"""NPU twins: a statement about CUDA beside one in the same block that says the same about
the NPU (an awareness region of scan/python/awareness.py)."""

from __future__ import annotations

import ast
import re

from migrate.scan.npu_names import CUDA_WORD, names_npu

# node types that hold blocks of statements (where NPU twins sit side by side)
BLOCK_TYPES = tuple(
    t
    for t in (
        ast.Module,
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.If,
        ast.For,
        ast.AsyncFor,
        ast.While,
        ast.With,
        ast.AsyncWith,
        ast.Try,
        getattr(ast, "TryStar", None),
        ast.ExceptHandler,
        getattr(ast, "match_case", None),
    )
    if t is not None
)


_TO_NPU = {"cuda": "npu", "nccl": "hccl"}


def _npu_form(text: str) -> str:
    """``text`` with CUDA's words put as the NPU's (cuda -> npu, nccl -> hccl), lowered,
    quotes and spaces aside: what its NPU twin reads."""
    return CUDA_WORD.sub(lambda m: _TO_NPU[m.group().lower()], _plain(text))


def _plain(text: str) -> str:
    return re.sub(r"\s+", "", text.replace("'", '"')).lower()


def _key(stmt) -> str | None:
    """What a statement's NPU twin must match: an assignment's target
    (``self.is_cuda = ...`` / ``self.is_npu = ...``), an ``if``'s test
    (``if device_type == "cuda":`` / ``if device_type == "npu":``)."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if len(targets) == 1 and isinstance(targets[0], (ast.Name, ast.Attribute)):
            return "=" + ast.unparse(targets[0])
        return None
    if isinstance(stmt, ast.If):
        return "if" + ast.unparse(stmt.test)
    return None


def npu_twins(f, blocks: list):
    """(statement, its twin): a statement about CUDA beside one in the same block that says
    the same about the NPU (``self.is_cuda = device.type == "cuda" and ...`` over
    ``self.is_npu = device.type == "npu" and ...``, ``if device_type == "cuda": ...`` over
    ``if device_type == "npu": ...``). The code already has its NPU arm: porting the CUDA
    one would make both arms true on an NPU (timm's PrefetchLoader then picks torch.cuda)."""
    for node in blocks:
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list) or len(block) < 2 or not isinstance(block[0], ast.stmt):
                continue
            keys = [_key(s) for s in block]
            npu_keys = {_plain(k): s for k, s in zip(keys, block) if k and names_npu(k)}
            if not npu_keys:
                continue
            for key, stmt in zip(keys, block):
                if key and CUDA_WORD.search(key):
                    twin = npu_keys.get(_npu_form(key))
                    if twin is not None and twin is not stmt:
                        said = _key(twin) or ""  # a twin has a key: it was found by one
                        yield stmt, said[1:] if isinstance(twin, ast.Assign) else f.source(twin.test)
