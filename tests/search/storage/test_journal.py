"""``ChunkedJournalFileBackend`` (dse/search/storage/journal.py) reads what optuna's ``JournalFileBackend``
reads: the same logs, offsets and errors, on whole, truncated and corrupted journals."""
from __future__ import annotations

import json

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from dse.search.storage import journal
from dse.search.storage.journal import ChunkedJournalFileBackend


def _journal(path, trials: int = 30) -> None:
    st = optuna.create_study(storage=JournalStorage(JournalFileBackend(str(path))), directions=["minimize"] * 2)
    for i in range(trials):
        t = st.ask()
        x = t.suggest_int("x", 0, 9)
        t.set_user_attr("dse", {"design": {"x": x, "i": i}, "metrics": {"m": {"a": x / 3, "b": [1, None, True]}}})
        st.tell(t, [float(x), float(9 - x)])


def _read(backend_cls, path, start: int = 0, offsets: dict | None = None):
    """(logs, error, offsets) of one read from ``start``, after ``offsets`` were learnt."""
    b = backend_cls(str(path))
    if offsets:
        b._log_number_offset.update(offsets)
    logs, err = [], None
    try:
        for log in b.read_logs(start):
            logs.append(log)
    except (ValueError, json.JSONDecodeError) as exc:
        err = (type(exc).__name__, str(exc))
    return logs, err, dict(b._log_number_offset)


@pytest.fixture(params=[2000, 3, 1], ids=["chunk2000", "chunk3", "chunk1"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(journal, "CHUNK", request.param)
    return request.param


def _same(path, start: int = 0):
    plain = _read(JournalFileBackend, path, start)
    ours = _read(ChunkedJournalFileBackend, path, start)
    assert ours == plain
    if start == 0 and plain[2]:                     # a second read from a learnt offset
        mid = sorted(plain[2])[len(plain[2]) // 2]
        assert _read(ChunkedJournalFileBackend, path, mid, plain[2]) == _read(JournalFileBackend, path, mid, plain[2])
    return plain


def test_a_whole_journal(tmp_path, chunk):
    p = tmp_path / "j.log"
    _journal(p)
    logs, err, _ = _same(p)
    assert err is None and len(logs) > 100
    _same(p, start=17)


def _lines(p) -> list[bytes]:
    return p.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("where", [0, 1, 2, 7, -3, -2, -1])
def test_a_corrupted_line(tmp_path, chunk, where):
    p = tmp_path / "j.log"
    _journal(p, trials=6)
    lines = _lines(p)
    lines[where] = lines[where][:len(lines[where]) // 2] + b"\n"        # not JSON any more
    p.write_bytes(b"".join(lines))
    logs, err, _ = _same(p)
    assert (err is not None) == (where != -1)     # a bad last line is left for the next read


@pytest.mark.parametrize("cut", [1, 5, 40])
def test_a_last_line_being_written(tmp_path, chunk, cut):
    p = tmp_path / "j.log"
    _journal(p, trials=6)
    data = p.read_bytes()
    p.write_bytes(data[:-cut])                    # no line end yet
    logs, err, _ = _same(p)
    assert err is None
    assert len(logs) == len(data.splitlines()) - 1


def test_lines_that_are_json_only_together_are_read_one_by_one(tmp_path, chunk):
    p = tmp_path / "j.log"
    _journal(p, trials=3)
    lines = _lines(p)
    p.write_bytes(b"".join(lines[:4]) + b"[1\n" + b"2]\n" + b"".join(lines[4:]))
    assert _same(p)[1] is not None


def test_a_journal_study_reads_the_same_trials(tmp_path, chunk):
    p = tmp_path / "j.log"
    _journal(p, trials=40)
    got = []
    for cls in (JournalFileBackend, ChunkedJournalFileBackend):
        st = optuna.load_study(study_name=None, storage=JournalStorage(cls(str(p))))
        got.append([(t.number, t.state, t.params, t.values, t.user_attrs) for t in st.get_trials(deepcopy=False)])
    assert got[0] == got[1] and len(got[0]) == 40


def test_keys_are_shared_between_the_trials_of_a_chunk(tmp_path):
    p = tmp_path / "j.log"
    _journal(p, trials=5)
    st = optuna.load_study(study_name=None, storage=JournalStorage(ChunkedJournalFileBackend(str(p))))
    keys = [next(iter(t.user_attrs["dse"]["metrics"]["m"])) for t in st.get_trials(deepcopy=False)]
    assert all(k is keys[0] for k in keys)
