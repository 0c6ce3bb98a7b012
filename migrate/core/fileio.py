"""Read and write source files without losing a byte we did not mean to change.

One reading and decoding path for scan and apply:

* ``read_bytes`` opens the discovered path without blocking (a FIFO under a scanned name
  never hangs), reads only regular files (``S_ISREG``) and never more than the size
  limit + 1 bytes (``/dev/zero`` linked as ``x.py`` is an error, not an endless read).
* ``decode`` turns bytes into text exactly (CRLF stays CRLF, so ``ast`` offsets match the
  text): a BOM (UTF-8, UTF-16, UTF-32) first, then for Python a PEP 263 cookie, else
  UTF-8; NUL characters in the decoded text mean binary data. ``exact`` tells whether
  encoding the text again gives the same bytes (``# coding: unicode_escape`` does not):
  apply refuses to rewrite such a file rather than re-encode all of it.
* ``write_source`` goes through a short-named temporary file in the same folder and an
  atomic ``os.replace``; it keeps mode, owner, group and extended attributes where the OS
  allows, and re-reads the file just before the replace: if its bytes changed since they
  were read, nothing is written. An interrupted run leaves the old file or the new one.
* ``locked`` (core/filelock.py) holds an advisory lock on a file while it is rewritten,
  so two runs on one tree cannot interleave their read and write of one file.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path

from migrate.core.filelock import locked

__all__ = ["MAX_FILE_BYTES", "SourceError", "SourceFile", "atomic_write", "content_hash",
           "decode", "encode_text", "locked", "read_bytes", "read_head", "read_source",
           "write_source"]

MAX_FILE_BYTES = 32 * 1024 * 1024
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
_ASCII_SAFE = {"utf-8", "utf-8-sig", "ascii"}  # codecs whose bytes the byte prefilter can read


class SourceError(Exception):
    """A file that cannot be read, decoded or encoded; reported, never raised to the user."""


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass
class SourceFile:
    path: Path
    text: str
    encoding: str  # codec used to decode; "utf-8-sig" when the file starts with a UTF-8 BOM
    raw: bytes
    bom: bytes = b""  # a UTF-16/32 BOM written back before the encoded text
    exact: bool = True  # encoding ``text`` again gives ``raw``
    st: os.stat_result | None = None

    @property
    def newline(self) -> str:
        return newline_of(self.text)

    @property
    def digest(self) -> str:
        return content_hash(self.raw)


def newline_of(text: str) -> str:
    """The file's newline convention: that of its first line break ("\\n" if none)."""
    nl = text.find("\n")
    cr = text.find("\r")
    if cr < 0 or (0 <= nl < cr):
        return "\n"
    return "\r\n" if nl == cr + 1 else "\r"


def _open_nonblocking(path: Path | str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None


def read_bytes(path: Path | str, limit: int = MAX_FILE_BYTES) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file and its stat; SourceError for anything else."""
    fd = _open_nonblocking(path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError("not a regular file (a folder, FIFO, device or socket); skipped")
        if st.st_size > limit:
            raise SourceError(f"file too large ({st.st_size} bytes, limit {limit}); skipped")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise SourceError(f"file too large (over {limit} bytes); skipped")
        return b"".join(chunks), st
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_head(path: Path | str, size: int) -> bytes:
    """The first ``size`` bytes of a regular file (b"" for anything else), never blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, size)
    except OSError:
        return b""
    finally:
        os.close(fd)


def detect_encoding(data: bytes, python: bool) -> tuple[str, bytes]:
    """(codec, BOM to write back): a BOM first, then PEP 263 for Python, else UTF-8."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            if codec == "utf-8-sig" and python:
                break  # tokenize checks a cookie against the BOM
            return codec, (b"" if codec == "utf-8-sig" else bom)
    if not python:
        return "utf-8", b""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return (encoding if encoding == "utf-8-sig" else codecs.lookup(encoding).name), b""
    except (SyntaxError, LookupError) as exc:  # unknown codec or BOM/cookie conflict
        raise SourceError(f"bad encoding declaration: {exc}") from None


def decode(data: bytes, python: bool, path: Path | str = "") -> SourceFile:
    """Decode a file's bytes exactly; SourceError on binary data or a wrong encoding."""
    codec, bom = detect_encoding(data, python)
    try:
        text = data[len(bom):].decode(codec)
    except (UnicodeDecodeError, LookupError) as exc:
        why = getattr(exc, "reason", exc)
        raise SourceError(f"cannot decode as {codec}: {why}") from None
    if "\x00" in text:
        raise SourceError("binary data (NUL bytes); not a text file")
    source = SourceFile(Path(path), text, codec, data, bom)
    if codec not in _ASCII_SAFE:
        try:
            source.exact = bom + text.encode(codec) == data
        except (UnicodeEncodeError, LookupError):
            source.exact = False
    return source


def prefilter_bytes(source: SourceFile) -> bytes:
    """Bytes in which an ASCII token of the text can be found by a byte search."""
    return source.raw if source.encoding in _ASCII_SAFE else source.text.encode("utf-8", "replace")


def read_source(path: Path, python: bool | None = None,
                limit: int = MAX_FILE_BYTES) -> SourceFile:
    """Read and decode ``path``; ``python`` defaults to "ends with .py/.pyi"."""
    if python is None:
        python = path.suffix in (".py", ".pyi")
    data, st = read_bytes(path, limit)
    source = decode(data, python, path)
    source.st = st
    return source


def encode_text(source: SourceFile, text: str) -> bytes:
    if not source.exact:
        raise SourceError(f"its encoding ({source.encoding}) does not give back the same bytes; "
                          "rewriting it would re-encode the whole file")
    try:
        return source.bom + text.encode(source.encoding)
    except UnicodeEncodeError:
        raise SourceError(f"new text cannot be encoded as {source.encoding}") from None


def write_source(source: SourceFile, text: str, force: bool = False) -> bool:
    """Write ``text`` back with the file's encoding; return False if the bytes are unchanged."""
    data = encode_text(source, text)
    if data == source.raw:
        return False
    atomic_write(source.path, data, expect=source.raw, force=force)
    return True


def writable_problem(path: Path | str, force: bool = False) -> str | None:
    """Why ``path`` must not be rewritten (read-only), or None."""
    target = os.path.realpath(path)
    try:
        st = os.stat(target)
    except OSError as exc:
        return f"cannot stat: {exc.strerror or exc}"
    if force:
        return None
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        return "read-only file; not written (--force to rewrite it anyway)"
    return None


def atomic_write(path: Path | str, data: bytes, expect: bytes | None = None,
                 force: bool = False) -> None:
    """Replace ``path`` by ``data`` via a temporary file in the same folder.

    With ``expect``, the file must still hold exactly those bytes just before the replace
    (SourceError otherwise). Symlinks are written through (the link stays a link)."""
    target = Path(os.path.realpath(path))
    problem = writable_problem(target, force) if expect is not None else None
    if problem:
        raise SourceError(problem)
    try:
        st = target.stat()
    except OSError:
        st = None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".mig-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if st is not None:
                _copy_metadata(target, fh.fileno(), st)
            os.fsync(fh.fileno())
        if expect is not None and _current(target) != expect:
            raise SourceError("the file changed while it was being rewritten; not written")
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _current(target: Path) -> bytes | None:
    try:
        return read_bytes(target, MAX_FILE_BYTES)[0]
    except SourceError:
        return None


def _copy_metadata(target: Path, fd: int, st: os.stat_result) -> None:
    """Owner, group, mode and extended attributes of ``target`` onto the open temp file."""
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except OSError:
        try:  # not root: keep at least the group when we belong to it
            os.fchown(fd, -1, st.st_gid)
        except OSError:
            pass
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(target)
    except OSError:
        return
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(target, name))
        except OSError:
            pass  # e.g. security.* without privilege, or a file system without xattrs
