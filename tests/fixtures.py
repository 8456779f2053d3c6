"""Study, space and objective TOML fixtures: the one copy shared by tests/ and benchmarks/.

Deliberately independent of `dse` (it only writes text files): a benchmark imports it without the
test suite (``sys.path`` gets the repository root, then ``from tests.fixtures import ...``), and a
fixture never depends on the code it exercises. Tests import it as ``tests.fixtures``.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# ---- spaces -------------------------------------------------------------------------------------

# 5 x 4 x 3 x 5 = 300 distinct designs: a finite grid, so its Pareto front is a property of the space.
GRID300_SPACE = """
[params]
array_depth = { type = "categorical", choices = ["16K", "20K", "24K", "28K", "32K"] }
tile_width = { type = "categorical", choices = [1, 2, 4, 8] }
core_mesh_link_bits = { type = "int", low = 256, high = 768, step = 256 }
macro_mhz = { type = "float", low = 100, high = 300, step = 50 }
"""

# 4 x 3 x 3 = 36 designs of the silicon knobs (the CLI round trip).
SILICON36_SPACE = """
[params]
array_depth = { type = "categorical", choices = ["16K", "24K", "32K", "40K"] }
tile_width = { type = "categorical", choices = [1, 2, 4] }
core_mesh_link_bits = { type = "int", low = 256, high = 768, step = 256 }
"""

# 5 x 4 x 7 x 5 = 700 designs (bench_search's quality study: its exhaustive grid is the reference front).
SILICON700_SPACE = """
[params]
array_depth = { type = "categorical", choices = ["16K", "20K", "24K", "28K", "32K"] }
tile_width = { type = "categorical", choices = [1, 2, 4, 8] }
core_mesh_link_bits = { type = "int", low = 256, high = 1024, step = 128 }
macro_mhz = { type = "float", low = 100, high = 300, step = 50 }
"""

# Continuous clocks: every random trial is a new design (bench_distributed measures storage, not a cache).
SILICON_CONTINUOUS_SPACE = """
[params]
array_depth = { type = "categorical", choices = ["16K", "20K", "24K", "28K", "32K"] }
tile_width = { type = "categorical", choices = [1, 2, 4, 8] }
core_mesh_link_bits = { type = "int", low = 256, high = 1024, step = 128 }
macro_mhz = { type = "float", low = 100, high = 300 }
noc_ghz = { type = "float", low = 0.5, high = 2.0 }
"""

# The trace-driven scheduling knobs (bench_search's speed-up study).
SCHEDULING_SPACE = """
[params]
core_side = { type = "int", low = 1, high = 8 }
tile_width = { type = "categorical", choices = [1, 2, 4, 8] }
placement = { type = "categorical", choices = ["contiguous", "lpt", "coactivation"] }
pooling = { type = "categorical", choices = ["direct", "broadcast"] }
fetch = { type = "categorical", choices = ["fifo", "load_aware"] }
"""

# A small space for the run loop with a stand-in evaluator (metrics "a" and "b", see TOY_OBJECTIVES).
TOY_SPACE = """
[params]
core_side = { type = "int", low = 1, high = 8 }
tile_width = { type = "categorical", choices = [1, 2, 4, 8] }
pooling = { type = "categorical", choices = ["direct", "broadcast"] }
"""

# ---- objectives ---------------------------------------------------------------------------------

# Latency vs power under the die-area budget (the study most tests and benchmarks run).
LATENCY_POWER_OBJECTIVES = """
[[objectives]]
metric = "ffn_latency_us_per_token"
direction = "minimize"

[[objectives]]
metric = "pool_power_w"
direction = "minimize"

[[constraints]]
metric = "die_area_mm2"
le = "die_area_budget_mm2"
"""

# The same two objectives without the constraint.
LATENCY_POWER_UNCONSTRAINED_OBJECTIVES = """
[[objectives]]
metric = "ffn_latency_us_per_token"
direction = "minimize"

[[objectives]]
metric = "pool_power_w"
direction = "minimize"
"""

MFU_LATENCY_OBJECTIVES = """
[[objectives]]
metric = "effective_mfu"
direction = "maximize"
[[objectives]]
metric = "ffn_latency_us_per_token"
"""

# Two conflicting objectives of a stand-in evaluator, one constraint on "a".
TOY_OBJECTIVES = """
[[objectives]]
metric = "a"
[[objectives]]
metric = "b"
direction = "maximize"
[[constraints]]
metric = "a"
le = 8.2
"""


# ---- writer -------------------------------------------------------------------------------------

def write_study(folder: Path, *, space: str, objectives: str, file: str = "study.toml",
                name: str | None = None, trials: int | None = None, seed: int | None = None,
                batch: int | None = None, study_extra: str = "", sampler: str = "random",
                sampler_settings: str = "", workload: str = "", search: str = "") -> Path:
    """Write ``space.toml``, ``objectives.toml`` and the study file ``file`` into ``folder``
    (created if missing) and return the study file's path. ``study_extra``, ``sampler_settings``,
    ``search`` and ``workload`` are TOML lines added to [study], [sampler], [search] and [workload]."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "space.toml").write_text(space)
    (folder / "objectives.toml").write_text(objectives)
    lines = ["[study]"]
    if name is not None:
        lines.append(f'name = "{name}"')
    lines += ['space = "space.toml"', 'objectives = "objectives.toml"']
    for key, value in (("trials", trials), ("seed", seed), ("batch", batch)):
        if value is not None:
            lines.append(f"{key} = {value}")
    if study_extra:
        lines.append(study_extra.strip("\n"))
    lines += ["[sampler]", f'name = "{sampler}"']
    if sampler_settings:
        lines.append(sampler_settings.strip("\n"))
    if search:
        lines += ["[search]", search.strip("\n")]
    if workload:
        lines += ["[workload]", workload.strip("\n")]
    path = folder / file
    path.write_text("\n".join(lines) + "\n")
    return path


def write_distributed_study(folder: Path, *, sampler: str = "grid", trials: int = 300, batch: int = 8,
                            name: str = "dist", space: str | None = None) -> Path:
    """The distributed tests' study: GRID300_SPACE, latency vs power under the area budget, seed 7,
    on the default model; ``folder/<name>.toml``."""
    return write_study(folder, space=space or GRID300_SPACE, objectives=LATENCY_POWER_OBJECTIVES, file=f"{name}.toml",
                       name=name, trials=trials, seed=7, batch=batch, sampler=sampler,
                       workload='models = ["qwen3.5-35b-a3b"]')


def run_dse(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m dse ARGS`` in a fresh process (text output captured)."""
    return subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True, cwd=cwd)


# ---- small study files for the study / objective loader tests ----
SMALL_SPACE = '[params]\ncore_side = { type = "int", low = 2, high = 8, step = 2 }\n'


SMALL_OBJECTIVES = ('[[objectives]]\nmetric = "t_layer_us"\ndirection = "minimize"\n'
       '[[objectives]]\nmetric = "dies"\n'
       '[[constraints]]\nmetric = "die_area_mm2"\nle = "die_area_budget_mm2"\n')


def write_small_study(tmp_path: Path, study: str, space: str = SMALL_SPACE, obj: str = SMALL_OBJECTIVES) -> Path:
    """Write space.toml, obj.toml and the (dedented) study text as study.toml in tmp_path."""
    (tmp_path / "space.toml").write_text(space)
    (tmp_path / "obj.toml").write_text(obj)
    p = tmp_path / "study.toml"
    p.write_text(textwrap.dedent(study))
    return p


TWO_MODEL_STUDY = """
    [study]
    space = "space.toml"
    objectives = "obj.toml"
    trials = 5
    [workload]
    models = ["qwen3.5-35b-a3b", "glm-5.2"]
    batch = 64
    [base]
    tile_width = 4
    [base.mapping]
    pooling = "direct"
"""


# ---- the multi-model study of `dse front --reference` and `dse explain` (issue 43) ----

# objectives/full.toml's objectives and constraints: scheduled latency, delivered cost, effective MFU.
FULL_OBJECTIVES = """
[[objectives]]
metric = "ffn_us_per_token_scheduled"
direction = "minimize"

[[objectives]]
metric = "usd_per_mtok_delivered"
direction = "minimize"

[[objectives]]
metric = "effective_mfu"
direction = "maximize"

[[constraints]]
metric = "die_area_mm2"
le = "die_area_budget_mm2"

[[constraints]]
metric = "comm_violation"
le = 0
"""

# A few of spaces/full.toml's knobs (96 designs), the published design's values among them.
CATALOG_SMALL_SPACE = """
[params]
core_side = { type = "int", low = 2, high = 4, step = 2 }
tile_width = { type = "categorical", choices = [4, 8] }
array_depth = { type = "int", low = 24576, high = 32768, step = 8192 }
macro_mhz = { type = "float", low = 150, high = 200, step = 50 }
core_mesh_link_bits = { type = "int", low = 256, high = 512, step = 256 }
node_gbps = { type = "float", low = 32, high = 64, step = 16 }
"""

CATALOG_MODELS = ("qwen3.5-35b-a3b", "qwen3.5-397b-a17b", "glm-5.2")


def write_catalog_study(folder: Path, trials: int = 24, seed: int = 0) -> Path:
    """A small study over the three catalog models with ``aggregate = "worst"`` (the default) and
    objectives/full.toml's objectives: ``folder/catalog.toml`` (random sampler)."""
    models = ", ".join(f'"{m}"' for m in CATALOG_MODELS)
    return write_study(folder, space=CATALOG_SMALL_SPACE, objectives=FULL_OBJECTIVES, file="catalog.toml",
                       name="catalog", trials=trials, seed=seed, batch=8, sampler="random",
                       workload=f"models = [{models}]")


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``dse ARGV`` in this process: (exit status, stdout, stderr)."""
    from dse.cli import main
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(rc: int, err: str) -> str:
    """``err`` after checking it is one ``dse: error:`` line with exit status 2."""
    assert rc == 2 and err.startswith("dse: error: ") and err.count("\n") == 1, err
    return err
