"""`migrate doctor --log`: a long line read in pieces loses nothing at a piece's edge and
makes nothing up there; a log that is still being written is read up to its size when the
scan started."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from migrate.cli import app
from migrate.doctor import logscan
from migrate.doctor.logscan import scan_logs


def test_a_code_straddling_the_4_mib_read_boundary_of_a_long_line_is_found_once(tmp_path):
    """The real read size: 'EI0006' split as 'EI0' | '006' by the first 4 MiB read."""
    log = tmp_path / "long.log"
    head = "x" * (logscan.CHUNK - 4) + " "
    log.write_text(head + "EI0006 socket timeout " + "y" * 5000 + "\n")
    assert log.read_bytes()[logscan.CHUNK - 3 : logscan.CHUNK + 3] == b"EI0006"
    result = CliRunner().invoke(app, ["doctor", "--log", str(log)], catch_exceptions=False)
    assert result.exit_code == 1, result.stdout
    scan = scan_logs([str(log)])
    assert [(f.key, f.line, f.count) for f in scan.findings] == [("EI0006", 1, 1)]
    assert "EI0006" in scan.findings[0].text


@pytest.mark.parametrize("shift", range(-12, 4))
def test_codes_at_every_offset_of_a_read_edge_are_found_once_and_none_made_up(tmp_path, monkeypatch, shift):
    """Around the edge of each read: a known code, an ACL code after its context words,
    and lookalikes that are no codes (a 7-digit number, a code glued to a word) which a
    piece ending or starting mid-token would turn into codes."""
    monkeypatch.setattr(logscan, "CHUNK", 4096)
    edge = 4096 * 3  # the third read ends here, inside the token
    parts = {
        " EI0006 ": "EI0006",
        " error code is 507015 ": "507015",
        " ret=5070151 ": None,
        " XEE9999 ": None,
    }
    for part, key in parts.items():
        at = edge + shift - part.index(part.strip()[-4:])
        log = tmp_path / f"{key}.log"
        log.write_text("z" * at + part + "w" * 9000 + "\n")
        got = [(f.key, f.line, f.count) for f in scan_logs([str(log)]).findings]
        assert got == ([(key, 1, 1)] if key else []), part


class _Growing:
    """A log another process is still writing: every read appends more lines first."""

    def __init__(self, path):
        self.path = path
        self.stream = open(path, "rb", buffering=0)  # noqa: SIM115 (closed by scan_logs)
        self.reads = 0

    def read(self, n: int) -> bytes:
        self.reads += 1
        with open(self.path, "a") as writer:
            writer.write("step ok EI0006 again\n" * 4000)
        return self.stream.read(n)

    def fileno(self) -> int:
        return self.stream.fileno()

    def close(self) -> None:
        self.stream.close()


def test_a_log_still_being_written_is_read_up_to_its_size_at_the_start(tmp_path, monkeypatch):
    log = tmp_path / "live.log"
    log.write_text("start\nEZ1234: boom\n" + "step ok\n" * 100_000)
    size = log.stat().st_size
    opened = []
    monkeypatch.setattr(logscan, "open_log", lambda path: opened.append(_Growing(path)) or opened[-1])
    monkeypatch.setattr(logscan, "CHUNK", 64 * 1024)
    scan = scan_logs([str(log)], limit=20 << 20)  # without the bound: read until this limit
    assert scan.bytes == size and not scan.truncated
    assert scan.lines == 100_002
    assert [f.key for f in scan.findings] == ["EZ1234"]  # never the lines written since
    assert log.stat().st_size > size
