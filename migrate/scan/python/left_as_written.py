"""Code that stays as written in every target (the awareness regions of
scan/python/awareness.py that do not depend on an NPU arm): NVIDIA-only code (NVML,
nvidia-smi, Horovod), a constant naming a backend itself, a type check's class, a
fallback for an older torch, and a test named for the backend or vendor it tests."""

from __future__ import annotations

import ast
import re

from migrate.core.effort_spec import defaults
from migrate.scan.npu_names import CUDA_WORD
from migrate.scan.python.torch_floors import catches_missing_api, fallback_floor

_NVIDIA = re.compile(r"pynvml|\bnvml|nvidia-smi|nvidia_smi|\bhorovod|\bhvd\.", re.IGNORECASE)
_HOROVOD = re.compile(r"\bhorovod|\bhvd\.")
_NVML = re.compile(r"pynvml|\bnvml|nvidia-smi|nvidia_smi", re.IGNORECASE)
# libraries with no NPU build: a CUDA test guarding them keeps them off the NPU
_CUDA_ONLY_LIBS = re.compile(r"\bxformers|flash_attn")
_NVIDIA_ONLY = "NVIDIA-only code (NVML, nvidia-smi, Horovod): it never runs on an NPU"
_CUDA_ONLY_GUARD = "guards a CUDA-only library (xformers, flash-attn): opened to the NPU, it would run there"
_NVIDIA_DEF_LINES = 60  # a def this short that asks NVML is an NVML tool, not a program


def nvidia_only(f, nodes) -> list[tuple[int, int, str]]:
    """Regions that stay as written in every target: a block that asks NVML or nvidia-smi or
    runs Horovod (opening its CUDA test to the NPU would run NVIDIA-only code there), and a
    constant naming a backend itself (ignite's ``NCCL = "nccl"``: a name, not a choice). A
    CUDA test on a block that names a library with no NPU build (xformers, flash-attn) stays
    too: diffusers' ``elif not torch.cuda.is_available(): raise`` before xformers' attention,
    ``if torch.cuda.is_available() and is_flash_attn_2_available()`` with an SDPA else."""
    out = []
    if _NVIDIA.search(f.text) or _CUDA_ONLY_LIBS.search(f.text):
        for node in nodes(ast.If):  # only under a test that CUDA (or NVML) is there
            source, test = f.source(node), f.source(node.test)
            if not (CUDA_WORD.search(test) or _NVIDIA.search(test)):
                continue
            nvidia, library = _NVIDIA.search(source), _CUDA_ONLY_LIBS.search(source)
            if nvidia:
                out.append((f.span(node)[0], f.span(node.body[-1])[1], _NVIDIA_ONLY))  # not its else
            elif library:  # `if not cuda: raise ... else: <the library>`: its else too
                negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
                end = f.span(node)[1] if negated else f.span(node.body[-1])[1]
                out.append((f.span(node)[0], end, _CUDA_ONLY_GUARD))
        for node in nodes(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            lines = (node.end_lineno or node.lineno) - node.lineno
            source = f.source(node)
            tool = lines <= _NVIDIA_DEF_LINES and _NVML.search(source) and _tests_cuda(f, node)
            horovod = isinstance(node, ast.ClassDef) and _HOROVOD.search(source)  # Horovod has no NPU
            if _NVIDIA.search(node.name) or tool or horovod:
                out.append((*f.span(node), _NVIDIA_ONLY))  # ignite's GpuInfo: an NVML tool
    for node in nodes(ast.Assign):
        value = node.value
        named = (
            value.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str)
            else value.attr
            if isinstance(value, ast.Attribute)
            else None
        )
        if (
            named
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.lower() == named.lower()
            and CUDA_WORD.search(named)
        ):  # `NCCL = "nccl"`, `NCCL = dist.Backend.NCCL`
            out.append((*f.span(node), f"`{node.targets[0].id}` names the {named} backend itself"))
    for node in nodes(ast.FunctionDef, ast.AsyncFunctionDef):
        if _VENDOR_PREDICATE.search(node.name):  # mmengine's is_cuda_available()
            out.append((*f.span(node), f"`{node.name}()` asks for that vendor by its name"))
    return out


# a predicate whose name says which vendor it asks for (is_cuda_available, has_nccl,
# cuda_is_available): ported, it would answer True on an NPU, and a caller that asks it
# before an NPU check (mmengine's get_device()) would take the CUDA path there
_VENDOR_PREDICATE = re.compile(
    r"^_*(?:(?:is|has|can|supports?)_(?:\w+_)?(?:cuda|nccl|nvidia)|(?:cuda|nccl)_(?:is_)?available)",
    re.IGNORECASE,
)
# a name saying which backend or vendor its value tests: is_nccl_backend, group_nccl_ok,
# self.is_cuda (not `use_nccl`, `nccl_backend`: choices, not tests)
_VENDOR_TEST = re.compile(r"^_*is_(nccl|cuda)|._nccl_.", re.IGNORECASE)


def vendor_tests(f, nodes) -> list[tuple[int, int, str]]:
    """Tests that stay as written but want a person: a comparison assigned to a name that
    says which backend or vendor it tests (mmengine's ``is_nccl_backend = group_backend ==
    torch_dist.Backend.NCCL`` asks which backend the group *has*; ported, a variable named
    for NCCL would mean HCCL on an NPU). Engineers keep it and add the HCCL/NPU test beside
    it (``is_hccl_backend = group_backend == 'hccl'``)."""
    out = []
    for node in nodes(ast.Assign, ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or node.value is None:
            continue
        target = targets[0]
        name = (
            target.id
            if isinstance(target, ast.Name)
            else target.attr
            if isinstance(target, ast.Attribute)
            else ""
        )
        if not _VENDOR_TEST.search(name) or not _compares(node.value):
            continue
        vendor = "NCCL" if "nccl" in name.lower() else "CUDA"
        twin = "an HCCL" if vendor == "NCCL" else "an NPU"
        out.append(
            (*f.span(node.value), f"`{name}` tests for {vendor} by its name: {twin} test goes beside it")
        )
    return out


def _compares(value: ast.expr) -> bool:
    """A comparison, or an ``and``/``or``/``not`` of tests holding one."""
    if isinstance(value, ast.Compare):
        return True
    if isinstance(value, ast.BoolOp):
        return any(_compares(v) for v in value.values)
    return isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not) and _compares(value.operand)


def _tests_cuda(f, node) -> bool:
    """Does the def hold an ``if`` that asks for CUDA (it guards itself to NVIDIA hosts)?"""
    return any(isinstance(n, ast.If) and CUDA_WORD.search(f.source(n.test)) for n in ast.walk(node))


def needs_no_port(f, nodes) -> list[tuple[int, int, str]]:
    """Code that needs no port, in every target: a type check's class (``isinstance(x,
    torch.cuda.FloatTensor)`` only asks), a probe of torch's names (``getattr(torch.cuda.amp,
    "autocast") is not None``), and a fallback for an older torch (the ``except
    ImportError`` arm of ``try: from torch.amp import GradScaler``, the ``except
    (AttributeError, TypeError)`` arm of a ``try`` calling ``torch.autocast``: torch_npu's
    torch has the name, the fallback never runs)."""
    out = []
    for node in nodes(ast.Call):
        if (
            isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            out.append((*f.span(node.args[1]), "a type check, which runs nothing on the device"))
    for node in nodes(ast.Call):
        if _probes_cuda(f, node):
            out.append((*f.span(node), "asks whether torch has the name: runs nothing on the device"))
    for node in nodes(ast.Try):
        imports = any(_imports_torch(s) for s in node.body)
        for handler in node.handlers:
            if not handler.body:
                continue
            if (imports and catches_missing_api(handler)) or _newer_than_needed(f, handler):
                start, end = f.span(handler.body[0])[0], f.span(handler.body[-1])[1]
                out.append(
                    (start, end, "a fallback for an older torch: it never runs with torch_npu's torch")
                )
    return out


def _probes_cuda(f, call: ast.Call) -> bool:
    """``hasattr(torch.cuda.amp, "autocast")``, or ``getattr(torch.cuda.amp, "autocast")``
    only tested (``is not None``, an ``if``/``and``/``not`` operand), never called: timm's
    has_native_amp probe asks which torch it runs on."""
    if not (isinstance(call.func, ast.Name) and call.func.id in ("hasattr", "getattr")):
        return False
    if len(call.args) < 2 or not isinstance(call.args[1], ast.Constant):
        return False
    owner = f.qualname(call.args[0]) or ""
    if not (owner == "torch.cuda" or owner.startswith("torch.cuda.")):
        return False
    if call.func.id == "hasattr":
        return True
    parent = f.parent(call)
    if isinstance(parent, ast.Compare):
        return all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)
    tested = isinstance(parent, (ast.If, ast.While, ast.IfExp)) and parent.test is call
    return tested or isinstance(parent, (ast.BoolOp, ast.UnaryOp))


def _imports_torch(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.ImportFrom):
        return not stmt.level and (stmt.module or "").split(".")[0] == "torch"
    return isinstance(stmt, ast.Import) and any(a.name.split(".")[0] == "torch" for a in stmt.names)


def _newer_than_needed(f, handler: ast.ExceptHandler) -> bool:
    """Is ``handler`` the fallback of a ``try`` using a torch API that every torch torch_npu
    runs with has, one an older torch lacked (timm's ``try: amp_autocast =
    partial(torch.autocast, ...)`` ``except (AttributeError, TypeError):`` fallback "to CUDA
    only AMP for PyTorch < 1.10")?"""
    floor = fallback_floor(f, handler)
    oldest = tuple(int(x) for x in defaults().oldest_torch.split(".")[:2])
    return floor is not None and floor <= oldest
