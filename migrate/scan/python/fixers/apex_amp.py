"""apex.amp.initialize(model, optimizer, opt_level=...) -> native AMP.

``model, optimizer = amp.initialize(model, optimizer, opt_level="O1")`` is removed and a
note takes its place telling what native AMP needs (autocast around the forward pass, a
GradScaler for the loss). When the call's result goes elsewhere, the call becomes its
arguments: ``(model, optimizer)`` or ``model``.
"""

from __future__ import annotations

import ast

from migrate.core.findings import Draft, Edit
from migrate.scan.python.fixers import FixContext, fixer
from migrate.scan.python.fixers._support import bind_args, enclosing_statement, module_tree

PARAMS = [
    "models",
    "optimizers",
    "enabled",
    "opt_level",
    "cast_model_type",
    "patch_torch_functions",
    "keep_batchnorm_fp32",
    "master_weights",
    "loss_scale",
    "cast_model_outputs",
    "num_losses",
    "verbosity",
    "min_loss_scale",
    "max_loss_scale",
]

NOTE = (
    "# migrate: apex.amp.initialize({opt}) removed.\n"
    '# Native AMP: run the forward pass under torch.autocast("npu", dtype=torch.float16)\n'
    "# and scale the loss with torch.npu.amp.GradScaler():\n"
    "# scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update().\n"
)

DESCRIPTION = (
    "remove apex.amp.initialize; mixed precision must be re-enabled with torch.autocast "
    "and a GradScaler (see the note left in the code): until then training runs in fp32"
)


def _names(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Tuple | ast.List) and all(isinstance(e, ast.Name) for e in node.elts):
        return [e.id for e in node.elts if isinstance(e, ast.Name)]
    return None


@fixer("apex-amp-initialize")
def apex_amp_initialize(ctx: FixContext, call: ast.Call) -> Draft | None:
    bound = bind_args(call, PARAMS)
    if bound is None or "models" not in bound:
        return None
    returned = [bound["models"]] + ([bound["optimizers"]] if "optimizers" in bound else [])
    sources = [ctx.source(n) for n in returned]
    opt = ctx.source(bound["opt_level"]) if "opt_level" in bound else ""
    found = enclosing_statement(module_tree(ctx.text), call)
    if found is not None:
        stmt, body = found
        same = (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and stmt.value.lineno == call.lineno
            and stmt.value.col_offset == call.col_offset
            and _names(stmt.targets[0]) == [s.strip() for s in sources]
        )
        if same and len(body) > 1:
            edit = _replace_statement(ctx, stmt, opt)
            if edit is not None:
                return Draft(DESCRIPTION, [edit])
    text = sources[0] if len(sources) == 1 else f"({', '.join(sources)})"
    return Draft(DESCRIPTION, [ctx.replace(call, text)])


def _replace_statement(ctx: FixContext, stmt: ast.stmt, opt: str) -> Edit | None:
    """The statement's lines become the note (same indentation); None if the lines hold
    anything else (another statement after `;`, a trailing comment)."""
    lines = ctx.index
    first = lines.starts[stmt.lineno - 1]
    last = stmt.end_lineno or stmt.lineno
    end = lines.starts[last] if last < len(lines.starts) else len(ctx.text)
    start, stop = ctx.span(stmt)
    if ctx.text[first:start].strip() or ctx.text[stop:end].strip():
        return None
    line = lines.line_text(stmt.lineno)
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    note = NOTE.format(opt=f"opt_level={opt}" if opt else "")
    note = "".join(indent + ln + "\n" for ln in note.splitlines())
    if end == len(ctx.text) and not ctx.text.endswith("\n"):
        note = note[:-1]
    return Edit(first, end, note)
