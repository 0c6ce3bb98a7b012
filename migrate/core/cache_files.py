"""The cache folder's plumbing every cache shares (the scan cache, the package facts, the
memo of finished runs): where it is, the HMAC key that binds its entries to this user, and
the atomic write, and the one way a cache file is read (``read_cache_doc``). Standard
library only: a warm run reads it before anything else loads.

Every cache file is read by the same rules: bounded (a regular file, not a symlink, at most
its cache's limit), strict JSON (no NaN or Infinity), an object whose ``format`` is its
cache's. A missing file, or one of another format (another version of the tool), is simply
not used; a file that is there but corrupt (too large, not a regular file, not JSON, not an
object, entries of the wrong shape) is ignored with a note on stderr, and the work it would
have saved is done afresh. Never an error.

Location: --cache-dir, $MIGRATE_CACHE_DIR, or the user cache folder
($XDG_CACHE_HOME/ascend-migrate). The key never lives in the cache folder:
``$MIGRATE_CACHE_KEY`` (a CI secret shared by the jobs that share a cache) or a per-user key
file made on first use (``$XDG_CONFIG_HOME/ascend-migrate/cache.key``, mode 0600). A cache
that cannot be written is not an error and leaves no temporary file behind.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
import tempfile
from pathlib import Path

from migrate.core.display import escape

__all__ = [
    "KEY_ENV",
    "cache_key",
    "default_cache_dir",
    "ignored",
    "mac_of",
    "read_cache_doc",
    "write_cache_file",
]
KEY_ENV = "MIGRATE_CACHE_KEY"


def default_cache_dir() -> Path:
    env = os.environ.get("MIGRATE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ascend-migrate"


def cache_key() -> bytes | None:
    """The HMAC key: $MIGRATE_CACHE_KEY, or the per-user key file (made on first use, owned
    by this user, mode 0600); None when neither can be had (then nothing is cached)."""
    env = os.environ.get(KEY_ENV)
    if env:
        return env.encode("utf-8", "surrogateescape")
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = Path(base) / "ascend-migrate" / "cache.key"
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return _new_key(path)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & 0o077
            or not 32 <= st.st_size <= 1024
        ):
            return None  # not ours alone: not a secret
        return os.read(fd, 1024).strip() or None
    except OSError:
        return None
    finally:
        os.close(fd)


def _new_key(path: Path) -> bytes | None:
    key = secrets.token_hex(32).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:  # another run made it just now
        return cache_key()
    except OSError:
        return None
    try:
        os.write(fd, key + b"\n")
    finally:
        os.close(fd)
    return key


def mac_of(key: bytes, binding: bytes, rel: str, data: dict) -> str:
    """The HMAC binding ``data`` (as canonical JSON) to ``rel`` under ``binding``."""
    body = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    msg = binding + rel.encode("utf-8", "surrogateescape") + b"\0" + body.encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def write_cache_file(path: Path, payload: bytes) -> None:
    """Replace the cache file ``path`` by ``payload`` through a temporary file beside it; a
    cache that cannot be written is not an error and leaves no temporary file behind."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".scan-", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def ignored(path: Path, why: str) -> None:
    """The note for a corrupt cache file: it is not used, the work is done afresh."""
    sys.stderr.write(f"migrate: note: cache file {escape(os.fspath(path))}: {why}; ignored\n")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def read_cache_doc(path: Path, fmt: int, limit: int) -> dict | None:
    """The JSON object in the cache file ``path`` when it is of format ``fmt``; None when
    the file is missing or of another format (quietly), or corrupt (with a note)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        ignored(path, f"cannot be opened ({exc.strerror or exc})")
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            ignored(path, "not a regular file")
            return None
        if st.st_size > limit:
            ignored(path, f"larger than {limit} bytes")
            return None
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        ignored(path, f"cannot be read ({exc.strerror or exc})")
        return None
    finally:
        os.close(fd)
    if left <= 0:
        ignored(path, f"larger than {limit} bytes")
        return None
    try:
        doc = json.loads(b"".join(chunks), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError too
        ignored(path, f"not JSON ({type(exc).__name__})")
        return None
    if not isinstance(doc, dict):
        ignored(path, "not a JSON object")
        return None
    return doc if doc.get("format") == fmt else None
