"""Study files: loading, overrides, and the exact one-line errors."""
from __future__ import annotations

import subprocess
import sys

import pytest

from dse.errors import ConfigError
from dse.search.study.study import load_study
from tests.fixtures import TWO_MODEL_STUDY as GOOD
from tests.fixtures import write_small_study as _files


def test_good_study_and_overrides(tmp_path):
    p = _files(tmp_path, GOOD)
    cfg = load_study(p)
    assert cfg.name == "study" and cfg.models == ("qwen3.5-35b-a3b", "glm-5.2")
    assert cfg.base == {"batch": 64, "tile_width": 4, "pooling": "direct"}
    assert cfg.results_dir == (tmp_path / "results").resolve()
    assert cfg.sampler == "nsga2" and cfg.trials == 5
    o = load_study(p, model="glm-5.2", seed=7, trials=9)
    assert o.name == "study[model=glm-5.2,seed=7]" and o.models == ("glm-5.2",) and o.trials == 9
    # same values as the file: same study
    assert load_study(p, seed=0).name == "study"
    # the fingerprint depends on what defines trials, not on the sampler or the trial count
    assert load_study(p, trials=50).fingerprint() == cfg.fingerprint()
    assert o.fingerprint() != cfg.fingerprint()


def test_search_fidelity_defaults_to_single(tmp_path):
    assert load_study(_files(tmp_path, GOOD)).fidelity == "single"
    p = _files(tmp_path, GOOD + '[search]\nfidelity = "multi"\n')
    assert load_study(p).fidelity == "multi"


def test_grid_default_trials_is_grid_size(tmp_path):
    p = _files(tmp_path, '[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[sampler]\nname = "grid"\n')
    assert load_study(p).trials == 4


BAD_STUDIES = [
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\ntrials = 0\n',
     "study.trials = 0: must be an integer in [1, 10000000]"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[sampler]\nname = "cmaes"\n',
     "sampler.name = 'cmaes': must be one of nsga2, tpe, gp, random, grid, guided"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[sampler]\nname = "nsga2"\npopulation = 8\n',
     "sampler.population: unknown setting for nsga2 (allowed: population_size, mutation_prob, crossover_prob, "
     "swapping_prob); did you mean 'population_size'?"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[workload]\nmodels = ["gpt-5"]\n',
     "workload.models[0] = 'gpt-5': must be one of 'qwen3.5-35b-a3b', "),   # (the catalog may grow)
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[base]\ncore_side = 4\n',
     "core_side: set both by the space ("),
    ('[study]\nobjectives = "obj.toml"\n',
     "study.space: missing; expected a path to a space file (relative to the study file) or an inline table"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\nseeds = 3\n',
     "study.seeds: unknown key (allowed: name, description, space, objectives, trials, seed, batch, storage, "
     "results, heartbeat); did you mean 'seed'?"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[workload]\ncore_side = 4\n',
     "workload.core_side: unknown key (allowed: models, batch, context, attn_gpu, trace, trace_seed, trace_steps"),
    ('[studdy]\n', "studdy: unknown section (allowed: study, sampler, search, workload, base); did you mean 'study'?"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[search]\nfidelity = "double"\n',
     "search.fidelity = 'double': must be one of single, multi"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[search]\nfidelty = "multi"\n',
     "search.fidelty: unknown key (allowed: fidelity, stop, knee_share, knee_patience, knee_candidates, knee_keys); "
     "did you mean 'fidelity'?"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\n[search]\nfidelity = "multi"\n'
     '[workload]\ntrace = "catalog"\n',
     "search.fidelity = 'multi': the workload's trace = 'catalog' is the closed form already (allowed: single; "
     "or a trace-driven workload, trace = 'synthetic' or a file)"),
    ('[study]\nspace = "space.toml"\nobjectives = "obj.toml"\nsearch = "multi"\n',
     "study.search: unknown key (allowed: name, description"),
]


@pytest.mark.parametrize("text,msg", BAD_STUDIES)
def test_bad_study_one_line_error(tmp_path, text, msg):
    p = _files(tmp_path, text)
    with pytest.raises(ConfigError) as ei:
        load_study(p)
    err = str(ei.value)
    assert err.startswith(f"{p}: {msg}")
    assert "\n" not in err


def test_bad_study_exact_error_through_cli(tmp_path):
    p = _files(tmp_path, BAD_STUDIES[0][0])
    r = subprocess.run([sys.executable, "-m", "dse", "run", str(p)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == f"dse: error: {p}: study.trials = 0: must be an integer in [1, 10000000]\n"
