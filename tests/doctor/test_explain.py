"""`migrate doctor --explain CODE` and `--log FILE`: every code of the table explained, codes
and messages found in logs where CANN and torch_npu print them (and nowhere else), each
once with its first line; hostile and huge inputs read in bounded pieces."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from migrate.cli import app
from migrate.core.errors import UsageError
from migrate.doctor.explain import explain_arg, explain_json, render_findings
from migrate.doctor.logscan import scan_logs
from migrate.doctor.tables import error_table

TABLE = error_table()


def _run(*args: str, stdin: str | None = None):
    result = CliRunner().invoke(app, ["doctor", *args], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout


def _usage(*args: str) -> str:
    """The one-line message a usage error (exit 2 from the CLI entry point) carries."""
    result = CliRunner().invoke(app, ["doctor", *args])
    assert isinstance(result.exception, UsageError), result.output
    return str(result.exception)


def _cli(*args: str, cwd=None, stdin=None):
    """The installed command in a subprocess: exit code, stdout, stderr."""
    res = subprocess.run(
        [sys.executable, "-m", "migrate", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        input=stdin,
    )
    return res.returncode, res.stdout, res.stderr


# -- --explain ---------------------------------------------------------------------------------


def test_every_code_in_the_table_is_explained():
    for code, entry in TABLE.codes.items():
        (finding,) = explain_json(code, explain_arg(code))["findings"]
        assert finding["known"] and finding["key"] == code and finding["name"] == entry.title
        assert finding["meaning"] == entry.meaning and finding["fix"] == entry.fix
        assert finding["sources"] == [s.cite() for s in entry.sources]
        assert render_findings(explain_arg(code.lower())).startswith(f"{code} {entry.title}")


@pytest.mark.parametrize("code", ["507015", "E19010", "EJ0001"])
def test_codes_are_explained_by_the_command(code):
    status, out = _run("--explain", code, "--format", "json")
    data = json.loads(out)
    assert status == 0 and data["found"] is True
    assert data["findings"][0]["name"] == TABLE.codes[code].title


@pytest.mark.parametrize("key", [m.key for m in TABLE.messages])
def test_every_message_id_is_explained(key):
    status, out = _run("--explain", key)
    assert status == 0
    assert out.startswith(f"{key} message") and "fix:" in out


def test_text_explanation():
    status, out = _run("--explain", "507015")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "507015 ACL_ERROR_RT_AICORE_EXCEPTION (Runtime)"
    assert lines[1].startswith("    meaning: An AI Core kernel faulted on the device.")
    assert any("ASCEND_LAUNCH_BLOCKING=1" in line for line in lines if "fix:" in line)
    assert lines[-1].startswith("    sources: hicann/runtime:include/external/acl/error_codes/")


@pytest.mark.parametrize(
    "arg,key",
    [
        ("ei0006", "EI0006"),
        (" EJ0001 ", "EJ0001"),
        ("ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", "507046"),
        ("ERR00100", "ERR00100"),
        ("ERR02200", "ERR02200"),
        (
            "RuntimeError: Two accelerators cannot be used at the same time in PyTorch: npu and cuda.",
            "two-accelerators",
        ),
        ("NPU function error: AclrtSynchronizeStreamWithTimeout, error code is 507035", "507035"),
    ],
)
def test_explain_accepts_codes_names_and_pasted_messages(arg, key):
    status, out = _run("--explain", arg, "--format", "json")
    assert status == 0
    assert key in [f["key"] for f in json.loads(out)["findings"]]


@pytest.mark.parametrize(
    "arg,key",
    [
        ("\uff15\uff10\uff17\uff10\uff11\uff15", "507015"),  # full-width, as an IME types it
        ("\u0665\u0660\u0667\u0660\u0661\u0665", "507015"),  # Arabic-Indic
        ("\u06f5\u06f0\u06f7\u06f0\u06f1\u06f5", "507015"),  # Extended Arabic-Indic (Persian)
        ("\u0e55\u0e50\u0e57\u0e50\u0e51\u0e55", "507015"),  # Thai
        ("\uff25\uff29\uff10\uff10\uff10\uff16", "EI0006"),  # full-width letters and digits
        ("\uff45\uff49\uff10\uff10\uff10\uff16", "EI0006"),  # ... lower case
        ("ERR\u0660\u0660\u0661\u0660\u0660", "ERR00100"),
        ("error code is \uff15\uff10\uff17\uff10\uff13\uff15", "507035"),  # in a pasted message
    ],
)
def test_codes_in_other_digits_are_explained_as_their_ascii_code(arg, key):
    """docs/contracts.md §8: a code is recognised whatever digits it is typed in (NFKC and
    each digit's decimal value), as a CANN code's case is ignored; the report names the
    ASCII code."""
    status, out = _run("--explain", arg, "--format", "json")
    data = json.loads(out)
    assert status == 0, out
    assert data["explain"] == arg and data["found"] is True
    (finding,) = data["findings"]
    assert finding["key"] == key and finding["known"] and finding["meaning"]
    if key in TABLE.codes:
        assert finding["name"] == TABLE.codes[key].title
    assert _run("--explain", arg)[1].startswith(key)


def test_an_unknown_code_in_other_digits_is_named_in_ascii():
    status, out = _run("--explain", "\uff15\uff10\uff17\uff19\uff19\uff19")
    assert status == 1 and out.startswith("507999: not in the table")


@pytest.mark.parametrize(
    "code,family",
    [
        ("EZ1234", "EZ codes come from operators"),
        ("EI0999", "EI codes come from HCCL"),
        ("123456", "ACL codes starting with 1 mean an environment problem"),
        (
            "507999",
            "of the Runtime family rt-internal: The device or the runtime failed",
        ),  # its header family's
        ("561999", "of the operators (aclnn) family aclnn-inner: An aclnn operator failed inside"),
        ("169999", "ACL codes starting with 1 mean an environment problem"),  # no family: the class
        ("ERR01042", "a torch_npu code from its OPS part"),
    ],
)
def test_a_well_formed_unknown_code_says_so_and_exits_1(code, family):
    status, out = _run("--explain", code)
    assert status == 1
    assert out.startswith(f"{code}: not in the table") and family in out


def test_not_a_code_exits_2_with_one_line():
    status, out, err = _cli("--explain", "\x1b[31mred")
    assert status == 2 and out == ""
    assert err == (
        "migrate: error: \\x1b[31mred: not an error code (507015, EI0006, ERR00100) "
        "and no known error message in it\n"
    )


@pytest.mark.parametrize("arg", ["hello", "50701", "E1901", "", "   "])
def test_not_a_code_is_a_usage_error(arg):
    assert "(507015, EI0006, ERR00100)" in _usage("--explain", arg)


def test_explain_and_log_together_is_a_usage_error(tmp_path):
    assert "not both" in _usage("--explain", "507015", "--log", str(tmp_path))


# -- --log ---------------------------------------------------------------------------------------

LOG = """\
[INFO] 2024-06-20-10:41:32.123.456 step 507015 loss 0.51 (a step number, not an error)
  File "/usr/local/lib/python3.10/site-packages/torch_npu/utils/__init__.py", line 1, in <module>
ImportError: libhccl.so: cannot open shared object file: No such file or directory
[ERROR] 2024-06-20-10:41:32 (PID:59450, Device:-1, RankID:-1) ERR00008 PTA resource not found
RuntimeError: Sync:torch_npu/csrc/framework/OpCommand.cpp:190 NPU error, error code is 507015
EE9999: Inner Error!
EE9999  [Exec][Op]Execute op failed. op type = Add[FUNC:ReportInnerError]
RuntimeError: Sync:torch_npu/csrc/framework/OpCommand.cpp:190 NPU error, error code is 507015
[ERROR] RecentErrMsg: Resource_Busy(EL0005): The resources are busy.
EZ8888: an operator error the table does not list
tensor([507015, 123456]) shape 500002
aclrtSetDevice failed, ret = 107001, deviceId=5
"""


def test_log_findings_each_once_with_first_line_and_count(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    status, out = _run("--log", str(log), "--format", "json")
    data = json.loads(out)
    assert status == 1 and data["lines"] == 12 and not data["truncated"]
    found = {f["key"]: (f["line"], f["count"], f["known"]) for f in data["findings"]}
    assert found == {
        "libhccl-missing": (3, 1, True),
        "ERR00008": (4, 1, True),
        "507015": (5, 2, True),
        "EE9999": (6, 2, True),
        "EL0005": (9, 1, True),
        "EZ8888": (10, 1, False),
        "107001": (12, 1, True),
    }
    first = data["findings"][0]
    assert first["path"] == str(log) and first["text"].startswith("ImportError: libhccl.so")


def test_log_text_output(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    status, out = _run("--log", str(log))
    assert status == 1
    assert out.startswith(f"7 finding(s) in 12 line(s) of {log}\n")
    assert f"{log}:5: 507015 ACL_ERROR_RT_AICORE_EXCEPTION (Runtime) (x2)" in out
    assert "    | RuntimeError: Sync:torch_npu/csrc/framework/OpCommand.cpp:190" in out


def test_a_clean_log_exits_0(tmp_path):
    log = tmp_path / "ok.log"
    log.write_text("epoch 1 loss 0.3 step 507015\n2024-06-20-10:41:32 500002 samples\n")
    status, out = _run("--log", str(log))
    assert status == 0 and out.startswith("0 finding(s) in 2 line(s)")


def test_several_logs_and_stdin(tmp_path):
    a = tmp_path / "a.log"
    a.write_text("EI0006: Getting socket times out.\n")
    status, out = _run(
        "--log",
        str(a),
        "--log",
        "-",
        "--format",
        "json",
        stdin="EJ0001: Failed to initialize the HCCP process.\n",
    )
    data = json.loads(out)
    assert [(f["path"], f["key"]) for f in data["findings"]] == [(str(a), "EI0006"), ("-", "EJ0001")]


def test_a_code_in_a_very_long_line_is_found(tmp_path):
    log = tmp_path / "one-line.log"
    with open(log, "w") as f:
        f.write("x" * 300_000 + " error code is 507018 " + "y" * 300_000 + "\nEI0002: late\n")
    scan = scan_logs([str(log)])
    assert [(f.key, f.line) for f in scan.findings] == [("507018", 1), ("EI0002", 2)]
    assert all(len(f.text) <= 240 for f in scan.findings)


def test_scanning_stops_at_the_limit(tmp_path):
    log = tmp_path / "big.log"
    with open(log, "w") as f:
        f.write("EI0006: early\n" + ("filler line\n" * 10_000) + "EJ0001: too late\n")
    scan = scan_logs([str(log)], limit=50_000)
    assert scan.truncated and scan.bytes <= 50_000
    assert [f.key for f in scan.findings] == ["EI0006"]


def test_binary_and_invalid_utf8_do_not_break_the_scan(tmp_path):
    log = tmp_path / "bin.log"
    log.write_bytes(b"\x00\xff\xfe garbage \x1b[2J\nEI0006: socket\n\xc3\x28 error code is 507015\n")
    status, out = _run("--log", str(log))
    assert status == 1 and "EI0006" in out and "507015" in out
    assert "\x1b" not in out  # escapes are shown, never sent to the terminal


@pytest.mark.parametrize(
    "kind,why",
    [
        ("missing", "cannot read"),
        ("folder", "not a regular"),
        ("fifo", "not a regular"),
        ("device", "not a regular"),
    ],
)
def test_a_log_that_is_not_a_regular_file_is_refused(tmp_path, kind, why):
    path = tmp_path / "log"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # opening it must not block
    elif kind == "device":
        path.symlink_to("/dev/zero")  # reading it would never end
    assert _usage("--log", str(path)).startswith(f"{path}: {why}")


def test_a_fifo_log_exits_2_without_hanging(tmp_path):
    path = tmp_path / "log"
    os.mkfifo(path)
    status, out, err = _cli("--log", str(path), cwd=tmp_path)
    assert status == 2 and out == "" and err.startswith(f"migrate: error: {path}: not a regular")


FINDING_KEYS = {
    "key",
    "kind",
    "known",
    "name",
    "component",
    "meaning",
    "cause",
    "fix",
    "sources",
    "path",
    "line",
    "text",
    "count",
}


def test_explain_and_log_json_shapes(tmp_path):
    """docs/contracts.md §8."""
    _, out = _run("--explain", "EI0006", "--format", "json")
    data = json.loads(out)
    assert set(data) == {"explain", "found", "findings"}
    assert set(data["findings"][0]) == FINDING_KEYS
    log = tmp_path / "x.log"
    log.write_text(LOG)
    _, out = _run("--log", str(log), "--format", "json")
    data = json.loads(out)
    assert set(data) == {"logs", "lines", "bytes", "truncated", "dropped", "errors", "findings", "summary"}
    assert set(data["summary"]) == {"findings", "known"}
    assert all(set(f) == FINDING_KEYS for f in data["findings"])
    assert data["summary"] == {"findings": 7, "known": 6}


def test_lines_across_chunk_boundaries_keep_their_numbers(tmp_path, monkeypatch):
    import migrate.doctor.logscan as explain

    monkeypatch.setattr(explain, "CHUNK", 64)
    log = tmp_path / "x.log"
    body = "".join(f"line {i} " + ("z" * (i % 50)) + "\n" for i in range(1, 40))
    log.write_text(body + "EI0006: socket\n" + "q" * 500 + " EJ0001: late\nlast")
    scan = scan_logs([str(log)])
    assert [(f.key, f.line) for f in scan.findings] == [("EI0006", 40), ("EJ0001", 41)]
    assert scan.lines == 42 and scan.bytes == log.stat().st_size


def test_distinct_findings_are_capped(tmp_path, monkeypatch):
    import migrate.doctor.logscan as explain

    monkeypatch.setattr(explain, "MAX_FINDINGS", 5)
    log = tmp_path / "many.log"
    log.write_text("".join(f"EZ{i:04d}: unknown operator error\n" for i in range(1000, 1020)))
    status, out = _run("--log", str(log), "--format", "json")
    data = json.loads(out)
    assert len(data["findings"]) == 5 and data["dropped"] == 15
