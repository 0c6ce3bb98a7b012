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
  atomic ``os.replace``; it keeps mode (setuid/setgid/sticky included), owner, group and
  extended attributes where the OS allows, and says in one line what it could not keep
  (a setuid/setgid bit is dropped, not kept, on a file whose owner/group could not be
  kept: it would now run as whoever ran apply). It re-reads the file just before the
  replace: if its bytes changed since they were read, nothing is written. An interrupted
  run leaves the old file or the new one.
* Writes stay where the scan found the file, at write time: with a ``Place`` (the resolved
  path discovery recorded, and the resolved roots of the scan unless symlinks may lead
  out), the file's resolved path must still be that one, and the folder is then opened
  component by component from ``/`` with ``O_NOFOLLOW``; the file is read, re-checked and
  replaced relative to that folder descriptor (``openat``-style, ``O_NOFOLLOW`` on the
  file). A file or folder swapped for a symlink mid-run is refused, never followed.
* ``locked`` (core/filelock.py) holds an advisory lock on a file while it is rewritten,
  so two runs on one tree cannot interleave their read and write of one file.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import secrets
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from migrate.core import reads
from migrate.core.filelock import locked

__all__ = [
    "MAX_FILE_BYTES",
    "Place",
    "SourceError",
    "SourceFile",
    "atomic_write",
    "content_hash",
    "decode",
    "encode_text",
    "locked",
    "read_bytes",
    "read_head",
    "read_source",
    "write_source",
]

MAX_FILE_BYTES = 32 * 1024 * 1024
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_ASCII_SAFE = {"utf-8", "utf-8-sig", "ascii"}  # codecs whose bytes the byte prefilter can read


class SourceError(Exception):
    """A file that cannot be read, decoded or encoded; reported, never raised to the user."""


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True)
class Place:
    """Where a file may be read and written: ``real`` is its resolved path as discovery saw
    it ("" for: whatever it resolves to now), ``within`` the resolved roots it must stay in
    (empty: anywhere, as with --follow-symlinks)."""

    real: str = ""
    within: tuple[str, ...] = ()

    def resolve(self, path: Path | str) -> str:
        """The resolved path of ``path`` now; SourceError if it left its place."""
        now = os.path.realpath(path)
        if self.real and now != self.real:
            raise SourceError(
                "the path now leads somewhere else than when it was scanned "
                "(a file or folder was replaced by a symbolic link); not written"
            )
        if self.within and not any(
            now == r or now.startswith(r.rstrip(os.sep) + os.sep) for r in self.within
        ):
            raise SourceError("the path leads out of the scanned tree; not written")
        return now


@dataclass
class SourceFile:
    path: Path
    text: str
    encoding: str  # codec used to decode; "utf-8-sig" when the file starts with a UTF-8 BOM
    raw: bytes
    bom: bytes = b""  # a UTF-16/32 BOM written back before the encoded text
    exact: bool = True  # encoding ``text`` again gives ``raw``
    st: os.stat_result | None = None
    place: Place | None = None  # where it may be written (read_source with a place)

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
    reads.file(path)
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None


def read_bytes(path: Path | str, limit: int = MAX_FILE_BYTES) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file and its stat; SourceError for anything else."""
    return read_fd(_open_nonblocking(path), limit)


def read_fd(fd: int, limit: int = MAX_FILE_BYTES) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file open on ``fd`` (closed here) and its stat."""
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
    reads.file(path)
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
    if not python or _no_cookie(data):
        return "utf-8", b""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return (encoding if encoding == "utf-8-sig" else codecs.lookup(encoding).name), b""
    except (SyntaxError, LookupError) as exc:  # unknown codec or BOM/cookie conflict
        raise SourceError(f"bad encoding declaration: {exc}") from None


def _no_cookie(data: bytes) -> bool:
    """No BOM, and the first two lines hold no PEP 263 cookie (which needs the word "coding")
    and decode as UTF-8: tokenize would answer UTF-8 (the common case, without its readers)."""
    end = data.find(b"\n")
    end = data.find(b"\n", end + 1) if end != -1 else -1
    head = data if end == -1 else data[:end]
    if data.startswith(codecs.BOM_UTF8) or b"coding" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode(data: bytes, python: bool, path: Path | str = "") -> SourceFile:
    """Decode a file's bytes exactly; SourceError on binary data or a wrong encoding."""
    codec, bom = detect_encoding(data, python)
    try:
        text = data[len(bom) :].decode(codec)
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


def read_source(
    path: Path, python: bool | None = None, limit: int = MAX_FILE_BYTES, place: Place | None = None
) -> SourceFile:
    """Read and decode ``path``; ``python`` defaults to "ends with .py/.pyi". With a
    ``place``, the file is opened where the place allows and nowhere else."""
    if python is None:
        python = path.suffix in (".py", ".pyi")
    if place is None:
        data, st = read_bytes(path, limit)
    else:
        with _InTree(place.resolve(path)) as at:
            data, st = read_fd(at.open_file(), limit)
    source = decode(data, python, path)
    source.st = st
    source.place = place
    return source


class _InTree:
    """The folder of the resolved path ``real``, opened component by component from ``/``
    without following a symlink, and the file's name in it."""

    def __init__(self, real: str):
        self.folder, self.name = os.path.split(real)
        self.fd = -1

    def __enter__(self) -> _InTree:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open("/", flags)
        try:
            for part in [p for p in self.folder.split(os.sep) if p]:
                try:
                    nxt = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    raise SourceError(f"cannot open folder {part!r}: {_link_or(exc)}; not written") from None
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.fd)

    def open_file(self, name: str | None = None) -> int:
        try:
            return os.open(
                name or self.name,
                os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                dir_fd=self.fd,
            )
        except OSError as exc:
            raise SourceError(f"cannot read: {_link_or(exc)}") from None


def _link_or(exc: OSError) -> str:
    import errno

    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "it was replaced by a symbolic link"
    return exc.strerror or str(exc)


def encode_text(source: SourceFile, text: str) -> bytes:
    if not source.exact:
        raise SourceError(
            f"its encoding ({source.encoding}) does not give back the same bytes; "
            "rewriting it would re-encode the whole file"
        )
    try:
        return source.bom + text.encode(source.encoding)
    except UnicodeEncodeError:
        raise SourceError(f"new text cannot be encoded as {source.encoding}") from None


def write_source(source: SourceFile, text: str, force: bool = False, notes: list[str] | None = None) -> bool:
    """Write ``text`` back with the file's encoding; return False if the bytes are unchanged.
    A line saying which of owner, group and mode bits could not be kept goes to ``notes``."""
    data = encode_text(source, text)
    if data == source.raw:
        return False
    note = atomic_write(source.path, data, expect=source.raw, force=force, place=source.place)
    if note and notes is not None:
        notes.append(note)
    return True


def _writable_problem(st: os.stat_result, real: str, force: bool) -> str | None:
    """Why the file (stat ``st``, resolved path ``real``) must not be rewritten, or None."""
    if force:
        return None
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(real, os.W_OK):
        return "read-only file; not written (--force to rewrite it anyway)"
    return None


def atomic_write(
    path: Path | str,
    data: bytes,
    expect: bytes | None = None,
    force: bool = False,
    place: Place | None = None,
) -> str | None:
    """Replace ``path`` by ``data`` via a temporary file in the same folder; return a line
    saying which of the old file's owner, group and mode bits could not be kept, or None.

    With ``expect``, the file must still hold exactly those bytes just before the replace
    (SourceError otherwise). Symlinks are written through (the link stays a link) when
    they stay in ``place``; the folder is opened without following symlinks, and the file,
    its temporary and the replace are all relative to it."""
    real = (place or Place()).resolve(path)
    with _InTree(real) as at:
        st = _current_stat(at)
        if expect is not None:
            if st is None:
                raise SourceError("cannot stat: the file is gone")
            problem = _writable_problem(st, real, force)
            if problem:
                raise SourceError(problem)
        note = None
        tmp = f".mig-{secrets.token_hex(4)}.tmp"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=at.fd
        )
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                if st is not None:
                    note = _copy_metadata(at, fh.fileno(), st)
                os.fsync(fh.fileno())
            if expect is not None and _current(at) != expect:
                raise SourceError("the file changed while it was being rewritten; not written")
            os.replace(tmp, at.name, src_dir_fd=at.fd, dst_dir_fd=at.fd)
            return note
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=at.fd)
            except OSError:
                pass
            raise


def _current_stat(at: _InTree) -> os.stat_result | None:
    try:
        st = os.stat(at.name, dir_fd=at.fd, follow_symlinks=False)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise SourceError("the file was replaced by a symbolic link; not written")
    return st


def _current(at: _InTree) -> bytes | None:
    try:
        return read_fd(at.open_file(), MAX_FILE_BYTES)[0]
    except SourceError:
        return None


def _copy_metadata(at: _InTree, fd: int, st: os.stat_result) -> str | None:
    """Owner, group, mode and extended attributes of the file onto the open temp file; a
    line saying what could not be kept, or None.

    Written after the data (a write by a non-owner clears setuid/setgid). Without the
    privilege to give the file back to its owner (or group), its setuid (setgid) bit is
    dropped rather than set on a file that now belongs to whoever ran apply."""
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except OSError:
        try:  # not root: keep at least the group when we belong to it
            os.fchown(fd, -1, st.st_gid)
        except OSError:
            pass
    now = os.fstat(fd)
    want = stat.S_IMODE(st.st_mode)
    if now.st_uid != st.st_uid:
        want &= ~stat.S_ISUID
    if now.st_gid != st.st_gid:
        want &= ~stat.S_ISGID
    os.fchmod(fd, want)
    _copy_xattrs(at, fd)
    return _lost(st, os.fstat(fd))


def _lost(old: os.stat_result, new: os.stat_result) -> str | None:
    """One line naming the owner, group and mode bits ``new`` does not keep, or None."""
    parts = []
    if new.st_uid != old.st_uid:
        parts.append(f"owner (uid {old.st_uid}, now {new.st_uid})")
    if new.st_gid != old.st_gid:
        parts.append(f"group (gid {old.st_gid}, now {new.st_gid})")
    was, now = stat.S_IMODE(old.st_mode), stat.S_IMODE(new.st_mode)
    if was != now:
        dropped = [
            n
            for bit, n in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid"), (stat.S_ISVTX, "sticky"))
            if was & bit and not now & bit
        ]
        parts.append(
            f"mode {was:04o} (now {now:04o}" + (f", {'/'.join(dropped)} dropped)" if dropped else ")")
        )
    if not parts:
        return None
    return "could not keep its " + ", ".join(parts) + " (no privilege to set them)"


def _copy_xattrs(at: _InTree, fd: int) -> None:
    if not hasattr(os, "listxattr"):
        return
    try:
        src = at.open_file()
    except SourceError:
        return
    try:
        for name in os.listxattr(src):
            try:
                os.setxattr(fd, name, os.getxattr(src, name))
            except OSError:
                pass  # e.g. security.* without privilege, or a file system without xattrs
    except OSError:
        return
    finally:
        os.close(src)
