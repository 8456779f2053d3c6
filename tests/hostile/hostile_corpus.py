"""The hostile-input corpus: malformed and adversarial inputs, each run through the real CLI.

Every file under a corpus folder is one case; the folder says which command reads it
(``FOLDERS``). ``expect.toml`` lists, for every case, substrings its one-line error must contain
(the key, the allowed values...); a case missing there fails the test, so a new corpus file
cannot go unchecked. ``EXTRA`` holds the cases that are not files in the corpus (directories,
missing files, devices, ``--set`` overrides, inputs built at run time).

A case passes when: exit status 2, nothing but ONE line on stderr, starting ``dse: error:``,
naming the input, with every expected substring, and no traceback.

    python tests/hostile/make_table.py      # the Markdown table: every case and its error line
"""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

# folder -> (argv with {f} for the file, what the command reads)
FOLDERS: dict[str, tuple[list[str], str]] = {
    "design": (["evaluate", "{f}"], "design TOML"),
    "catalog": (["--catalog", "{f}", "models"], "model catalog (--catalog)"),
    "trace": (["trace", "stats", "{f}"], "routing trace / router dump"),
    # A throw-away storage: a space whose bound fails only when a trial is drawn opens it first.
    "study": (["run", "{f}", "--no-progress", "--storage", "sqlite:///{tmp}/hostile.db"],
              "study TOML (+ space / objectives)"),
}


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    kind: str
    names: str              # what the error line must name (the file, or the option)
    expect: tuple[str, ...]  # further substrings of the error line
    setup: str = ""         # name of a builder in BUILDERS run before the command (in a temp dir)


# Cases that are not files of the corpus. {tmp} = a fresh temporary directory.
EXTRA: list[Case] = [
    Case("design/missing_file", ("evaluate", "design/no_such_file.toml"), "design TOML",
         "design/no_such_file.toml", ("no such file",)),
    Case("design/a_directory", ("evaluate", "design"), "design TOML", "design", ("is a directory",)),
    Case("design/dev_zero", ("evaluate", "/dev/zero"), "design TOML", "/dev/zero", ("larger than 16 MiB",)),
    Case("design/huge_file", ("evaluate", "{tmp}/huge.toml"), "design TOML", "huge.toml",
         ("larger than 16 MiB",), setup="huge_toml"),
    Case("design/integer_beyond_digit_limit", ("evaluate", "{tmp}/digits.toml"), "design TOML", "digits.toml",
         ("not representable",), setup="digits_toml"),
    Case("catalog/missing_file", ("--catalog", "catalog/no_such_file.toml", "models"), "model catalog (--catalog)",
         "no_such_file.toml", ("no such file",)),
    Case("trace/via_evaluate_pickled", ("evaluate", "--model", "olmoe-1b-7b", "--set",
                                        "trace=trace/pickled_object_model.npz"), "routing trace / router dump",
         "pickled_object_model.npz", ("allow_pickle=False",)),
    Case("trace/via_evaluate_out_of_range", ("evaluate", "--model", "olmoe-1b-7b", "--set",
                                             "trace=trace/ids_out_of_range.npz"), "routing trace / router dump",
         "ids_out_of_range.npz", ("experts[1,3,0,2] = 64", "[0, 63]")),
    Case("trace/via_evaluate_other_model", ("evaluate", "--model", "mixtral-8x7b", "--set",
                                            "trace={tmp}/olmoe.npz"), "routing trace / router dump",
         "olmoe.npz", ("trace of model 'olmoe-1b-7b'", "uses 'mixtral-8x7b'"), setup="valid_trace"),
    Case("trace/missing_file", ("trace", "stats", "trace/no_such.npz"), "routing trace / router dump",
         "no_such.npz", ("no such file",)),
    Case("trace/a_directory", ("trace", "stats", "trace"), "routing trace / router dump", "trace",
         ("is a directory",)),
    Case("study/storage_bad_scheme", ("run", "study/parts/storage_bad_scheme.toml", "--no-progress"),
         "study TOML (+ space / objectives)", "redis://localhost/0", ("unknown URL scheme 'redis'", "postgresql://")),
    Case("set/no_equals", ("evaluate", "--set", "core_side"), "--set override", "--set", ("expected KEY=VALUE",)),
    Case("set/unknown_key", ("evaluate", "--set", "cores_side=4"), "--set override", "--set",
         ("unknown key", "did you mean 'core_side'")),
    Case("set/unknown_section", ("evaluate", "--set", "hw.core_side=4"), "--set override", "--set",
         ("unknown section", "hardware, workload, mapping")),
    Case("set/nan", ("evaluate", "--set", "macro_mhz=nan"), "--set override", "--set",
         ("macro_mhz", "not finite")),
    Case("set/inf_int", ("evaluate", "--set", "core_side=inf"), "--set override", "--set",
         ("core_side", "[1, 20]")),
    Case("set/huge", ("evaluate", "--set", "array_depth=" + "9" * 40), "--set override", "--set",
         ("array_depth", "[256, 1048576]")),
    Case("set/bad_choice", ("evaluate", "--set", "placement=random"), "--set override", "--set",
         ("placement", "'contiguous', 'lpt', 'coactivation'")),
    Case("set/model", ("evaluate", "--model", "gpt-5"), "--model", "model", ("qwen3.5-35b-a3b",)),
    Case("set/batch_zero", ("evaluate", "--batch", "0"), "--batch", "batch", ("[1, 1048576]",)),
    Case("catalog/trace_beyond_memory", ("--catalog", "{tmp}/huge.toml", "evaluate", "--model", "huge"),
         "model catalog (--catalog)", "model huge", ("GiB", "trace_steps"), setup="huge_catalog"),
]

_VALID = "study/parts/valid.toml"
_V_DB = ("--storage", "{tmp}/v.db")          # a finished run of _VALID (setup="valid_study")

# Storages (--storage and `dse study list`): damaged, foreign and misplaced files, read-only commands.
_STORAGE = "storage (--storage URL or file)"
_OPTION = "command-line option"
EXTRA += [
    Case("storage/not_a_sqlite_file", ("front", _VALID, "--storage", "{tmp}/notes.db"), _STORAGE, "notes.db",
         ("not a SQLite database",), setup="notes_db"),
    Case("storage/truncated_database", ("front", _VALID, "--storage", "{tmp}/damaged.db"), _STORAGE, "damaged.db",
         ("damaged or truncated SQLite database",), setup="truncated_db"),
    Case("storage/corrupted_database", ("run", _VALID, "--no-progress", "--storage", "{tmp}/damaged.db"), _STORAGE,
         "damaged.db", ("damaged or truncated SQLite database",), setup="corrupted_db"),
    Case("storage/missing_folder", ("run", _VALID, "--no-progress", "--storage", "{tmp}/no/such/s.db"), _STORAGE,
         "no/such/s.db", ("does not exist",)),
    Case("storage/a_directory", ("run", _VALID, "--no-progress", "--storage", "{tmp}/adir.db"), _STORAGE,
         "adir.db", ("is a directory",), setup="dir_db"),
    Case("storage/scheme_in_user_spelling", ("front", _VALID, "--storage", "ReDiS://Host/0"), _STORAGE,
         "ReDiS://Host/0", ("unknown URL scheme 'ReDiS'",)),
    Case("storage/front_of_a_study_never_run", ("front", _VALID, "--storage", "{tmp}/none.db"), _STORAGE,
         "study/parts/valid.toml", ("no study 'hostile-valid'", "none.db")),
    Case("storage/plot_of_a_study_never_run", ("plot", _VALID, "--storage", "{tmp}/none.db", "-o", "{tmp}/p.png"),
         _STORAGE, "study/parts/valid.toml", ("no study 'hostile-valid'",)),
    Case("storage/export_of_a_study_never_run", ("export", _VALID, "--knee", "-o", "{tmp}/k.toml", "--storage",
                                                 "{tmp}/none.db"), _STORAGE, "study/parts/valid.toml",
         ("no study 'hostile-valid'",)),
    Case("storage/report_of_a_study_never_run", ("report", _VALID, "--storage", "{tmp}/none.db", "-o",
                                                 "{tmp}/r.html"), _STORAGE, "study/parts/valid.toml",
         ("no study 'hostile-valid'",)),
    Case("storage/other_study_in_the_file", ("front", "study/parts/valid_renamed.toml", *_V_DB), _STORAGE,
         "valid_renamed.toml", ("no study 'hostile-other'",), setup="valid_study"),
    Case("storage/study_list_missing_file", ("study", "list", "{tmp}/none.db"), _STORAGE, "none.db",
         ("no such file",)),
    Case("storage/study_list_not_sqlite", ("study", "list", "{tmp}/notes.db"), _STORAGE, "notes.db",
         ("not a SQLite database",), setup="notes_db"),
    Case("storage/study_list_truncated", ("study", "list", "{tmp}/damaged.db"), _STORAGE, "damaged.db",
         ("damaged or truncated",), setup="truncated_db"),
    Case("options/report_unknown_extension", ("report", _VALID, "-o", "{tmp}/r.pdf"), _OPTION, "r.pdf",
         ("unknown report extension", ".html", "--format")),
    Case("options/front_negative_candidates", ("front", _VALID, "--candidates", "-1"), _OPTION, "--candidates",
         ("positive number",)),
    Case("storage/postgres_unreachable", ("front", _VALID, "--storage",
                                          "postgresql://u:secret@127.0.0.1:1/db?connect_timeout=2"), _STORAGE,
         "postgresql://u:***@127.0.0.1:1/db", ("cannot connect",)),
]

# Options of run / worker / reproduce.
_OPTS = "command-line option"
EXTRA += [
    Case("option/run_jobs_zero", ("run", _VALID, "--jobs", "0"), _OPTS, "--jobs 0", ("positive number",)),
    Case("option/run_jobs_not_a_number", ("run", _VALID, "--jobs", "many"), _OPTS, "--jobs", ("'many'",)),
    Case("option/worker_db_retry_negative", ("worker", _VALID, "--storage", "{tmp}/w.db", "--db-retry", "-1"),
         _OPTS, "--db-retry -1:", ("[0, 86400]",)),
    Case("option/worker_db_retry_nan", ("worker", _VALID, "--storage", "{tmp}/w.db", "--db-retry", "nan"),
         _OPTS, "--db-retry nan", ("[0, 86400]",)),
    Case("option/worker_heartbeat_zero", ("worker", _VALID, "--storage", "{tmp}/w.db", "--heartbeat", "0"),
         _OPTS, "--heartbeat 0", ("[1, 3600]",)),
    Case("option/worker_poll_zero", ("worker", _VALID, "--storage", "{tmp}/w.db", "--poll", "0"),
         _OPTS, "--poll 0:", ("[0.01, 3600]",)),
    Case("option/unknown_command", ("frobnicate",), _OPTS, "frobnicate", ("invalid choice", "evaluate")),
    Case("option/reproduce_only_no_match", ("reproduce", "--only", "nonexistent"), _OPTS, "--only 'nonexistent'",
         ("no reference entry", "latency_35b")),
]

# `dse trace convert` with several router dumps.
_CONVERT = "router dumps (multi-dump convert)"
_CV = ("trace", "convert")
_OUT = ("-o", "{tmp}/out.npz", "--model", "olmoe-1b-7b")
EXTRA += [
    Case("convert/dumps_of_different_models", _CV + ("{tmp}/olmoe_a.jsonl", "{tmp}/mixtral.jsonl") + _OUT, _CONVERT,
         "mixtral.jsonl", ("16 of 32 layers",), setup="dumps"),
    Case("convert/second_dump_missing", _CV + ("{tmp}/olmoe_a.jsonl", "{tmp}/nothere.jsonl") + _OUT, _CONVERT,
         "nothere.jsonl", ("no such file",), setup="dumps"),
    Case("convert/second_dump_truncated", _CV + ("{tmp}/olmoe_a.jsonl", "trace/router_dump_truncated.json") + _OUT,
         _CONVERT, "router_dump_truncated.json", (), setup="dumps"),
    Case("convert/dump_given_twice", _CV + ("{tmp}/olmoe_a.jsonl", "{tmp}/olmoe_a.jsonl") + _OUT, _CONVERT,
         "olmoe_a.jsonl", ("given twice",), setup="dumps"),
    Case("convert/output_is_an_input", _CV + ("{tmp}/olmoe_a.jsonl", "{tmp}/olmoe_b.jsonl", "-o",
                                              "{tmp}/olmoe_b.jsonl"), _CONVERT, "olmoe_b.jsonl",
         ("is one of the input dumps",), setup="dumps"),
    Case("convert/output_is_a_directory", _CV + ("{tmp}/olmoe_a.jsonl", "-o", "{tmp}/adir.db"), _CONVERT,
         "adir.db", ("cannot write", "Is a directory"), setup="dumps"),
    Case("convert/output_folder_missing", _CV + ("{tmp}/olmoe_a.jsonl", "-o", "{tmp}/no/out.npz"), _CONVERT,
         "no/out.npz", ("cannot write",), setup="dumps"),
    Case("convert/bad_phase", _CV + ("{tmp}/olmoe_a.jsonl",) + _OUT + ("--phase", "nope"), _CONVERT, "--phase",
         ("invalid choice: 'nope'",), setup="dumps"),
    Case("convert/batch_zero", _CV + ("{tmp}/olmoe_a.jsonl",) + _OUT + ("--batch", "0"), _CONVERT, "--batch",
         (">= 1",), setup="dumps"),
]


# `dse grid` spaces, `dse compare` arguments, `dse front --robust` arguments.
_INSPECT = "grid / compare / --robust argument"
EXTRA += [
    Case("grid/space_syntax_error", ("grid", "study/parts/space_syntax_error.toml"), _INSPECT,
         "study/parts/space_syntax_error.toml", ("TOML syntax error",)),
    Case("grid/space_missing", ("grid", "study/parts/no_such_space.toml"), _INSPECT, "no_such_space.toml",
         ("no such file",)),
    Case("grid/trace_driven_knob", ("grid", "{tmp}/tsp.toml"), _INSPECT, "tsp.toml",
         ("params.placement", "trace-driven knob"), setup="trace_knob_space"),
    Case("grid/unknown_model", ("grid", "study/parts/space.toml", "--model", "gpt-5"), _INSPECT, "--model",
         ("'gpt-5'", "qwen3.5-35b-a3b")),
    Case("grid/output_not_parquet", ("grid", "study/parts/space.toml", "-o", "{tmp}/x.txt"), _INSPECT, "x.txt",
         ("parquet",)),
    Case("compare/one_study", ("compare", _VALID), _INSPECT, "compare", ("at least two studies",)),
    Case("compare/bad_override", ("compare", _VALID, _VALID + "@sed=1", *_V_DB), _INSPECT, "sed=1",
         ("seed=S, model=NAME or storage=URL",), setup="valid_study"),
    Case("compare/missing_study_file", ("compare", _VALID, "study/parts/nothere.toml", *_V_DB), _INSPECT,
         "nothere.toml", ("no such file",), setup="valid_study"),
    Case("compare/second_never_run", ("compare", _VALID, _VALID + "@seed=99", *_V_DB), _INSPECT, "valid.toml",
         ("no study",), setup="valid_study"),
    Case("compare/output_not_an_image", ("compare", _VALID, _VALID + "@seed=0", *_V_DB, "-o", "{tmp}/c.txt"),
         _INSPECT, "c.txt", ("png",), setup="valid_study"),
    Case("compare/override_seed_not_a_number", ("compare", _VALID, _VALID + "@seed=x", *_V_DB), _INSPECT,
         "seed=x", (), setup="valid_study"),
    Case("compare/override_unknown_model", ("compare", _VALID, _VALID + "@model=gpt-5", *_V_DB), _INSPECT,
         "gpt-5", ("qwen3.5-35b-a3b",), setup="valid_study"),
    Case("compare/override_bad_storage", ("compare", _VALID, _VALID + "@storage=ReDiS://h/0", *_V_DB), _INSPECT,
         "ReDiS://h/0", ("unknown URL scheme 'ReDiS'",), setup="valid_study"),
    Case("robust/bad_seeds", ("front", _VALID, *_V_DB, "--robust", "3", "--seeds", "a,b"), _INSPECT, "--seeds",
         ("comma-separated integers",), setup="valid_study"),
    Case("robust/zero", ("front", _VALID, *_V_DB, "--robust", "0"), _INSPECT, "--robust 0",
         ("positive",), setup="valid_study"),
    Case("robust/unknown_model", ("front", _VALID, *_V_DB, "--models", "gpt-5"), _INSPECT, "gpt-5",
         ("qwen3.5-35b-a3b",), setup="valid_study"),
    Case("robust/trace_missing", ("front", _VALID, *_V_DB, "--trace", "trace/no_such.npz"), _INSPECT,
         "no_such.npz", ("no such file",), setup="valid_study"),
    Case("robust/report_zero", ("report", _VALID, *_V_DB, "-o", "{tmp}/r.html", "--robust", "0"), _INSPECT,
         "--robust 0", ("positive",), setup="valid_study"),
    Case("report/unknown_column", ("report", _VALID, *_V_DB, "-o", "{tmp}/r.html", "--columns", "nope"),
         _INSPECT, "nope", ("--columns",), setup="valid_study"),
    Case("report/unknown_sort", ("report", _VALID, *_V_DB, "-o", "{tmp}/r.html", "--sort", "nope"),
         _INSPECT, "nope", ("--sort",), setup="valid_study"),
    Case("front/unknown_sort", ("front", _VALID, *_V_DB, "--sort=-nope"), _INSPECT, "nope", ("--sort",),
         setup="valid_study"),
    Case("report/bad_format", ("report", _VALID, *_V_DB, "-o", "{tmp}/r.html", "--format", "pdf"), _INSPECT,
         "--format", ("invalid choice: 'pdf'",)),
    Case("grid/objectives_missing", ("grid", "study/parts/space.toml", "--objectives", "study/parts/no.toml"),
         _INSPECT, "no.toml", ("no such file",)),
    Case("grid/batch_zero", ("grid", "study/parts/space.toml", "--batch", "0"), _INSPECT, "batch",
         ("[1, 1048576]",)),
    Case("grid/space_empty", ("grid", "study/parts/space_empty_file.toml"), _INSPECT, "space_empty_file.toml", ()),
]

# Dask scheduler addresses (`dse run --backend dask`): one line, fast, no traceback.
_DASK = "Dask scheduler address (--scheduler)"
EXTRA += [
    Case("dask/scheduler_garbage", ("run", _VALID, "--no-progress", "--storage", "{tmp}/d.db", "--backend", "dask",
                                    "--scheduler", "garbage"), _DASK, "garbage", ()),
    Case("dask/scheduler_unreachable", ("run", _VALID, "--no-progress", "--storage", "{tmp}/d.db", "--backend",
                                        "dask", "--scheduler", "tcp://127.0.0.1:1"), _DASK, "tcp://127.0.0.1:1", ()),
    Case("dask/scheduler_bad_scheme", ("run", _VALID, "--no-progress", "--storage", "{tmp}/d.db", "--backend",
                                       "dask", "--scheduler", "http://127.0.0.1:8786"), _DASK,
         "http://127.0.0.1:8786", ()),
    Case("dask/scheduler_port_out_of_range", ("run", _VALID, "--no-progress", "--storage", "{tmp}/d.db",
                                              "--backend", "dask", "--scheduler", "tcp://127.0.0.1:70000"), _DASK,
         "tcp://127.0.0.1:70000", ("not a scheduler address",)),
    Case("dask/scheduler_without_dask", ("run", _VALID, "--no-progress", "--storage", "{tmp}/d.db", "--scheduler",
                                         "tcp://127.0.0.1:8786"), _DASK, "--scheduler", ("only with --backend dask",)),
]


def _huge_toml(tmp: Path) -> None:
    with open(tmp / "huge.toml", "w") as fh:  # 17 MiB of comments: valid TOML, but not a config
        line = "#" * 1023 + "\n"
        for _ in range(17 * 1024):
            fh.write(line)


def _digits_toml(tmp: Path) -> None:
    (tmp / "digits.toml").write_text("[hardware]\ncore_side = " + "9" * 5000 + "\n")


def _valid_trace(tmp: Path) -> None:
    """A valid olmoe-1b-7b trace (synthetic ids), for a mismatched-model case."""
    import numpy as np

    from dse.workload.trace import make_trace, save_trace
    rng = np.random.default_rng(1)
    ids = np.stack([rng.permutation(64)[:8] for _ in range(2 * 16 * 4)]).reshape(2, 16, 4, 8)
    save_trace(make_trace(ids, "olmoe-1b-7b", 64, source="hostile corpus"), tmp / "olmoe.npz")


def _valid_study(tmp: Path) -> None:
    """A finished 2-trial run of study/parts/valid.toml in ``{tmp}/v.db``."""
    import contextlib
    import io

    from dse.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", str(HERE / _VALID), "--no-progress", "--storage", str(tmp / "v.db")]) == 0


def _trace_knob_space(tmp: Path) -> None:
    (tmp / "tsp.toml").write_text('[params]\nplacement = { type = "categorical", choices = ["lpt", "contiguous"] }\n')


def _huge_catalog(tmp: Path) -> None:
    """A model whose default synthetic trace would need petabytes: refused before allocation."""
    (tmp / "huge.toml").write_text('[huge]\nname = "huge"\nexperts = 65536\ntop_k = 65536\nmoe_layers = 100000\n'
                                   'hidden = 64\nexpert_intermediate = 32\n')


def _notes_db(tmp: Path) -> None:
    (tmp / "notes.db").write_text("my notes, not a database\n")


def _sqlite_file(tmp: Path) -> tuple[Path, bytearray, int]:
    import sqlite3
    db = tmp / "damaged.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x BLOB)")
    conn.executemany("INSERT INTO t VALUES (?)", [(bytes([i % 251]) * 500,) for i in range(400)])
    conn.commit()
    conn.close()
    return db, bytearray(db.read_bytes()), 4096


def _truncated_db(tmp: Path) -> None:
    db, data, page = _sqlite_file(tmp)
    db.write_bytes(bytes(data[:len(data) // 2 + page // 3]))


def _corrupted_db(tmp: Path) -> None:
    db, data, page = _sqlite_file(tmp)
    for i in range(2 * page, len(data), page):
        data[i:i + 64] = b"\xa5" * 64
    db.write_bytes(bytes(data))


def _dir_db(tmp: Path) -> None:
    (tmp / "adir.db").mkdir()


def _dumps(tmp: Path) -> None:
    """Valid JSON-lines router dumps: two of olmoe-1b-7b (64 experts, top-8, 16 layers), one shaped
    like mixtral-8x7b (8 experts, top-2, 32 layers); an existing directory ``adir.db``."""
    import json
    import random
    rng = random.Random(1)
    for name, (e, k, layers) in {"olmoe_a": (64, 8, 16), "olmoe_b": (64, 8, 16), "mixtral": (8, 2, 32)}.items():
        with open(tmp / f"{name}.jsonl", "w") as fh:
            for t in range(4):
                fh.write(json.dumps({"token": t, "layers": {str(i): rng.sample(range(e), k)
                                                            for i in range(layers)}}) + "\n")
    (tmp / "adir.db").mkdir(exist_ok=True)


BUILDERS = {"huge_toml": _huge_toml, "digits_toml": _digits_toml, "valid_trace": _valid_trace,
            "huge_catalog": _huge_catalog, "notes_db": _notes_db, "truncated_db": _truncated_db,
            "corrupted_db": _corrupted_db, "dir_db": _dir_db, "dumps": _dumps, "valid_study": _valid_study,
            "trace_knob_space": _trace_knob_space}


def file_cases() -> list[Case]:
    expect = tomllib.loads((HERE / "expect.toml").read_text())
    cases = []
    for folder, (argv, kind) in FOLDERS.items():
        for f in sorted(p for p in (HERE / folder).iterdir() if p.is_file()):  # parts/: helper files
            rel = f"{folder}/{f.name}"
            needles = expect.get(folder, {}).get(f.name)
            names = rel
            if isinstance(needles, dict):  # { names = "what the error names instead", expect = [...] }
                names, needles = needles["names"], needles["expect"]
            cases.append(Case(rel, tuple(a.replace("{f}", rel) for a in argv), kind, names,
                              tuple(needles) if needles is not None else ("<missing from expect.toml>",)))
    return cases


def all_cases() -> list[Case]:
    return file_cases() + EXTRA


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str

    @property
    def line(self) -> str:
        return self.stderr.strip()


def run_case(case: Case, tmp: Path, *, subprocess_cli: bool = True) -> Outcome:
    """Run the CLI on one case from the corpus folder: the real ``python -m dse`` in a subprocess,
    or ``dse.cli.main`` in this process (``subprocess_cli=False``: the same code path, ~10x
    faster; an exception other than a DSE error is caught and reported like a traceback)."""
    if case.setup:
        BUILDERS[case.setup](tmp)
    argv = [a.replace("{tmp}", str(tmp)) for a in case.argv]
    if subprocess_cli:
        env = {k: v for k, v in os.environ.items() if k != "DSE_CATALOG"}
        proc = subprocess.run([sys.executable, "-m", "dse", *argv], cwd=HERE, env=env, capture_output=True,
                              text=True, timeout=120)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    else:
        rc, out, err = _in_process(argv)
    # Paths in messages: show them relative to the corpus folder (the CLI makes --catalog absolute).
    err = err.replace(str(HERE) + os.sep, "").replace(str(tmp) + os.sep, "")
    return Outcome(rc, out, err)


def _in_process(argv: list[str]) -> tuple[int, str, str]:
    import contextlib
    import io
    import traceback

    from dse.cli import main
    out, err = io.StringIO(), io.StringIO()
    cwd, env_catalog = os.getcwd(), os.environ.pop("DSE_CATALOG", None)
    os.chdir(HERE)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse
                rc = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                rc = 1
    finally:
        os.chdir(cwd)
        os.environ.pop("DSE_CATALOG", None)
        if env_catalog is not None:
            os.environ["DSE_CATALOG"] = env_catalog
    return rc, out.getvalue(), err.getvalue()


def problems(case: Case, out: Outcome) -> list[str]:
    """What is wrong with a case's outcome (empty when it is a proper user error)."""
    bad = []
    if out.rc != 2:
        bad.append(f"exit status {out.rc}, expected 2")
    if "Traceback" in out.stderr:
        bad.append("traceback on stderr")
    lines = out.stderr.strip().splitlines()
    if len(lines) != 1:
        bad.append(f"{len(lines)} lines on stderr, expected 1")
    line = out.line
    if not line.startswith("dse: error: "):
        bad.append("stderr does not start with 'dse: error: '")
    if case.names not in line:
        bad.append(f"error does not name {case.names!r}")
    for needle in case.expect:
        if needle not in line:
            bad.append(f"error lacks {needle!r}")
    if "HOSTILE-PICKLE-EXECUTED" in out.stdout + out.stderr:
        bad.append("a pickle in the input was executed")
    if len(line) > 600:
        bad.append(f"error line is {len(line)} characters long")
    return bad
