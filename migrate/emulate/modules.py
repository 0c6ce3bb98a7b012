"""Module paths at run time (``layers.3.mlp``) from global forward hooks, for every
``nn.Module`` the program calls: no model handle needed."""

from __future__ import annotations

import threading

import torch


class _Stack(threading.local):
    """Each thread's modules being called (a worker thread runs its own forward)."""

    def __init__(self) -> None:
        self.items: list[tuple[int, str]] = []  # (id(module), path)


_LOCAL = _Stack()
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
    stack = _LOCAL.items
    if stack:
        parent_id, parent_path = stack[-1]
        parent = _PARENTS.get(parent_id)
        leaf = _child_name(parent, module) if parent is not None else type(module).__name__
        path = f"{parent_path}.{leaf}" if parent_path else leaf
    else:
        path = ""
    _PARENTS[id(module)] = module
    stack.append((id(module), path))


def _post(module, _args, _out):
    stack = _LOCAL.items
    while stack:
        mid, _ = stack.pop()
        _PARENTS.pop(mid, None)
        if mid == id(module):
            break


def current() -> str:
    if torch._C._current_graph_task_id() != -1:
        return "<backward>"
    stack = _LOCAL.items
    if not stack:
        return "<top level>"
    return stack[-1][1] or "<root>"


def install() -> list:
    from torch.nn.modules import module as nn_module

    return [
        nn_module.register_module_forward_pre_hook(_pre),
        nn_module.register_module_forward_hook(_post, always_call=True),
    ]
