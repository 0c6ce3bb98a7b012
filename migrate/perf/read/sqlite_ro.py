"""An untrusted SQLite file opened read-only and bounded, for the profile readers.

:func:`open_db` refuses anything but a regular file that starts with SQLite's header, and
opens it through a ``file:...?mode=ro&immutable=1`` URI (no write, no lock, no journal, so a
profile on a read-only mount or being copied still opens); the schema is not trusted
(``PRAGMA trusted_schema = OFF``: a view, trigger or generated column cannot call functions
with side effects), strings and blobs are capped at ``MAX_VALUE`` bytes
(``SQLITE_LIMIT_LENGTH``, so ``randomblob(10**9)`` in a default fails instead of allocating),
and the connection is ``query_only``.

:meth:`Db.table` answers only for real tables (not views, virtual tables, or tables with
generated columns: a hostile file could make any of those run without end) that have the
columns the reader says it needs, and gives their column names; :meth:`Db.rows` runs one
query with a row cap. Any SQLite error (not a database, a page corrupt, the file cut short)
is a TraceError of one line.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from migrate.core import reads
from migrate.core.fileio import read_head
from migrate.perf.read.jsonstream import TraceError

__all__ = ["Db", "open_db"]

HEADER = b"SQLite format 3\x00"
MAX_DB_BYTES = 64 << 30
MAX_VALUE = 16 << 20
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _error(exc: sqlite3.Error) -> TraceError:
    text = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
    return TraceError(f"not a readable SQLite database: {text}")


class Db:
    """A read-only connection and what its schema holds (see the module doc)."""

    def __init__(self, conn: sqlite3.Connection, needs: dict[str, tuple[str, ...]] | None = None) -> None:
        self.conn = conn
        self.needs = needs or {}
        self._tables: dict[str, list[str]] | None = None
        self.refused: list[str] = []  # names that are not plain tables
        self.lacking: list[str] = []  # tables without the columns the reader needs
        self.capped: list[str] = []  # queries cut at their row cap

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Db:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _schema(self) -> dict[str, list[str]]:
        if self._tables is None:
            found: dict[str, list[str]] = {}
            for name, kind, sql in self._query("SELECT name, type, sql FROM sqlite_master", (), 100_000):
                if not isinstance(name, str) or not _NAME.fullmatch(name) or kind not in ("table", "view"):
                    continue
                columns = self._columns(name) if kind == "table" else None
                virtual = isinstance(sql, str) and sql.lstrip()[:14].upper() == "CREATE VIRTUAL"
                if columns is None or virtual:
                    self.refused.append(name)
                    continue
                missing = [c for c in self.needs.get(name, ()) if c not in columns]
                if missing:
                    self.lacking.append(f"{name} (no {', '.join(missing)})")
                    continue
                found[name] = columns
            self._tables = found
        return self._tables

    def _columns(self, table: str) -> list[str] | None:
        columns = []
        for row in self._query(f'PRAGMA table_xinfo("{table}")', (), 10_000):
            if len(row) > 6 and row[6] in (2, 3):  # a generated column
                return None
            if isinstance(row[1], str):
                columns.append(row[1])
        return columns

    def table(self, *names: str) -> tuple[str, list[str]] | None:
        """The first of ``names`` the file holds as a plain table with the columns ``needs``
        asks of it, and its columns."""
        schema = self._schema()
        for name in names:
            if name in schema:
                return name, schema[name]
        return None

    def _query(self, sql: str, params: tuple, cap: int) -> list[tuple]:
        try:
            return self.conn.execute(sql, params).fetchmany(cap)
        except sqlite3.Error as exc:
            raise _error(exc) from None

    def rows(self, sql: str, params: tuple = (), cap: int = 1_000_000) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql`` (at most ``cap``: a query cut there is named in ``capped``),
        fetched in batches."""
        try:
            cursor = self.conn.execute(sql, params)
            left = cap
            while left > 0:
                batch = cursor.fetchmany(min(left, 10_000))
                if not batch:
                    return
                left -= len(batch)
                yield from batch
            if cursor.fetchone() is not None:
                self.capped.append(f"{_table_of(sql)} ({cap:,} rows)")
        except sqlite3.Error as exc:
            raise _error(exc) from None


def _table_of(sql: str) -> str:
    m = re.search(r"\bFROM\s+([A-Za-z_][A-Za-z0-9_]*)", sql)
    return m.group(1) if m else "a table"


def open_db(path: str | os.PathLike, needs: dict[str, tuple[str, ...]] | None = None) -> Db:
    """The SQLite file ``path`` opened read-only (TraceError when it is not one); a table
    named in ``needs`` counts only with the columns it lists."""
    reads.file(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise TraceError("not a regular file (a folder, FIFO, device or socket)")
    if st.st_size > MAX_DB_BYTES:
        raise TraceError(f"too large ({st.st_size} bytes, limit {MAX_DB_BYTES})")
    if read_head(os.fspath(path), len(HEADER)) != HEADER:
        raise TraceError("not an SQLite database (no SQLite header)")
    uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise _error(exc) from None
    try:
        setlimit = getattr(conn, "setlimit", None)
        if setlimit is not None:
            setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE)
        for pragma in ("query_only = ON", "trusted_schema = OFF", "cell_size_check = ON"):
            conn.execute(f"PRAGMA {pragma}")
    except sqlite3.Error as exc:
        conn.close()
        raise _error(exc) from None
    return Db(conn, needs)
