"""Flatten nested module outputs into (index, path, tensor) triples with stable order.

Tuples and lists go by position, dicts (and HF ``ModelOutput``) by insertion order,
dataclasses by field order. ``encode``/``decode`` keep the non-tensor structure of a
module call as JSON so that ``replay`` can rebuild the exact ``(args, kwargs)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any


def _is_tensor(obj: Any) -> bool:
    import torch

    return isinstance(obj, torch.Tensor)


def _children(obj: Any) -> Iterator[tuple[str, Any]] | None:
    if isinstance(obj, Mapping):
        return ((str(k), v) for k, v in obj.items())
    if isinstance(obj, (tuple, list)):
        return ((str(i), v) for i, v in enumerate(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return ((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj))
    return None


def iter_tensors(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Yield ``(path, tensor)`` for every tensor in ``obj``, depth first, in stable order."""
    if _is_tensor(obj):
        yield prefix, obj
        return
    kids = _children(obj)
    if kids is None:
        return
    for key, value in kids:
        yield from iter_tensors(value, f"{prefix}.{key}" if prefix else key)


def substitute(obj: Any, new: Iterator[Any]) -> Any:
    """``obj`` with its tensors replaced, in :func:`iter_tensors` order, by ``next(new)``;
    every other object (caches, configs) is kept as the same live object."""
    if _is_tensor(obj):
        return next(new)
    if isinstance(obj, Mapping):
        items = {k: substitute(v, new) for k, v in obj.items()}
        if type(obj) is dict:
            return items
        try:
            return type(obj)(**items)
        except TypeError:
            return items
    if isinstance(obj, (tuple, list)):
        elems = [substitute(v, new) for v in obj]
        if type(obj) in (tuple, list):
            return type(obj)(elems)
        return type(obj)(*elems) if isinstance(obj, tuple) else type(obj)(elems)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: substitute(getattr(obj, f.name), new) for f in dataclasses.fields(obj) if f.init}
        return dataclasses.replace(obj, **changes)
    return obj


_SCALARS = (type(None), bool, int, float, str)


def encode(obj: Any, counter: list[int]) -> Any:
    """JSON spec of ``obj`` where each tensor becomes ``{"__tensor__": n}`` in flatten order."""
    if _is_tensor(obj):
        counter[0] += 1
        return {"__tensor__": counter[0] - 1}
    if isinstance(obj, _SCALARS):
        return obj
    if isinstance(obj, Mapping):
        return {"__dict__": [[str(k), encode(v, counter)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(v, counter) for v in obj]}
    if isinstance(obj, list):
        return [encode(v, counter) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = [[f.name, encode(getattr(obj, f.name), counter)] for f in dataclasses.fields(obj)]
        return {"__dict__": fields}
    import torch

    if isinstance(obj, torch.dtype):
        return {"__dtype__": str(obj).removeprefix("torch.")}
    return {"__opaque__": repr(obj)[:200]}


def decode(spec: Any, tensors: list[Any]) -> Any:
    """Inverse of :func:`encode`; raises ValueError on values that could not be recorded."""
    if isinstance(spec, list):
        return [decode(v, tensors) for v in spec]
    if not isinstance(spec, dict):
        return spec
    if "__tensor__" in spec:
        return tensors[spec["__tensor__"]]
    if "__tuple__" in spec:
        return tuple(decode(v, tensors) for v in spec["__tuple__"])
    if "__dict__" in spec:
        return {k: decode(v, tensors) for k, v in spec["__dict__"]}
    if "__dtype__" in spec:
        import torch

        return getattr(torch, spec["__dtype__"])
    raise ValueError(f"argument not replayable: {spec.get('__opaque__', spec)}")
