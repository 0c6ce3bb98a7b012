"""Attach hooks to every module of a model and write a dump directory (docs/contracts.md §5).

    with migrate.precision.dump(model, "out", inputs=True):
        model(x)

Forward outputs always; forward inputs (``inputs=True``), the module's own parameters
(``params=True``, kind ``forward.parameter``) and backward gradients (``grads=True``) on
request. A tensor recorded twice unchanged (a child's output that is its parent's output
or the next module's input) is stored once and referenced by both records. Each tensor's
bytes are written to its shard inside the hook, so later in-place ops cannot change what
was recorded, and nothing is buffered in memory.
"""

from __future__ import annotations

import fnmatch
import json
import time
import weakref
from collections import defaultdict
from pathlib import Path
from typing import Any

from migrate.precision.digest import BackgroundDigest
from migrate.precision.flatten import encode, iter_tensors
from migrate.precision.shards import DEFAULT_SHARD_BYTES, ShardWriter
from migrate.precision.stats import tensor_stats
from migrate.precision.threads import one_intra_op_thread

ROOT = "<root>"
FORMAT = 1
_CACHE_MAX = 64


class dump:  # noqa: N801 - used as a context manager, reads like a function
    """Context manager writing ``out_dir/manifest.json`` plus ``tensors-*.safetensors``."""

    def __init__(self, model: Any, out_dir: str | Path, *, inputs: bool = False,
                 grads: bool = False, params: bool = False, stats_only: bool = False,
                 include: list[str] | None = None, exclude: list[str] | None = None,
                 shard_bytes: int = DEFAULT_SHARD_BYTES, meta: dict | None = None) -> None:
        self.model = model
        self.out_dir = _rank_dir(Path(out_dir))
        self.inputs, self.grads, self.stats_only = inputs, grads, stats_only
        self.params = params
        self.include, self.exclude = list(include or []), list(exclude or [])
        self.shard_bytes = shard_bytes
        self.extra_meta = dict(meta or {})
        self.records: list[dict] = []
        self.input_specs: dict[str, Any] = {}
        self._handles: list[Any] = []
        self._calls: dict[str, int] = defaultdict(int)
        self._bwd_calls: dict[str, int] = defaultdict(int)
        self._stack: dict[str, list[int]] = defaultdict(list)
        self._seen: dict[int, tuple] = {}
        self._writer: ShardWriter | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> dump:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for old in self.out_dir.glob("tensors-*.safetensors"):
            old.unlink()
        if not self.stats_only:
            self._writer = ShardWriter(self.out_dir, self.shard_bytes)
        self._meta = _model_meta(self.model)
        self._digest = BackgroundDigest(self.model)
        import torch

        self._strided = torch.strided
        for name, module in self.model.named_modules():
            name = name or ROOT
            if self._selected(name):
                self._attach(name, module)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._seen.clear()
        if self._writer is not None:
            self._writer.close()
        digest, stable = self._digest.result()
        self._meta["weights_digest"] = digest
        if not stable:
            self._meta["weights_changed_during_dump"] = True
        self._write_manifest(incomplete=exc_type is not None)

    def _selected(self, name: str) -> bool:
        if self.include and not any(fnmatch.fnmatchcase(name, g) for g in self.include):
            return False
        return not any(fnmatch.fnmatchcase(name, g) for g in self.exclude)

    def _attach(self, name: str, module: Any) -> None:
        def pre(mod, args, kwargs):
            call = self._calls[name]
            self._calls[name] += 1
            self._stack[name].append(call)
            if self.inputs:
                counter = [0]
                self.input_specs[f"{name}#{call}"] = encode({"args": args, "kwargs": kwargs},
                                                            counter)
                self._record_all(name, call, "forward.input", {"args": args, "kwargs": kwargs})

        def post(mod, args, kwargs, output):
            stack = self._stack[name]
            call = stack.pop() if stack else self._calls[name] - 1
            self._record_all(name, call, "forward.output", output)
            if self.params:
                named = dict(mod.named_parameters(recurse=False))
                self._record_all(name, call, "forward.parameter", named)

        def back(mod, grad_input, grad_output):
            call = self._bwd_calls[name]
            self._bwd_calls[name] += 1
            self._record_all(name, call, "backward.grad_output", grad_output)
            self._record_all(name, call, "backward.grad_input", grad_input)

        self._handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        self._handles.append(module.register_forward_hook(post, with_kwargs=True))
        if self.grads:
            self._handles.append(module.register_full_backward_hook(back))

    # -- recording ---------------------------------------------------------------------
    def _record_all(self, name: str, call: int, kind: str, obj: Any) -> None:
        with one_intra_op_thread():
            for index, (path, tensor) in enumerate(iter_tensors(obj)):
                self._record(name, call, kind, index, path, tensor)

    def _record(self, name: str, call: int, kind: str, index: int, path: str, t: Any) -> None:
        rec = {"name": name, "call": call, "kind": kind, "index": index, "path": path,
               "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
        cached = self._cached(t)
        if cached is not None:
            rec["stats"], rec["file"], rec["tensor"] = cached
        else:
            stats = tensor_stats(t.detach())
            file = key = None
            if self._writer is not None and t.layout == self._strided:
                file, key = self._writer.add(t)
            self._remember(t, (stats, file, key))
            rec["stats"], rec["file"], rec["tensor"] = stats, file, key
        self.records.append(rec)

    def _cached(self, t: Any) -> tuple | None:
        """Same tensor object, not modified since it was recorded: reuse the stored copy."""
        hit = self._seen.get(id(t))
        if hit is None:
            return None
        ref, version, payload = hit
        if ref() is t and t._version == version:
            return payload
        return None

    def _remember(self, t: Any, payload: tuple) -> None:
        try:
            ref = weakref.ref(t)
        except TypeError:
            return
        if len(self._seen) >= _CACHE_MAX:
            self._seen.pop(next(iter(self._seen)))
        self._seen[id(t)] = (ref, t._version, payload)

    def _write_manifest(self, incomplete: bool) -> None:
        meta = {**self._meta, **self.extra_meta, "stats_only": self.stats_only,
                "inputs": self.inputs, "grads": self.grads, "params": self.params,
                "include": self.include, "exclude": self.exclude,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if self._writer is not None:
            meta["files"], meta["bytes"] = self._writer.files, self._writer.bytes_written
        if incomplete:
            meta["incomplete"] = True
        doc = {"format": FORMAT, "meta": meta, "records": self.records}
        if self.input_specs:
            doc["input_specs"] = self.input_specs
        tmp = self.out_dir / "manifest.json.tmp"
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        tmp.replace(self.out_dir / "manifest.json")


def _rank_dir(out_dir: Path) -> Path:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch without distributed support
        return out_dir
    if dist.is_available() and dist.is_initialized():
        return out_dir / f"rank{dist.get_rank()}"
    return out_dir


def _model_meta(model: Any) -> dict:
    import torch

    from migrate import __version__

    first = next(iter(model.parameters()), None)
    meta = {"tool": "ascend-migrate", "version": __version__, "torch": torch.__version__,
            "model": type(model).__name__,
            "device": str(first.device) if first is not None else "cpu",
            "dtype": str(first.dtype).removeprefix("torch.") if first is not None else None,
            "rank": 0, "world_size": 1}
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        meta["rank"], meta["world_size"] = dist.get_rank(), dist.get_world_size()
    return meta
