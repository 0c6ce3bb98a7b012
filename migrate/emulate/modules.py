"""Module paths at run time (``layers.3.mlp``) from global forward hooks, for every
``nn.Module`` the program calls: no model handle needed."""

from __future__ import annotations

import torch

_STACK: list[tuple[int, str]] = []  # (id(module), path)
_NAMES: dict[tuple[int, int], str] = {}


def _child_name(parent, child) -> str:
    key = (id(parent), id(child))
    name = _NAMES.get(key)
    if name is None:
        name = next((n for n, m in parent._modules.items() if m is child), type(child).__name__)
        _NAMES[key] = name
    return name


_PARENTS: dict[int, object] = {}


def _pre(module, _args):
    if _STACK:
        parent_id, parent_path = _STACK[-1]
        parent = _PARENTS.get(parent_id)
        leaf = _child_name(parent, module) if parent is not None else type(module).__name__
        path = f"{parent_path}.{leaf}" if parent_path else leaf
    else:
        path = ""
    _PARENTS[id(module)] = module
    _STACK.append((id(module), path))


def _post(module, _args, _out):
    while _STACK:
        mid, _ = _STACK.pop()
        _PARENTS.pop(mid, None)
        if mid == id(module):
            break


def current() -> str:
    if torch._C._current_graph_task_id() != -1:
        return "<backward>"
    if not _STACK:
        return "<top level>"
    return _STACK[-1][1] or "<root>"


def install() -> list:
    from torch.nn.modules import module as nn_module

    return [
        nn_module.register_module_forward_pre_hook(_pre),
        nn_module.register_module_forward_hook(_post, always_call=True),
    ]
