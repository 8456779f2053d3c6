"""The placement cache: a hit (in-process or from disk) is the computed array; another profile
or domain is a miss; a corrupt file is recomputed."""
from __future__ import annotations

import os

import numpy as np
import pytest

from dse.mapping import placement as pl
from dse.mapping import warm_cache


def _profile(rng, L, E):
    """Mean tokens per step [L, E] of a skewed profile (the cache only sees the array)."""
    return rng.pareto(1.2, (L, E)) + 0.05, None


def test_placement_cache_hits_are_the_computed_array(tmp_path, monkeypatch):
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    load, coact = _profile(rng, 2, 32)
    dom = pl.domain(32, 2, 2, 8, 8, "partial")
    calls = []

    def compute():
        calls.append(1)
        return pl.place("lpt", dom, load)

    d = warm_cache.profile_digest(load, None)
    first = warm_cache.placement(d, dom, "lpt", compute)
    warm_cache.clear()                               # a fresh process: only the disk copy
    again = warm_cache.placement(d, dom, "lpt", compute)
    assert len(calls) == 1 and np.array_equal(first, again)
    assert len(list((tmp_path / "placements").glob("*.npy"))) == 1
    load2 = load.copy()
    load2[0, 0] += 1.0                                     # another profile: another key
    warm_cache.placement(warm_cache.profile_digest(load2, None), dom, "lpt", compute)
    other = pl.domain(32, 2, 1, 8, 8, "partial")
    warm_cache.placement(d, other, "lpt", compute)         # another domain: another key
    assert len(calls) == 3


def test_corrupt_cache_file_is_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path))
    load, _ = _profile(np.random.default_rng(1), 2, 16)
    dom = pl.domain(16, 2, 1, 8, 8, "partial")
    d = warm_cache.profile_digest(load, None)
    ref = warm_cache.placement(d, dom, "lpt", lambda: pl.place("lpt", dom, load))
    for f in (tmp_path / "placements").glob("*.npy"):
        f.write_bytes(b"not a numpy file")
    warm_cache.clear()
    assert np.array_equal(warm_cache.placement(d, dom, "lpt", lambda: pl.place("lpt", dom, load)), ref)


def test_unit_layouts_are_bounded_in_bytes_as_their_memo_grows(monkeypatch):
    """The per-process (layout, job counts) entries are counted again after each use and dropped,
    oldest first, beyond the byte bound; the metrics do not depend on what was kept."""
    from dse.mapping import trace_mapping as tm
    from dse.search.execute.evaluation import evaluate_design
    from dse.workload.window import BoundedCache
    design = {"trace": "synthetic", "batch": 32, "trace_steps": 8, "profile_steps": 4, "placement": "lpt"}
    free = [evaluate_design({**design, "core_side": s, "tile_width": w}, ["qwen3.5-35b-a3b"])
            for s in (2, 4) for w in (1, 2, 4)]
    monkeypatch.setattr(tm, "PLACEMENTS", BoundedCache(tm.MAX_PLACEMENTS, 10 ** 9, tm.entry_bytes))
    evaluate_design({**design, "core_side": 2, "tile_width": 1}, ["qwen3.5-35b-a3b"])
    one = tm.PLACEMENTS.bytes
    evaluate_design({**design, "core_side": 2, "tile_width": 2}, ["qwen3.5-35b-a3b"])
    assert tm.PLACEMENTS.bytes > one > 0                      # the same entry, grown by a tile width
    monkeypatch.setattr(tm, "PLACEMENTS", BoundedCache(tm.MAX_PLACEMENTS, one + 1, tm.entry_bytes))
    bounded = [evaluate_design({**design, "core_side": s, "tile_width": w}, ["qwen3.5-35b-a3b"])
               for s in (2, 4) for w in (1, 2, 4)]
    assert len(tm.PLACEMENTS._items) == 1 and bounded == free


def test_a_layout_entry_is_counted_again_only_when_its_memo_changed(monkeypatch):
    """A design whose tables its layout's memo already holds leaves the entry's bytes as they
    were: not counted again (the count walks every array); a new tile width is counted."""
    from dse.mapping import trace_mapping as tm
    from dse.search.execute.evaluation import evaluate_design
    from dse.workload.window import BoundedCache
    counts = []

    def nbytes(entry):
        counts.append(tm.entry_bytes(entry))
        return counts[-1]
    monkeypatch.setattr(tm, "PLACEMENTS", BoundedCache(tm.MAX_PLACEMENTS, 10 ** 9, nbytes))
    design = {"trace": "synthetic", "batch": 32, "trace_steps": 8, "profile_steps": 4, "placement": "lpt",
              "core_side": 2, "tile_width": 2}
    evaluate_design(design, ["qwen3.5-35b-a3b"])
    n = len(counts)
    evaluate_design({**design, "fetch": "load_aware"}, ["qwen3.5-35b-a3b"])    # same tables
    assert len(counts) == n
    evaluate_design({**design, "tile_width": 4}, ["qwen3.5-35b-a3b"])
    assert len(counts) > n and tm.PLACEMENTS.bytes == counts[-1] > counts[n - 1]     # one entry, grown


def test_a_layout_entry_counts_each_buffer_once():
    """``entry_bytes`` counts the memory an entry holds: an array the memo shares with the layout
    (tile width 1's jobs are the layout itself), a view (a direct chunk's per-resource jobs) and
    an array held twice (a broadcast chunk's per-core counts) count once, under their base."""
    from dse.mapping import trace_mapping as tm
    layout = np.zeros((8, 4, 3, 16), dtype=np.int16)
    jc = np.zeros((8, 4, 3), dtype=np.int32)
    jobs2 = np.ones((8, 4, 3, 16), dtype=np.int16)
    memo = {("jobs", 1): layout, ("jc", 1): jc, ("jobs", 2): jobs2, "ft": np.float32,
            ("chunk", 1, "broadcast"): (np.zeros(5), jc, 0.5),
            ("chunk", 2, "direct"): (jobs2.reshape(8, 4, -1), jobs2[..., :4])}
    assert tm.entry_bytes((layout, memo)) == layout.nbytes + jc.nbytes + jobs2.nbytes + 5 * 8


@pytest.mark.parametrize("value,expected", [(None, None), ("", None), ("2048", 2048 << 20), (" 64 ", 64 << 20)])
def test_the_layout_cache_bound_from_the_environment(value, expected):
    from dse.mapping import trace_mapping as tm
    env = {} if value is None else {tm.LAYOUT_CACHE_ENV: value}
    assert tm.layout_cache_bytes(env) == expected


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "abc", "1e3"])
def test_a_bad_layout_cache_bound_is_one_line(value):
    from dse.errors import ConfigError
    from dse.mapping import trace_mapping as tm
    with pytest.raises(ConfigError) as err:
        tm.layout_cache_bytes({tm.LAYOUT_CACHE_ENV: value})
    assert str(err.value) == (f"DSE_LAYOUT_CACHE_MB = {value!r}: must be a positive whole number of MiB per "
                              f"process (default 1024)")


def test_a_process_takes_the_bound_it_inherits_and_the_cli_refuses_a_bad_one():
    """A new process (as every evaluation worker is) reads the bound when it imports the module;
    the CLI refuses a bad one before any work, with one line and exit status 2."""
    import os
    import subprocess
    import sys
    code = "from dse.mapping import trace_mapping as tm; print(tm.PLACEMENTS.limit, tm.PLACEMENTS.max_bytes)"
    env = {**os.environ, "DSE_LAYOUT_CACHE_MB": "3000"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["4096", str(3000 << 20)]
    env.pop("DSE_LAYOUT_CACHE_MB")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["4096", str(1 << 30)]
    bad = subprocess.run([sys.executable, "-m", "dse", "params"], capture_output=True, text=True, timeout=120,
                         env={**env, "DSE_LAYOUT_CACHE_MB": "lots"})
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "dse: error: DSE_LAYOUT_CACHE_MB = 'lots': must be a positive whole number of MiB per process "
        "(default 1024)"]


# -- shared per-domain arrays ---------------------------------------------------------------------

def _shared_env(tmp_path, monkeypatch, mb=None):
    monkeypatch.setenv("DSE_WARM_CACHE_DIR", str(tmp_path / "shared"))
    monkeypatch.setenv("DSE_WARM_BUILD_LOG", str(tmp_path / "builds.log"))
    if mb is not None:
        monkeypatch.setenv("DSE_WARM_CACHE_MB", str(mb))
    monkeypatch.setattr(warm_cache, "_WARNED", [])


def _builds(tmp_path) -> list[str]:
    f = tmp_path / "builds.log"
    return f.read_text().split("\n")[:-1] if f.exists() else []


def test_shared_array_is_built_once_and_mapped_read_only(tmp_path, monkeypatch):
    _shared_env(tmp_path, monkeypatch)
    ref = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    key = warm_cache.content_key("t", ref)
    a = warm_cache.shared_array(key, ref.copy)
    b = warm_cache.shared_array(key, lambda: pytest.fail("built twice"))
    assert isinstance(a, np.memmap) and isinstance(b, np.memmap) and not b.flags.writeable
    assert np.array_equal(a, ref) and np.array_equal(b, ref) and len(_builds(tmp_path)) == 1
    assert warm_cache.content_key("t", ref + 1) != key
    assert sorted(p.name for p in (tmp_path / "shared").iterdir()) == [f"{key}.npy"]   # no lock, no temp


def test_half_written_or_damaged_entry_is_never_read(tmp_path, monkeypatch):
    _shared_env(tmp_path, monkeypatch)
    ref = np.arange(12, dtype=np.int16)
    key = warm_cache.content_key("half", ref)
    d = tmp_path / "shared"
    d.mkdir()
    (d / f".{key}.npy.999.1.tmp").write_bytes(b"\x93NUMPY half")      # another writer's temp file
    (d / f"{key}.npy").write_bytes(np.lib.format.magic(1, 0) + b"\x10\x00{'descr'")   # a damaged entry
    a = warm_cache.shared_array(key, ref.copy)
    assert np.array_equal(a, ref) and len(_builds(tmp_path)) == 1
    assert np.array_equal(np.load(d / f"{key}.npy", allow_pickle=False), ref)


@pytest.mark.parametrize("err", ["ENOSPC", "EFBIG"])
def test_full_disk_degrades_to_memory_with_one_warning(tmp_path, monkeypatch, capsys, err):
    import errno
    _shared_env(tmp_path, monkeypatch)
    real = np.save

    def full(fh, *a, **k):
        fh.write(b"\x93NUMPY partial")
        raise OSError(getattr(errno, err), os.strerror(getattr(errno, err)))
    monkeypatch.setattr(np, "save", full)
    refs = [np.full((4, 4), i, dtype=np.uint8) for i in range(3)]
    got = [warm_cache.shared_array(warm_cache.content_key("full", r), r.copy) for r in refs]
    assert all(np.array_equal(g, r) for g, r in zip(got, refs))
    lines = [x for x in capsys.readouterr().err.splitlines() if x]
    assert len(lines) == 1 and lines[0].startswith("dse: warning: shared warm cache") and \
        os.strerror(getattr(errno, err)) in lines[0]
    assert list((tmp_path / "shared").iterdir()) == []            # neither entry nor temp nor lock
    monkeypatch.setattr(np, "save", real)                         # space again: stored and mapped
    again = warm_cache.shared_array(warm_cache.content_key("full", refs[0]), refs[0].copy)
    assert isinstance(again, np.memmap) and np.array_equal(again, refs[0])


def test_cache_is_bounded_least_recently_used_first(tmp_path, monkeypatch):
    _shared_env(tmp_path, monkeypatch, mb=1)
    arrays = [np.full(400_000, i, dtype=np.uint8) for i in range(4)]
    keys = [warm_cache.content_key("lru", a) for a in arrays]
    for i in range(2):
        warm_cache.shared_array(keys[i], arrays[i].copy)
        os.utime(tmp_path / "shared" / f"{keys[i]}.npy", (1000 + i, 1000 + i))
    warm_cache.shared_array(keys[0], lambda: pytest.fail("a hit"))   # used: now the most recent
    warm_cache.shared_array(keys[2], arrays[2].copy)                  # 1.2 MB > 1 MiB: evicts keys[1]
    left = {p.stem for p in (tmp_path / "shared").glob("*.npy")}
    assert left == {keys[0], keys[2]}


def test_the_folder_is_scanned_only_when_it_may_be_over_its_bound(tmp_path, monkeypatch):
    _shared_env(tmp_path, monkeypatch, mb=1)
    scans = []
    real = os.scandir
    monkeypatch.setattr(warm_cache.os, "scandir", lambda d: scans.append(d) or real(d))
    n = warm_cache.EVICT_RESCAN_PUBLISHES + 2
    arrays = [np.full(1000, i, dtype=np.uint16) for i in range(n)]
    for a in arrays:                                     # 2 KB each: far under 1 MiB
        warm_cache.shared_array(warm_cache.content_key("scan", a), a.copy)
    assert len(scans) == 2                               # the first write, then one rescan
    other = tmp_path / "shared" / "other-process.npy"    # another process fills the folder
    np.save(other, np.zeros(1_100_000, dtype=np.uint8))
    os.utime(other, (1, 1))
    for i in range(warm_cache.EVICT_RESCAN_PUBLISHES + 1):
        a = np.full(1000, n + i, dtype=np.uint16)
        warm_cache.shared_array(warm_cache.content_key("scan", a), a.copy)
    assert len(scans) == 3 and not other.exists()        # seen at the next rescan, evicted


def test_stale_lock_of_a_dead_process_is_taken_over(tmp_path, monkeypatch):
    import socket
    import subprocess
    import sys
    _shared_env(tmp_path, monkeypatch)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ref = np.ones(8, dtype=np.uint8)
    key = warm_cache.content_key("stale", ref)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / f".{key}.lock").write_text(f"{socket.gethostname()} {dead.pid}")
    assert np.array_equal(warm_cache.shared_array(key, ref.copy), ref)
    assert len(_builds(tmp_path)) == 1 and not (tmp_path / "shared" / f".{key}.lock").exists()


def _race(args):
    folder, log, start = args
    import time
    os.environ["DSE_WARM_CACHE_DIR"], os.environ["DSE_WARM_BUILD_LOG"] = folder, log
    while time.time() < start:
        pass

    def slow():
        time.sleep(0.3)
        return np.arange(1000, dtype=np.int32)
    a = warm_cache.shared_array(warm_cache.content_key("race"), slow)
    return int(a.sum())


def test_two_processes_writing_one_key_build_it_once(tmp_path):
    import multiprocessing as mp
    import time
    args = (str(tmp_path / "shared"), str(tmp_path / "builds.log"), time.time() + 1.0)
    with mp.get_context("spawn").Pool(3) as p:
        sums = p.map(_race, [args] * 3)
    assert sums == [499500] * 3 and len(_builds(tmp_path)) == 1


def test_a_claimed_entry_is_published_in_parts_or_released(tmp_path, monkeypatch):
    """``claim`` a missing entry: this process holds its lock until it ``publish``es the arrays
    (each part its own file, mapped back) or ``release``s it (nothing written)."""
    _shared_env(tmp_path, monkeypatch)
    d = tmp_path / "shared"
    key, other = warm_cache.content_key("parts"), warm_cache.content_key("given up")
    assert warm_cache.claim(key, 2) is None and (d / f".{key}.lock").exists()
    parts = (np.arange(6, dtype=np.int64).reshape(2, 3), np.ones(4, dtype=np.int64))
    got = warm_cache.publish(key, parts, kind="table")
    assert not (d / f".{key}.lock").exists() and all(isinstance(g, np.memmap) for g in got)
    again = warm_cache.claim(key, 2)
    assert all(np.array_equal(a, b) for a, b in zip(again, parts)) and len(again) == 2
    assert [x.split()[2] for x in _builds(tmp_path)] == ["table"]
    assert warm_cache.claim(other, 2) is None
    warm_cache.release(other)
    assert not (d / f".{other}.lock").exists() and not list(d.glob(f"{other}*"))


def test_an_eviction_leaves_room_below_the_bound(tmp_path, monkeypatch):
    """Evicting down to EVICT_LOW_WATER of the bound: the next writes fit without a scan (a
    folder held at its bound exactly was scanned at every write, issue 48)."""
    _shared_env(tmp_path, monkeypatch, mb=1)
    scans = []
    real = os.scandir
    monkeypatch.setattr(warm_cache.os, "scandir", lambda d: scans.append(d) or real(d))
    big = [np.full(349_000, i, dtype=np.uint8) for i in range(4)]      # 1.4 MB; three: 1.2 KB under 1 MiB
    for a in big:
        warm_cache.shared_array(warm_cache.content_key("low", a), a.copy)
    size = sum(p.stat().st_size for p in (tmp_path / "shared").glob("*.npy"))
    assert size <= warm_cache.EVICT_LOW_WATER * (1 << 20)
    before = len(scans)
    small = [np.full(2_000, 100 + i, dtype=np.uint8) for i in range(5)]   # 10 KB: over a bound-tight folder
    for a in small:
        warm_cache.shared_array(warm_cache.content_key("low", a), a.copy)
    assert len(scans) == before
