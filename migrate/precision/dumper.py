"""Attach hooks to every module of a model and write a dump directory (docs/contracts.md §5).

    with migrate.precision.dump(model, "out", inputs=True):
        model(x)

Forward outputs always; forward inputs (``inputs=True``), the module's own parameters
(``params=True``, kind ``forward.parameter``), backward gradients (``grads=True``: of each
module's inputs and outputs, and of its own parameters, kind ``backward.parameter``) and the
outputs of torch functions called inside each module (``apis=True``, kind ``api.output``,
named ``module/function``) on request. A tensor recorded twice unchanged is stored once and
referenced by both records. Each tensor's bytes are copied to a staging block inside the
hook, so later in-place ops cannot change what was recorded; a writer thread writes the
blocks to the shards (and takes their CRC32, and the stats of every contiguous CPU tensor
from its staged bytes: the same values the hook would compute, off the forward's path)
while the model keeps running, with bounded staging memory (shards.py). Gradients come
from tensor hooks on each module's inputs and outputs, which keep working when a later op
modifies the tensor in place (``ReLU(inplace=True)``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import time
import weakref
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from migrate.core.errors import UsageError
from migrate.precision import run_precision
from migrate.precision.api_hooks import ApiRecorder
from migrate.precision.digest import BackgroundDigest, digest_of
from migrate.precision.flatten import encode, iter_tensors, substitute
from migrate.precision.lineage import Lineage
from migrate.precision.manifest import MAX_LINKS
from migrate.precision.shards import DEFAULT_SHARD_BYTES, ShardWriter
from migrate.precision.stats import tensor_stats
from migrate.precision.threads import one_intra_op_thread

ROOT = "<root>"
FORMAT = 1
_CACHE_MAX = 64


class dump:  # noqa: N801 - used as a context manager, reads like a function
    """Context manager writing ``out_dir/manifest.json`` plus ``tensors-*.safetensors``."""

    def __init__(
        self,
        model: Any,
        out_dir: str | Path,
        *,
        inputs: bool = False,
        grads: bool = False,
        params: bool = False,
        stats_only: bool = False,
        apis: bool = False,
        include: list[str] | None = None,
        exclude: list[str] | None = None,
        shard_bytes: int = DEFAULT_SHARD_BYTES,
        meta: dict | None = None,
        precision: dict | None = None,
    ) -> None:
        self.model = model
        self._base_dir = Path(out_dir)
        self.out_dir = _rank_dir(self._base_dir)
        self.inputs, self.grads, self.stats_only = inputs, grads, stats_only
        self.params, self.apis = params, apis
        self.include, self.exclude = list(include or []), list(exclude or [])
        self.shard_bytes = shard_bytes
        self.extra_meta = dict(meta or {})
        self.declared = dict(precision or {})  # meta.precision keys the flags cannot show
        self.records: list[dict] = []
        self.input_specs: dict[str, Any] = {}
        self._handles: list[Any] = []
        self._calls: dict[str, int] = defaultdict(int)
        self._bwd_calls: dict[tuple[str, str], int] = defaultdict(int)
        self._stack: dict[str, list[int]] = defaultdict(list)
        self._seen: dict[int, tuple] = {}
        self._writer: ShardWriter | None = None
        self._api: ApiRecorder | None = None
        self._lineage = Lineage()
        self._param_names: dict[int, list[str]] | None = None
        self.busy = False  # True while recording (API hooks ignore our own torch calls)

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> dump:
        check_out_dir(self._base_dir)
        check_out_dir(self.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        # Until the run ends the folder holds a manifest that says so: a dump killed
        # mid-run is rejected as incomplete, never read against half-written shards.
        self._write_doc({"format": FORMAT, "meta": {"incomplete": True, "running": True}, "records": []})
        for old in self.out_dir.glob("tensors-*.safetensors"):
            old.unlink()
        if not self.stats_only:
            self._writer = ShardWriter(self.out_dir, self.shard_bytes)
        self._meta = _model_meta(self.model)
        self._precision = {**run_precision.record(self.model), **self.declared}
        if self.declared:
            self._precision["source"] = "declared"
        self._digest = BackgroundDigest(self.model)
        import torch

        self._strided = torch.strided
        self._names: list[str] = []
        for name, module in self.model.named_modules():
            name = name or ROOT
            self._names.append(name)
            if self._selected(name):
                self._attach(name, module)
                if self.grads:
                    self._param_grad_hooks(name, module)
        if self.apis:
            self._api = ApiRecorder(self)
            self._api.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._api is not None:
            self._api.__exit__(exc_type, exc, tb)
            self._api = None
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._seen.clear()
        failure = self._close_writer()
        self._lineage.finish(self.records)
        self._lineage.clear()
        table, stable = self._digest.result()
        self._meta["weights_digest"] = digest_of(table)
        self._meta["weights"] = table
        if not stable:
            self._meta["weights_changed_during_dump"] = True
        self._write_manifest(incomplete=exc_type is not None or failure is not None)
        if failure is not None and exc_type is None:
            raise failure

    def _close_writer(self) -> UsageError | None:
        """Finish the shards and give each stored record its CRC32; a write error is
        returned (the manifest is then marked incomplete, which compare rejects)."""
        if self._writer is None:
            return None
        try:
            self._writer.close()
        except UsageError as exc:
            return exc
        crcs, stats = self._writer.crcs, self._writer.stats
        for rec in self.records:
            key = rec.get("tensor")
            if key is not None:
                rec["crc32"] = crcs[key]
                if rec["stats"] is None:
                    rec["stats"] = stats[key]
        return None

    def _selected(self, name: str) -> bool:
        if self.include and not any(fnmatch.fnmatchcase(name, g) for g in self.include):
            return False
        return not any(fnmatch.fnmatchcase(name, g) for g in self.exclude)

    def _attach(self, name: str, module: Any) -> None:
        def pre(mod, args, kwargs):
            call = self._calls[name]
            self._calls[name] += 1
            self._stack[name].append(call)
            if self._api is not None:
                self._api.enter(name)
            self._note_autocast()
            call_args = {"args": args, "kwargs": kwargs}
            if self.inputs:
                self.input_specs[f"{name}#{call}"] = encode(call_args, [0])
                self._record_all(name, call, "forward.input", call_args)
            with one_intra_op_thread(), self._own_work():  # after the inputs: their copies serve it
                self._lineage.enter(mod, call_args, self._later)
            if self.grads:
                return self._grad_input_hooks(name, call_args)
            return None

        def post(mod, args, kwargs, output):
            stack = self._stack[name]
            call = stack.pop() if stack else self._calls[name] - 1
            if self._api is not None:
                self._api.leave(name)
            first = len(self.records)
            self._record_all(name, call, "forward.output", output)
            with self._own_work():
                self._lineage.leave(mod, self.records, first, output)
            if self.params:
                named = dict(mod.named_parameters(recurse=False))
                self._record_all(name, call, "forward.parameter", named)
            if self.grads:
                self._grad_hooks(name, "backward.grad_output", output)

        self._handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        self._handles.append(module.register_forward_hook(post, with_kwargs=True))

    def _grad_input_hooks(self, name: str, call_args: dict) -> tuple | None:
        """Hook the gradient this module produces for its inputs: each input that requires
        grad is handed to the module as a fresh alias (``view_as``), so its gradient holds
        this module's contribution only - not that of every other use of the same tensor,
        which would differ between runs where one casts (a new tensor) and the other does
        not (the same tensor, e.g. Mamba's ``hidden_states.to(norm dtype)``)."""
        if not any(t.requires_grad for _, t in iter_tensors(call_args)):
            return None
        aliases = iter([t.view_as(t) if t.requires_grad else t for _, t in iter_tensors(call_args)])
        call_args = substitute(call_args, aliases)
        self._grad_hooks(name, "backward.grad_input", call_args)
        return tuple(call_args["args"]), dict(call_args["kwargs"])

    def _param_grad_hooks(self, name: str, module: Any) -> None:
        """Weight gradients (kind ``backward.parameter``): each backward's gradient of the
        module's own parameters, numbered per backward call. A parameter other modules
        hold too (tied embeddings: ``lm_head.weight is wte.weight``) has one gradient, the
        sum of every use: its records name the other holders (``tied``)."""
        for index, (pname, p) in enumerate(module.named_parameters(recurse=False)):
            if not p.requires_grad:
                continue
            counter = [0]
            tied = [o for o in self._holders(p) if o != f"{name}.{pname}"][:MAX_LINKS]

            def hook(g, i=index, path=pname, n=counter, tied=tied):
                call = n[0]
                n[0] += 1
                with one_intra_op_thread():
                    self._record(name, call, "backward.parameter", i, path, g)
                if tied:
                    self.records[-1]["tied"] = tied

            self._handles.append(p.register_hook(hook))

    def _holders(self, param: Any) -> list[str]:
        """Every ``module.parameter`` name that holds ``param`` (the same object)."""
        if self._param_names is None:
            self._param_names = defaultdict(list)
            for mod_name, mod in self.model.named_modules(remove_duplicate=False):
                for pname, p in mod.named_parameters(recurse=False):
                    self._param_names[id(p)].append(f"{mod_name or ROOT}.{pname}")
        return self._param_names.get(id(param), [])

    def _grad_hooks(self, name: str, kind: str, obj: Any) -> None:
        """Record the gradient of every tensor in ``obj`` that requires grad: the grads
        of one backward call of the module are numbered like the forward calls."""
        tensors = [t for _, t in iter_tensors(obj) if t.requires_grad]
        if not tensors:
            return
        call = self._bwd_calls[(name, kind)]
        self._bwd_calls[(name, kind)] += 1
        for index, t in enumerate(tensors):
            t.register_hook(lambda g, i=index: self._record_grad(name, call, kind, i, g))

    def _record_grad(self, name: str, call: int, kind: str, index: int, grad: Any) -> None:
        with one_intra_op_thread():
            self._record(name, call, kind, index, str(index), grad)

    def _note_autocast(self) -> None:
        dtype = run_precision.autocast_dtype(self._precision["device"])
        if dtype is not None and dtype not in self._precision["autocast"]:
            self._precision["autocast"].append(dtype)

    # -- recording ---------------------------------------------------------------------
    def _record_all(self, name: str, call: int, kind: str, obj: Any) -> None:
        with one_intra_op_thread():
            for index, (path, tensor) in enumerate(iter_tensors(obj)):
                self._record(name, call, kind, index, path, tensor)

    def _record(self, name: str, call: int, kind: str, index: int, path: str, t: Any) -> None:
        with self._own_work():
            self.records.append(self._make_record(name, call, kind, index, path, t))

    @contextlib.contextmanager
    def _own_work(self) -> Iterator[None]:
        """The dump's own torch calls (stats, copies, Lineage's norms): never recorded as
        the module's API calls."""
        self.busy = True
        try:
            yield
        finally:
            self.busy = False

    def _make_record(self, name: str, call: int, kind: str, index: int, path: str, t: Any) -> dict:
        rec = {
            "name": name,
            "call": call,
            "kind": kind,
            "index": index,
            "path": path,
            "dtype": str(t.dtype).removeprefix("torch."),
            "shape": list(t.shape),
        }
        cached = self._cached(t)
        if cached is None:
            stored, later = None, False
            if self._writer is not None and t.layout == self._strided:
                # Its CRC32 is computed by the writer's thread and known once the writer
                # closes; so are its stats when the staged copy holds the bytes the hook
                # would reduce in the same order (contiguous, on the CPU).
                later = t.device.type == "cpu" and t.is_contiguous()
                stored = self._writer.add(t, stats=later)
            stats = None if stored and later else tensor_stats(t.detach(), with_sketch=self.stats_only)
            cached = (stats, *(stored or (None, None)))
            self._remember(t, cached)
        rec["stats"], rec["file"], rec["tensor"] = cached
        return rec

    def _later(self, t: Any, fn: Any) -> Any:
        """``fn`` of a tensor just recorded, computed by the writer's thread from its staged
        copy (a ``Later``), or None when that copy cannot serve (see ShardWriter.derive)."""
        writer = self._writer
        hit = self._cached(t) if writer is not None else None
        if writer is None or hit is None or hit[0] is not None or hit[2] is None:
            return None  # not recorded, or its stats were taken in the hook (not staged as is)
        return writer.derive(hit[2], fn)

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
        meta = {
            **self._meta,
            "precision": self._precision,
            **self.extra_meta,
            "stats_only": self.stats_only,
            "inputs": self.inputs,
            "grads": self.grads,
            "params": self.params,
            "apis": self.apis,
            "include": self.include,
            "exclude": self.exclude,
            "modules": self._names,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        if self._writer is not None:
            meta["files"], meta["bytes"] = self._writer.files, self._writer.bytes_written
        if incomplete:
            meta["incomplete"] = True
        doc = {"format": FORMAT, "meta": meta, "records": self.records}
        if self.input_specs:
            doc["input_specs"] = self.input_specs
        self._write_doc(doc)

    def _write_doc(self, doc: dict) -> None:
        tmp = self.out_dir / "manifest.json.tmp"
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        tmp.replace(self.out_dir / "manifest.json")


def check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder; choose another dump folder")
    if (
        out.is_dir()
        and not (out / "manifest.json").is_file()
        and any(not p.name.startswith("rank") for p in out.iterdir())
    ):
        raise UsageError(f"{out}: folder is not empty and holds no dump; refusing to write into it")


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
    meta = {
        "tool": "ascend-migrate",
        "version": __version__,
        "torch": torch.__version__,
        "model": type(model).__name__,
        "device": str(first.device) if first is not None else "cpu",
        "dtype": str(first.dtype).removeprefix("torch.") if first is not None else None,
        "rank": 0,
        "world_size": 1,
    }
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        meta["rank"], meta["world_size"] = dist.get_rank(), dist.get_world_size()
    return meta
