"""--target portable keeps CUDA's environment variables and adds Ascend's
(migrate/scan/python/portable_env.py); command templates are found in every target."""

from __future__ import annotations

import os
import textwrap

from porting import port

from migrate.core.rules import default_rules
from migrate.fix.run import engine_scan

RULES = list(default_rules())

# opencompass runners/local.py before its NPU port: the variable is read, counted and set
# on a child's command line
RUNNER = """\
    import os
    import re


    def get_command_template(gpu_ids):
        tmpl = 'CUDA_VISIBLE_DEVICES=' + ','.join(str(i) for i in gpu_ids)
        return tmpl + ' {task_cmd}'


    def visible():
        if 'CUDA_VISIBLE_DEVICES' in os.environ:
            return [int(i) for i in re.findall(r'\\d+', os.getenv('CUDA_VISIBLE_DEVICES'))]
        return []


    def pin(ids):
        os.environ['CUDA_VISIBLE_DEVICES'] = ','.join(map(str, ids))
        return f'CUDA_VISIBLE_DEVICES={ids[0]} python x.py'
    """


def findings(code: str, target: str = "portable"):
    return engine_scan(textwrap.dedent(code), "t.py", "python", RULES, target)


def test_npu_target_renames_reads_writes_and_command_templates():
    out = port(RUNNER, "npu")
    assert "CUDA_VISIBLE_DEVICES" not in out
    assert "tmpl = 'ASCEND_RT_VISIBLE_DEVICES=' + ','.join" in out
    assert "return f'ASCEND_RT_VISIBLE_DEVICES={ids[0]} python x.py'" in out


def test_portable_sets_both_and_reads_the_hosts_own(monkeypatch):
    out = port(RUNNER)
    set_both = "os.environ['CUDA_VISIBLE_DEVICES'] = ','.join(map(str, ids))\n"
    assert set_both + "    os.environ['ASCEND_RT_VISIBLE_DEVICES'] = ','.join(map(str, ids))\n" in out
    assert (
        "('ASCEND_RT_VISIBLE_DEVICES' if is_npu_available() else 'CUDA_VISIBLE_DEVICES') in os.environ" in out
    )
    assert "os.getenv('ASCEND_RT_VISIBLE_DEVICES' if is_npu_available() else 'CUDA_VISIBLE_DEVICES')" in out
    assert port(out) == out  # a fixpoint: the port's forms are not findings again
    assert all(f.npu_aware or f.fix is None for f in findings(out))
    scope: dict = {}
    exec(compile(out, "t.py", "exec"), scope)
    for npu, name in ((False, "CUDA_VISIBLE_DEVICES"), (True, "ASCEND_RT_VISIBLE_DEVICES")):
        scope["is_npu_available"] = lambda npu=npu: npu
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
        assert scope["get_command_template"]([0, 1]) == f"{name}=0,1 {{task_cmd}}"
        assert scope["pin"]([2, 3]) == f"{name}=2 python x.py"
        assert scope["visible"]() == [2, 3]  # each host reads back what it set
        assert os.environ["CUDA_VISIBLE_DEVICES"] == os.environ["ASCEND_RT_VISIBLE_DEVICES"] == "2,3"


def test_messages_and_docstrings_are_not_command_templates():
    code = '''\
        """Run with CUDA_VISIBLE_DEVICES=0 to use one GPU."""
        import logging
        logging.info("set CUDA_VISIBLE_DEVICES=0,1 first")
        def f(parser, x):
            parser.add_argument("--gpus", help="like CUDA_VISIBLE_DEVICES=0,1")
            raise ValueError(f"bad CUDA_VISIBLE_DEVICES={x}")
        '''
    assert [f for f in findings(code, "npu") if f.rule == "MIG701"] == []


def test_a_template_with_a_variable_that_has_no_counterpart_is_reported():
    code = "cmd = 'NCCL_DEBUG=INFO ' + base\n"
    (found,) = [f for f in findings(code, "npu") if f.rule.startswith("MIG70")]
    assert found.rule == "MIG702" and found.fix is None


# ComfyUI main.py and MinerU's router before their NPU ports (#9663, #4846): the engineers
# kept the CUDA write and set the Ascend name on a line of its own
WRITES = """\
    import os


    def pin(args, env, devices):
        if args.cuda_device is not None:
            os.environ['CUDA_VISIBLE_DEVICES'] = str(args.cuda_device)
            os.environ['HIP_VISIBLE_DEVICES'] = str(args.cuda_device)
        env["CUDA_VISIBLE_DEVICES"] = next(devices)  # one id per child
        return env


    def one(env):
        if env: env["CUDA_VISIBLE_DEVICES"] = "1"
    """


def test_a_write_on_its_own_line_gains_the_ascend_write_below_it(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    out = port(WRITES)
    # a value without side effects is written again, as the engineers did
    assert (
        "        os.environ['CUDA_VISIBLE_DEVICES'] = str(args.cuda_device)\n"
        "        os.environ['ASCEND_RT_VISIBLE_DEVICES'] = str(args.cuda_device)\n"
        "        os.environ['HIP_VISIBLE_DEVICES']" in out
    )
    # a call that may differ the second time is not: the value just set is copied
    assert (
        '    env["CUDA_VISIBLE_DEVICES"] = next(devices)  # one id per child\n'
        '    env["ASCEND_RT_VISIBLE_DEVICES"] = env["CUDA_VISIBLE_DEVICES"]\n' in out
    )
    # a write sharing its line with its `if` sets both in the one statement
    assert 'if env: env["CUDA_VISIBLE_DEVICES"] = env["ASCEND_RT_VISIBLE_DEVICES"] = "1"' in out
    assert port(out) == out
    scope: dict = {}
    exec(compile(out, "t.py", "exec"), scope)

    class Args:
        cuda_device = 3

    env = scope["pin"](Args(), {}, iter(["5", "6"]))  # next() ran once: both got "5"
    assert env == {"CUDA_VISIBLE_DEVICES": "5", "ASCEND_RT_VISIBLE_DEVICES": "5"}
    assert os.environ["ASCEND_RT_VISIBLE_DEVICES"] == os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    scope["one"](env)
    assert env == {"CUDA_VISIBLE_DEVICES": "1", "ASCEND_RT_VISIBLE_DEVICES": "1"}


def test_a_project_that_sets_the_ascend_name_a_line_later_is_left_as_is():
    code = (
        "import os\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = ids\n"
        "os.environ['HIP_VISIBLE_DEVICES'] = ids\n"
        "os.environ['ASCEND_RT_VISIBLE_DEVICES'] = ids\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = other\n"
    )
    out = port(code)
    # the first write has its Ascend twin; the second, after it, gets one of its own
    assert out.count("ASCEND_RT_VISIBLE_DEVICES") == 2
    assert out.endswith(
        "os.environ['CUDA_VISIBLE_DEVICES'] = other\nos.environ['ASCEND_RT_VISIBLE_DEVICES'] = other\n"
    )
