"""The device module is named once where a port would repeat it or overflow a line
(migrate/fix/hoist.py), on code shaped like torchtune's memory logging and recipes."""

from __future__ import annotations

import ast

from migrate.fix.hoist import NAME, helper_calls, hoist

from .goldens import SAMPLES, migrate_cli

MEMORY = """import logging

import torch

log = logging.getLogger(__name__)


def get_memory_stats(device: torch.device, reset_stats: bool = True) -> dict:
    if device.type != "cuda":
        raise ValueError("Logging memory stats is only supported on CUDA devices")
    peak_memory_active = torch.cuda.memory_stats().get("active_bytes.all.peak", 0) / (1024**3)
    peak_mem_alloc = torch.cuda.max_memory_allocated(device) / (1024**3)
    peak_mem_reserved = torch.cuda.max_memory_reserved(device) / (1024**3)
    if reset_stats:
        torch.cuda.reset_peak_memory_stats(device)
    return {"peak_memory_active": peak_memory_active, "peak_memory_alloc": peak_mem_alloc,
            "peak_memory_reserved": peak_mem_reserved}


def cleanup_before_training() -> None:
    torch.cuda.empty_cache()
"""

RECIPE = """import logging

import torch

logger = logging.getLogger(__name__)


class InferenceRecipe:
    def generate(self, cfg):
        t = 1.0
        logger.info(f"Time for inference: {t:.02f} sec total, {t:.02f} tokens/sec, {t:.02f}")
        logger.info(f"Memory used: {torch.cuda.max_memory_allocated() / 1e9:.02f} GB, {t:.02f}")
"""


def _port(tmp_path, name: str, text: str) -> str:
    path = tmp_path / "pkg" / name
    path.parent.mkdir(exist_ok=True)
    (path.parent / "__init__.py").write_text("")
    path.write_text(text)
    result = migrate_cli(["apply", str(path), "--no-cache"])
    assert result.exit_code == 0, result.output
    return path.read_text()


def test_a_line_overflowing_with_the_helper_binds_it_once_for_the_function(tmp_path):
    out = _port(tmp_path, "memory.py", MEMORY)
    body = out[out.index("def get_memory_stats") : out.index("def cleanup_before_training")]
    assert body.count("get_device_module()") == 1
    assert f"    {NAME} = get_device_module()\n    peak_memory_active = {NAME}.memory_stats()" in body
    assert f"        {NAME}.reset_peak_memory_stats(device)" in body
    # no line too long in that function: written inline, as maintainers mostly do
    assert "    get_device_module().empty_cache()\n" in out[out.index("def cleanup") :]
    ast.parse(out)
    again = migrate_cli(["apply", str(tmp_path / "pkg"), "--check", "--no-cache"])
    assert again.exit_code == 0, again.output


def test_an_f_string_too_long_with_the_helper_gets_it_bound_before_its_statement(tmp_path):
    out = _port(tmp_path, "generate.py", RECIPE)
    limit = max(len(line) for line in RECIPE.splitlines())
    assert max(len(line) for line in out.splitlines()) <= limit
    assert f"        {NAME} = get_device_module()\n        logger.info(" in out
    assert '"Memory used: {' + NAME + ".max_memory_allocated() / 1e9:.02f} GB" in out


def test_helper_calls_are_device_modules_used_for_an_attribute():
    found = helper_calls(
        [
            "utils.get_torch_device_namespace().max_memory_allocated()",
            "torch.device(get_device_type())",
            "get_device_name().upper()",
            "torch.accelerator.current_accelerator().type",
            "get_device_module().empty_cache()",
        ]
    )
    assert found == {"utils.get_torch_device_namespace", "get_device_module"}


def _bound_twice(new: str) -> str:
    return hoist("", new, {"get_device_module"}, limit=20)


def test_nothing_is_hoisted_where_the_name_is_taken_or_the_use_is_at_top_level():
    taken = "def f(torch_device):\n" + "    get_device_module().a()\n" * 3
    assert _bound_twice(taken) == taken
    top = "get_device_module().a()\n" * 3
    assert _bound_twice(top) == top


def test_the_binding_goes_in_the_deepest_block_holding_every_use_and_never_between_if_elif():
    code = (
        "def f(x):\n"
        "    if x:\n"
        "        pass\n"
        "    elif get_device_module().a():\n"
        "        get_device_module().b()\n"
        "    else:\n"
        "        get_device_module().c()\n"
    )
    out = _bound_twice(code)
    assert out.startswith(f"def f(x):\n    {NAME} = get_device_module()\n    if x:\n")
    assert out.count("get_device_module()") == 1
    nested = (
        "def f(x):\n"
        "    for i in x:\n"
        "        y = 1\n"
        "        get_device_module().a(get_device_module().b())\n"
        "        get_device_module().c()\n"
    )
    out = _bound_twice(nested)
    assert f"        y = 1\n        {NAME} = get_device_module()\n        {NAME}.a({NAME}.b())" in out


def test_only_lines_the_port_changed_are_hoisted():
    old = "def f():\n" + "    get_device_module().a()\n" * 2
    new = old + "    get_device_module().b()\n"
    assert (
        hoist(old, new, {"get_device_module"}, limit=20)
        == old + f"    {NAME} = get_device_module()\n    {NAME}.b()\n"
    )


def test_lines_within_the_limit_keep_the_helper_inline_and_nested_functions_are_their_own():
    code = (
        "def f():\n"
        "    get_device_module().a()\n"
        "    def g():\n"
        "        get_device_module().a_much_longer_name()\n"
        "    return g\n"
    )
    assert hoist("", code, {"get_device_module"}, limit=200) == code
    out = hoist("", code, {"get_device_module"}, limit=40)
    assert out == (
        "def f():\n"
        "    get_device_module().a()\n"
        "    def g():\n"
        f"        {NAME} = get_device_module()\n"
        f"        {NAME}.a_much_longer_name()\n"
        "    return g\n"
    )


def _path_by_walking(fn, target):
    """The block path hoist.py once found by walking every statement for every call: the
    reference the one-walk index (_Parents) must agree with."""

    def holds(node) -> bool:
        return any(n is target for n in ast.walk(node))

    def inner(stmt):
        if isinstance(stmt, (ast.If, ast.While)) and holds(stmt.test):
            return None
        if isinstance(stmt, (ast.For, ast.AsyncFor)) and (holds(stmt.iter) or holds(stmt.target)):
            return None
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and any(holds(i) for i in stmt.items):
            return None
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if (
                isinstance(block, list)
                and block
                and isinstance(block[0], ast.stmt)
                and any(map(holds, block))
            ):
                if (
                    isinstance(stmt, ast.If)
                    and name == "orelse"
                    and len(block) == 1
                    and isinstance(block[0], ast.If)
                ):
                    return None
                return block
        for handler in getattr(stmt, "handlers", ()):
            if holds(handler):
                return handler.body
        return None

    path, block = [], fn.body
    while True:
        for i, stmt in enumerate(block):
            if holds(stmt):
                path.append((block, i))
                block = inner(stmt)
                if block is None:
                    return path
                break
        else:
            return None


BLOCKS = """
def f(t, d=torch.cuda.current_device()):
    if torch.cuda.is_available():
        x = torch.cuda.current_device()
    elif torch.cuda.device_count():
        y = 1
    else:
        with torch.cuda.device(0):
            z = torch.cuda.current_device()
    for i in range(torch.cuda.device_count()):
        try:
            w = torch.cuda.current_device()
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
            v = torch.cuda.current_device()
        finally:
            u = torch.cuda.current_device()
    while torch.cuda.is_available():
        match t:
            case 1:
                torch.cuda.synchronize()
    return lambda: torch.cuda.current_device()
"""


def test_the_block_path_of_every_node_is_the_one_walking_finds():
    from migrate.fix.hoist import _Parents

    sources = [BLOCKS, MEMORY, *(p.read_text() for p in sorted(SAMPLES.rglob("*.py")))]
    checked = 0
    for text in sources:
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            parents = _Parents(fn)
            for node in ast.walk(fn):
                if not isinstance(node, (ast.expr, ast.stmt)):
                    continue  # contexts and operators are shared singletons, not places
                want = _path_by_walking(fn, node)
                got = parents.block_path(node)
                as_ids = lambda p: None if p is None else [(id(b), i) for b, i in p]  # noqa: E731
                assert as_ids(got) == as_ids(want), (ast.dump(node)[:80], fn.name)
                checked += 1
    assert checked > 1000


def test_a_device_type_chosen_twice_in_a_function_is_bound_once(tmp_path):
    """pytorch/examples' fsdp_tp_example.py: `"npu" if is_npu_available() else "cuda"`
    written at each device use; an engineer names it once."""
    (tmp_path / "tp.py").write_text(
        "import torch\nfrom torch.distributed.device_mesh import init_device_mesh\n\n\n"
        "def main(model):\n"
        '    mesh = init_device_mesh("cuda", (2,))\n'
        '    model = model.to("cuda")\n'
        '    x = torch.randn(4, device="cuda")\n'
        "    return mesh, model(x)\n\n\n"
        "def once(model):\n"
        '    return model.to("cuda")\n'
    )
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = (tmp_path / "tp.py").read_text()
    assert (
        '    device_type = "npu" if is_npu_available() else "cuda"\n'
        "    mesh = init_device_mesh(device_type, (2,))\n" in out
    )
    assert "    model = model.to(device_type)\n    x = torch.randn(4, device=device_type)\n" in out
    assert '    return model.to("npu" if is_npu_available() else "cuda")\n' in out  # once: inline
    assert out.count("device_type = ") == 1
    again = migrate_cli(["apply", str(tmp_path), "--check", "--no-cache"])
    assert again.exit_code == 0, again.output


def test_type_choices_are_helper_spellings_in_the_files_quotes():
    found = helper_calls(["x.to('npu' if is_npu_available() else 'cuda')"])
    assert found == {"'npu' if is_npu_available() else 'cuda'"}
    text = "def f(m):\n    a = m.to('npu' if c() else 'cuda')\n    return m.to('npu' if c() else 'cuda', a)\n"
    out = hoist(text.replace("'npu' if c() else 'cuda'", "'cuda'"), text, {"'npu' if c() else 'cuda'"})
    assert out.startswith(
        "def f(m):\n    device_type = 'npu' if c() else 'cuda'\n    a = m.to(device_type)\n"
    )


def test_the_bound_device_type_takes_the_files_quote_where_an_f_string_used_the_other(tmp_path):
    """ms-swift's grpo_trainer.py: the first use sits in `f'cuda:{i}'`, whose field the port
    spells with double quotes; the file writes single ones."""
    (tmp_path / "pick.py").write_text(
        "import torch\n\n\ndef pick(world, x):\n"
        "    first = torch.device(f'cuda:{world}')\n"
        "    return first, torch.device(f'cuda:{world + 1}'), 'cpu'\n"
    )
    assert migrate_cli(["apply", str(tmp_path), "--no-cache"]).exit_code == 0
    out = (tmp_path / "pick.py").read_text()
    assert "    device_type = 'npu' if is_npu_available() else 'cuda'\n" in out
    assert "    first = torch.device(f'{device_type}:{world}')\n" in out


def test_a_function_declaring_the_name_global_keeps_the_choice_inline():
    """`global device_type` (the function used to set the module's): binding the choice
    there would overwrite the module's device_type on every call."""
    choice = '"npu" if c() else "cuda"'
    body = f"    a = m.to({choice})\n    return m.to({choice}, a)\n"
    for head, hoisted in (("    global device_type\n", False), ("", True)):
        text = f'device_type = "cpu"\n\n\ndef f(m):\n{head}{body}'
        out = hoist(text.replace(choice, '"cuda"'), text, helper_calls([text]))
        assert (f"    device_type = {choice}\n" in out) is hoisted, out
