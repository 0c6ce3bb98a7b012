"""The return codes of the headers the error table cites (acl_base_rt.h, rt_error_codes.h,
the aclnn status codes, hccl_types.h), explained as torch_npu prints them; the table is data
checked at load; and every message or code the doctor quotes in its evidence is known to
``--explain``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from test_doctor_truth import _broken_hosts

from migrate.doctor.explain import explain_arg, explain_json
from migrate.doctor.logscan import scan_logs
from migrate.doctor.return_codes import NAME, return_codes
from migrate.doctor.tables import TABLES, DoctorDataError, error_table

TABLE = error_table()

# The codes torch_npu prints for failed kernel calls and device setup, with their header
# names (aclnn status-code table; acl_base_rt.h; rt_error_codes.h) and a word the answer must
# carry: what the code is about, not a generic "collect the logs".
REAL = [
    ("561003", "ACLNN_ERR_INNER_FIND_KERNEL_ERROR", "kernels package"),
    ("361001", "ACLNN_ERR_RUNTIME_ERROR", "runtime"),
    ("161001", "ACLNN_ERR_PARAM_NULLPTR", "null"),
    ("161002", "ACLNN_ERR_PARAM_INVALID", "dtype"),
    ("561103", "ACLNN_ERR_INNER_NULLPTR", "null"),
    ("561000", "ACLNN_ERR_INNER", "message printed after the code"),
    ("561107", "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND", "set_env.sh"),
    ("561112", "ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND", "kernels package"),
    ("100002", "ACL_ERROR_REPEAT_INITIALIZE", "twice"),
    ("100039", "ACL_ERROR_COMPILING_STUB_MODE", "LD_LIBRARY_PATH"),
    ("107000", "ACL_ERROR_RT_PARAM_INVALID", "ASCEND_LAUNCH_BLOCKING"),
    ("107002", "ACL_ERROR_RT_CONTEXT_NULL", "set_device"),
    ("207008", "ACL_ERROR_RT_NO_STREAM_RESOURCE", "streams"),
    ("507010", "ACL_ERROR_RT_LOST_HEARTBEAT", "npu-smi"),
]


@pytest.mark.parametrize("code,name,word", REAL)
def test_real_codes_are_explained_with_their_header_name(code, name, word):
    (finding,) = explain_json(code, explain_arg(code))["findings"]
    assert finding["known"] and finding["name"] == name
    text = f"{finding['meaning']} {finding['cause']} {finding['fix']}"
    assert word.lower() in text.lower(), finding
    assert any("hicann/" in s for s in finding["sources"])  # a header or its documentation


@pytest.mark.parametrize("code,name,word", REAL)
def test_as_torch_npu_prints_them(code, name, word):
    line = f"[ERROR] 2025-06-17-06:11:33 (PID:10233, Device:0) aclnnAdd failed, error code is {code}"
    assert [f.key for f in explain_arg(line)] == [code]
    assert [f.key for f in explain_arg(f"see {name} above")] == [code]


def test_every_header_code_has_one_row():
    codes = return_codes()
    acl = [r for r in codes.rows.values() if r.kind == "acl"]
    assert len({r.title for r in acl}) == len(acl) == 213 + 38 + 26  # the two ACL headers, GE, aclnn
    for row in acl:
        family = codes.family_of(row.key)
        assert family is not None and family.component == row.component
        assert TABLE.codes[row.key].title == row.title  # merged; hand rows keep the header's name


def test_hccl_codes_as_torch_npu_prints_them(tmp_path):
    line = (
        "RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:149 HCCL "
        "function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, "
        "&(comm->hcclComm_)), error code is 7"
    )
    (finding,) = explain_arg(line)
    assert finding.key == "HCCL_E_UNAVAIL" and finding.kind == "hccl"
    assert "port" in finding.explanation.cause and "MASTER_PORT" in finding.explanation.fix
    assert [f.key for f in explain_arg("HCCL_E_TIMEOUT")] == ["HCCL_E_TIMEOUT"]
    log = tmp_path / "rank1.log"
    log.write_text(f"{line}\n[ERROR] ERR02200 DIST call hccl api failed.\n")
    found = {f.key for f in scan_logs([str(log)], TABLE).findings}
    assert {"HCCL_E_UNAVAIL", "ERR02200"} <= found


def test_an_hccl_value_without_a_row_is_not_made_up():
    text = "HCCL function error: HcclAllReduce(x), error code is 999"
    with pytest.raises(Exception, match="no known error message"):
        explain_arg(text)


def _broken_copy(tmp_path, edit):
    data = yaml.safe_load((TABLES / NAME).read_text(encoding="utf-8"))
    edit(data)
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / NAME).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return return_codes.__wrapped__(folder)


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d["acl"][0].update(code="207999"), "not a six-digit code of family acl-caller"),
        (lambda d: d["acl"][0].update(family="nowhere"), "not in families"),
        (lambda d: d["acl"][0].update(name="RT_PARAM"), "not an acl name"),
        (lambda d: d["acl"].append(dict(d["acl"][0])), "listed twice"),
        (lambda d: d["acl"][0].pop("source"), "missing key 'source'"),
        (lambda d: d["aclnn"][0].update(source="nowhere"), "not in sources"),
        (lambda d: d["hccl"][0].update(value=0), "not an HCCL error"),
        (lambda d: d["sources"].update(spare={"url": "https://x.y"}), "no row cites"),
        (lambda d: d.update(extra=[]), "unknown keys"),
    ],
)
def test_the_table_is_checked_at_load(tmp_path, edit, message):
    with pytest.raises(DoctorDataError, match=re.escape(message)):
        _broken_copy(tmp_path, edit)


def test_a_hand_row_must_carry_its_headers_name(tmp_path):
    from migrate.doctor.return_codes import merge

    hand = dict(TABLE.codes)
    hand["107001"] = type(hand["107001"])(**{**hand["107001"].__dict__, "title": "ACL_ERROR_RT_DEVICE_ID"})
    with pytest.raises(DoctorDataError, match="its header"):
        merge(hand)


_QUOTED = re.compile(r"'([^']{8,})'|\"([^\"]{8,})\"")
_CODES = re.compile(r"\b(E[0-9A-Z]\d{4}|\d{6})\b")


def _quoted(evidence: str) -> list[str]:
    out = [a or b for a, b in _QUOTED.findall(evidence)]
    return out + _CODES.findall(evidence)


def test_what_the_doctor_quotes_is_known_to_explain(host, fpy, doctor):
    """Every message the doctor quotes in evidence (between quotes) and every code it names is
    explained by --explain, on faked hosts broken every way the checks fail."""
    seen: list[str] = []
    for _, args in _broken_hosts(host, fpy):
        _, checks = doctor.checks(*args)
        for check in checks.values():
            for line in [*check["evidence"], check["summary"]]:
                seen += [q for q in _quoted(line) if not q.startswith("/")]
    host.npu_smi("", code=1, stderr="dcmi module initialize failed. ret is -8005")
    _, checks = doctor.checks("--no-import")
    seen += [line for line in checks["npu-smi"]["evidence"] if line.startswith("dcmi")]  # its output
    assert any("maybe you cann version is too low" in q for q in seen)  # the scenarios reach them
    assert any("undefined symbol" in q for q in seen) and "EH9999" in seen
    unknown = []
    for quote in dict.fromkeys(seen):
        try:
            findings = explain_arg(quote)
        except Exception:
            unknown.append(quote)
            continue
        unknown += [f"{quote} -> {f.key}" for f in findings if f.explanation is None]
    assert unknown == []


def test_codes_named_in_check_sources_are_known():
    """The codes the checks' own text names (EZ3003, EJ0001, EH9999 ...) have rows."""
    folder = Path(__file__).resolve().parents[2] / "migrate/doctor/checks"
    named = {c for path in folder.glob("*.py") for c in _CODES.findall(path.read_text()) if not c.isdigit()}
    assert named and all(c in TABLE.codes for c in named), named - set(TABLE.codes)


def _real_lines():
    path = Path(__file__).parent / "data/real_error_lines.txt"
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            codes, text = line.split("\t")
            yield codes.split(","), text


@pytest.mark.parametrize("codes,text", list(_real_lines()))
def test_real_error_lines_are_explained(codes, text):
    """Lines users pasted (data/real_error_lines.txt, each after its issue): every code in
    them found and known."""
    found = {f.key: f.explanation is not None for f in explain_arg(text)}
    assert all(found.get(c) for c in codes), found
