"""optuna's journal file backend, reading its log a few thousand lines per JSON parse.

A journal study is replayed from its log: one JSON line per operation, a dse trial's record
(its design and the metrics of every model, ~200 keys) in one of them. optuna's
``JournalFileBackend.read_logs`` parses each line alone, so every parsed dict holds key strings of
its own; json's decoder shares equal keys within one parse. ``ChunkedJournalFileBackend``
parses ``CHUNK`` complete lines at once, as one JSON array, and otherwise does what optuna's
method does, in the same order: the same logs, the same byte offsets it remembers per log
number, and the same error for a line that is not valid JSON or has no line end (raised when
another line follows it; a last line being written is left for the next read). A chunk whose
array does not parse is parsed line by line, as optuna does. ``tests/search/storage/test_journal.py``
compares both on whole, truncated and corrupted logs.

``append_logs`` writes as optuna's does (under the same lock, then ``fsync``), but never leaves a
record half written: a write that fails (a full disk, the file-size limit) is cut off again, and
a record a killed writer left without its line end is cut off before the next append (otherwise
the next record would be glued to it and every later read would fail on that line).
``tests/search/storage/test_faults.py`` writes journals on a full disk.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from optuna.storages.journal import JournalFileBackend
from optuna.storages.journal._file import get_lock_file

CHUNK = 2000                      # complete lines per json.loads call


class ChunkedJournalFileBackend(JournalFileBackend):
    """``JournalFileBackend`` whose ``read_logs`` parses ``CHUNK`` lines per call and whose
    ``append_logs`` leaves no record half written (module docstring)."""

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        data = ("\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n").encode("utf-8")
        with get_lock_file(self._lock):
            fd = os.open(self._file_path, os.O_RDWR)
            try:
                end = whole_end(fd)
                try:
                    pos = end
                    while pos < end + len(data):
                        pos += os.pwrite(fd, data[pos - end:], pos)
                    os.fsync(fd)
                except OSError:
                    os.ftruncate(fd, end)     # the records written so far, whole, and nothing else
                    raise
            finally:
                os.close(fd)

    def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
        offsets = self._log_number_offset
        with open(self._file_path, "rb") as f:
            remaining = os.stat(self._file_path).st_size    # the size when reading began
            start = 0
            if log_number_from in offsets:
                f.seek(offsets[log_number_from])
                start = log_number_from
                remaining -= offsets[log_number_from]
            chunk: list[tuple[int, bytes]] = []
            added: list[int] = []                 # log numbers whose offset this read recorded
            pending: Exception | None = None      # raised if another line follows
            for log_number, line in enumerate(f, start=start):
                remaining -= len(line)
                if remaining < 0:
                    break
                if pending is not None:
                    raise pending
                if not line.endswith(b"\n"):
                    yield from self._parse(chunk, added, followed=True)
                    chunk = []
                    pending = ValueError("Invalid log format.")
                    continue
                if log_number + 1 not in offsets:
                    offsets[log_number + 1] = offsets[log_number] + len(line)
                    added.append(log_number + 1)
                if log_number < log_number_from:
                    continue
                chunk.append((log_number, line))
                if len(chunk) >= CHUNK:
                    pending = yield from self._parse(chunk, added, followed=False)
                    chunk = []
            if chunk:
                yield from self._parse(chunk, added, followed=False)

    def _parse(self, chunk: list[tuple[int, bytes]], added: list[int], followed: bool):
        """Yield the logs of ``chunk``; at a line that is not JSON, forget the offsets this read
        recorded past it (optuna's read stops there) and raise its error if a line follows it (in
        the chunk, or ``followed``), else return it."""
        if not chunk:
            return None
        try:
            logs = json.loads(b"[" + b",".join(line for _, line in chunk) + b"]")
            if len(logs) == len(chunk) and all(isinstance(x, dict) for x in logs):
                yield from logs
                return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass
        for i, (log_number, line) in enumerate(chunk):
            try:
                log = json.loads(line)
            except json.JSONDecodeError as err:
                del self._log_number_offset[log_number + 1]
                for n in added:
                    if n > log_number + 1:
                        self._log_number_offset.pop(n, None)
                if followed or i + 1 < len(chunk):
                    raise err
                return err
            yield log
        return None


def whole_end(fd: int, block: int = 1 << 16) -> int:
    """The end of the last whole record (line) of the journal open as ``fd``; a trailing record
    without its line end (a write cut short) is cut off first."""
    size = os.fstat(fd).st_size
    pos = size
    while pos > 0:
        start = max(0, pos - block)
        cut = os.pread(fd, pos - start, start).rfind(b"\n")
        if cut >= 0:
            pos = start + cut + 1
            break
        pos = start
    if pos != size:
        os.ftruncate(fd, pos)
    return pos
