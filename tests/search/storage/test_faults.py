"""A full disk loses nothing (issue 35.2): ENOSPC and EFBIG at random points of a real `dse run`
on SQLite and on a journal file (``faults.py``). The run stops with ONE line and exit 2, the
storage passes its integrity check, no trial finished before the fault is lost, and `dse run`
without the fault resumes to exactly the trials of an uninterrupted run."""
from __future__ import annotations

import errno
import json
import os

import pytest

from tests.search.storage.faults import build_shim, compiler, fault_case, fault_points, reference

POINTS_PER_CASE = 2
SEEDS = {("sqlite", "ENOSPC"): 1, ("sqlite", "EFBIG"): 2, ("journal", "ENOSPC"): 3, ("journal", "EFBIG"): 4}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("faults")


@pytest.mark.slow
@pytest.mark.long                # a study stopped at every fault point: a child process each
@pytest.mark.skipif(compiler() is None, reason="no C compiler for the ENOSPC fault library")
@pytest.mark.parametrize("backend", ["sqlite", "journal"])
def test_a_full_disk_stops_the_study_in_one_line_and_loses_nothing(backend, work):
    shim = build_shim(work)
    ref, size = reference(work, backend)
    stopped = 0
    for fault in ("ENOSPC", "EFBIG"):
        for point in fault_points(size, POINTS_PER_CASE, SEEDS[backend, fault], backend):
            o = fault_case(work, backend, fault, point, ref, shim)
            case = f"{backend} {fault} at {point} bytes: {o}"
            if o.rc != 0:
                stopped += 1
                assert o.rc == 2 and o.one_line, case
            assert o.integrity == "ok", case
            assert o.lost == 0 and o.resume_rc == 0 and o.exact, case
    assert stopped, "no fault point stopped the study: nothing was tested"


def _journal_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_the_journal_cuts_off_a_half_written_record_before_appending(tmp_path):
    from dse.search.storage.journal import ChunkedJournalFileBackend
    path = tmp_path / "j.log"
    b = ChunkedJournalFileBackend(str(path))
    b.append_logs([{"op_code": 0, "worker_id": "a"}])
    with open(path, "ab") as fh:
        fh.write(b'{"op_code": 4, "worker_id": "a", "trial')       # a write cut short
    b.append_logs([{"op_code": 1, "worker_id": "b"}, {"op_code": 2, "worker_id": "b"}])
    assert [r["op_code"] for r in _journal_lines(path)] == [0, 1, 2]
    assert [r["op_code"] for r in b.read_logs(0)] == [0, 1, 2]


def test_a_failed_journal_append_leaves_the_records_before_it_whole(tmp_path, monkeypatch):
    from dse.search.storage import journal
    path = tmp_path / "j.log"
    b = journal.ChunkedJournalFileBackend(str(path))
    b.append_logs([{"op_code": 0, "worker_id": "a"}])
    size = path.stat().st_size
    real = os.pwrite

    def half_then_full(fd, data, offset):         # the disk fills up in the middle of the record
        if len(data) > 10:
            return real(fd, data[:10], offset)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(journal.os, "pwrite", half_then_full)
    with pytest.raises(OSError) as exc:
        b.append_logs([{"op_code": 1, "worker_id": "b", "x": "y" * 100}])
    assert exc.value.errno == errno.ENOSPC
    assert path.stat().st_size == size
    monkeypatch.setattr(journal.os, "pwrite", real)
    b.append_logs([{"op_code": 2, "worker_id": "c"}])
    assert [r["op_code"] for r in _journal_lines(path)] == [0, 2]


def test_disk_full_recognises_the_errors_a_full_disk_raises():
    import sqlite3

    from dse.errors import disk_full
    assert disk_full(OSError(errno.ENOSPC, "No space left on device")) == os.strerror(errno.ENOSPC)
    assert disk_full(OSError(errno.EFBIG, "File too large")) == os.strerror(errno.EFBIG)
    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as inner:
            raise RuntimeError("optuna's StorageInternalError") from inner
    except RuntimeError as outer:
        assert disk_full(outer) == "the database or disk is full"
    assert disk_full(ValueError("something else")) is None
    assert disk_full(OSError(errno.EACCES, "Permission denied")) is None
