"""The ONNX graph ATC will compile, and which module and which torch op made each node.

Where the graph comes from (``graph_for``), first that works:

1. the TorchScript exporter (opset 18): node names follow module paths
   (``/blocks.0/mlp/mlp.0/MatMul``; a module called twice is ``/act``, ``/act_1``);
2. the dynamo exporter (opset 18): nodes are named ``node_linear_2`` and record their
   module scopes (``pkg.torch.onnx.name_scopes``) and aten op
   (``pkg.torch.onnx.class_hierarchy``, ``aten.linear.default``) in ``metadata_props``;
3. or the user's file (``--onnx FILE``), read by either rule.

No graph: ``ExportError`` naming each exporter's cause.

Which op made a node: with the TorchScript exporter, every call of a kept torch function
kind (``linear``) is traced inside a scope of its own (``op:linear``) in a second export;
its graph must equal the plain one op for op, and the plain export keeps its names (those
a user's own export has). With the dynamo exporter the node's aten op names the kind
(``aten.linear.default`` -> ``linear``, also for calls inside another function). A file
without that metadata gets the op of each node from a scoped TorchScript export of the
model when the two graphs are the same op for op.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

OPSET = 18
_SUFFIX = re.compile(r"_\d+$")  # the exporter's mark of a second call of one scope
_SCOPES = "pkg.torch.onnx.name_scopes"
_CLASSES = "pkg.torch.onnx.class_hierarchy"


class ExportError(Exception):
    """No exporter produced a graph; the message names each one's cause."""


@dataclass(frozen=True)
class Node:
    name: str
    op_type: str
    modules: frozenset[str]  # module paths whose code produced it
    op: str | None  # the torch function kind that produced it, when known


@dataclass
class Graph:
    nodes: list[Node]
    exporter: str  # "torchscript", "dynamo" or "file"
    data: bytes | None  # the serialized model to write as model.onnx (None for a file)
    ops_known: bool  # the graph says which torch op made its nodes (scopes or metadata)
    source: str | None = None  # the file's path, for a user's file


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Swallow what the exporters print: dynamo's progress lines on stdout and the
    TorchScript exporter's "Torch IR graph at exception" dump, written by C++ to fd 2."""
    saved: list[tuple[int, int]] = []
    with tempfile.TemporaryFile() as sink, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
            with contextlib.suppress(Exception):
                stream.flush()
            with contextlib.suppress(OSError):
                saved.append((fd, os.dup(fd)))
                os.dup2(sink.fileno(), fd)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                yield
        finally:
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)


def why(exc: BaseException) -> str:
    """The innermost cause of an exporter error, on one short line."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    line = " ".join(text.split("\n")[0].split()) if text else type(exc).__name__
    return f"{type(exc).__name__}: {line[:240]}"


@contextlib.contextmanager
def _op_scopes(kinds: set[str]) -> Iterator[None]:
    """Trace each call of a kind in ``kinds`` inside a scope ``op:<kind>`` (the name the
    TorchScript exporter then puts in the node's path)."""
    import torch

    from migrate.precision.sensitivity.units import op_name

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            state = torch._C._get_tracing_state()
            kind = op_name(func)
            if state is None or kind not in kinds:
                return func(*args, **kwargs)
            state.push_scope(torch._C._jit_onnx_create_full_scope_name(f"migrate.op.{kind}", f"op:{kind}"))
            try:
                return func(*args, **kwargs)
            finally:
                state.pop_scope()

    with Mode():
        yield


def _torchscript(model: Any, batch: tuple[tuple, dict], kinds: set[str]) -> bytes:
    import torch

    args, kwargs = batch
    buf = io.BytesIO()
    scopes = _op_scopes(kinds) if kinds else contextlib.nullcontext()
    with quiet(), scopes:
        torch.onnx.export(
            model,
            tuple(args),
            buf,  # type: ignore[arg-type]  # a file object is accepted
            kwargs=kwargs or None,
            dynamo=False,
            opset_version=OPSET,
        )
    return buf.getvalue()


def _dynamo(model: Any, batch: tuple[tuple, dict]) -> bytes:
    import torch

    args, kwargs = batch
    with quiet():
        program = torch.onnx.export(
            model, tuple(args), kwargs=kwargs or None, dynamo=True, opset_version=OPSET
        )
    assert program is not None
    return program.model_proto.SerializeToString()


def _unqualified(path: str) -> str:
    """The exporter's short name of a module path (``blocks.0.mlp.0`` -> ``mlp.0``)."""
    atoms = path.split(".")
    for i in range(len(atoms) - 1, -1, -1):
        if not atoms[i].isnumeric():
            return ".".join(atoms[i:])
    return path


class _Names:
    """Module paths from the scope parts of TorchScript node names."""

    def __init__(self, modules: set[str]) -> None:
        self.short: dict[str, list[str]] = {}
        for path in sorted(modules, key=len):
            self.short.setdefault(_unqualified(path), []).append(path)

    def child(self, parent: str, part: str) -> str | None:
        for short in (part, _SUFFIX.sub("", part)):
            for path in self.short.get(short, ()):
                if not parent or path.startswith(parent + "."):
                    return path
        return None

    def parse(self, name: str, kinds: set[str]) -> tuple[frozenset[str], str | None]:
        if not name.startswith("/"):
            return frozenset(), None
        found: list[str] = []
        op = None
        for part in name[1:].split("/")[:-1]:
            if part.startswith("op:"):
                kind = part[3:]
                op = kind if kind in kinds else _SUFFIX.sub("", kind)
                continue
            path = self.child(found[-1] if found else "", part)
            if path is None:
                break
            found.append(path)
        return frozenset(found), op


def _aten(hierarchy: str) -> str | None:
    """``aten.linear.default`` (the last class of a node's hierarchy) -> ``linear``."""
    try:
        last = ast.literal_eval(hierarchy)[-1]
    except (ValueError, SyntaxError, IndexError, TypeError):
        return None
    parts = str(last).split(".")
    return parts[1] if len(parts) >= 2 and parts[0] == "aten" else None


def read_nodes(proto: Any, modules: set[str], kinds: set[str]) -> tuple[list[Node], bool]:
    """Every node of ``proto`` with its modules and op; and whether the graph says which
    op made its nodes at all (dynamo metadata or scoped names)."""
    names = _Names(modules)
    nodes, with_meta = [], 0
    for n in proto.graph.node:
        meta = {p.key: p.value for p in n.metadata_props}
        if _SCOPES in meta:
            with_meta += 1
            try:
                scopes = ast.literal_eval(meta[_SCOPES])
            except (ValueError, SyntaxError):
                scopes = []
            mods = frozenset(s for s in scopes if isinstance(s, str) and s in modules)
            op = _aten(meta.get(_CLASSES, "[]"))
        else:
            mods, op = names.parse(n.name, kinds)
        nodes.append(Node(n.name, n.op_type, mods, op))
    scoped = any("/op:" in n.name for n in proto.graph.node)
    return nodes, with_meta > 0 or scoped


def same_ops(a: list[Node], b: list[Node]) -> bool:
    return [n.op_type for n in a] == [n.op_type for n in b]


def _load(data: bytes) -> Any:
    import onnx

    return onnx.load_model_from_string(data)


def _scoped_ops(
    model: Any, batch, modules: set[str], kinds: set[str], plain: list[Node]
) -> list[Node] | None:
    """``plain`` with the modules and op of each node taken from a scoped TorchScript
    export of the same graph; None when that export fails or differs."""
    try:
        scoped, _ = read_nodes(_load(_torchscript(model, batch, kinds)), modules, kinds)
    except Exception:  # noqa: BLE001 - any exporter failure means: not attributable
        return None
    if not same_ops(plain, scoped):
        return None
    return [replace(p, modules=s.modules, op=s.op) for p, s in zip(plain, scoped, strict=True)]


def graph_for(
    model: Any,
    batch: tuple[tuple, dict],
    kinds: set[str],
    onnx_file: Any = None,
    onnx_name: str | None = None,
) -> Graph:
    """The graph the keep files name (module doc): ``onnx_file`` (a ModelProto read from
    ``onnx_name``) or an export; ExportError when none can be had."""
    modules = {n for n, _ in model.named_modules() if n}
    if onnx_file is not None:
        nodes, known = read_nodes(onnx_file, modules, kinds)
        if kinds and not known:
            got = _scoped_ops(model, batch, modules, kinds, nodes)
            nodes, known = (got, True) if got is not None else (nodes, False)
        return Graph(nodes, "file", None, known, onnx_name)
    causes = []
    try:
        data = _torchscript(model, batch, set())
        nodes, _ = read_nodes(_load(data), modules, kinds)
        got = _scoped_ops(model, batch, modules, kinds, nodes) if kinds else nodes
        if got is not None:
            return Graph(got, "torchscript", data, True)
        causes.append("TorchScript exporter: the export with op scopes differs from the plain one")
    except Exception as exc:  # noqa: BLE001 - the exporter raises many types
        causes.append(f"TorchScript exporter: {why(exc)}")
    try:
        data = _dynamo(model, batch)
        nodes, known = read_nodes(_load(data), modules, kinds)
        return Graph(nodes, "dynamo", data, known)
    except Exception as exc:  # noqa: BLE001
        causes.append(f"dynamo exporter: {why(exc)}")
    raise ExportError("ONNX export failed (" + "; ".join(causes) + ")")
