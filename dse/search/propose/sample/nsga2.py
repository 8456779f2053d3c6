"""optuna's NSGA-II sampler without recomputing, per trial asked, what its batch already knows.

``dse run`` builds a new sampler for every batch, seeded for that batch, on an in-memory study
whose sampler state (study system attributes) is dropped, so a resumed study asks what an
uninterrupted one does (``dse.search.storage.mirror``). optuna's ``NSGAIISampler`` (4.x) then pays, per
trial asked:

* ``infer_relative_search_space``: the intersection of the finished trials' distributions,
  deep-copied on every call;
* ``get_trial_generation``: a pass over every complete trial;
* at a batch's first trial, the parent population of every generation so far (its cache, kept
  in the study's system attributes, was dropped with them): one elite selection (non-domination
  ranks, crowding distance, constraint checks) per generation, again at every batch.

On `bench_search.py`'s NSGA-II study (768 trials, batches and population of 24) asking a batch
grew from 11 ms to 71 ms over the run (1.16 s of 5.4 s). ``MemoNSGAIISampler`` keeps each of
these as a function of exactly what it reads, so it proposes what ``NSGAIISampler`` proposes
(``tests/search/propose/test_nsga2.py``, every parameter of every trial):

* the search space and the generation, per sampler, keyed by the study and its finished
  (resp. complete) trials, a set that only grows while a batch is asked;
* each parent population, for the study's storage (dropped with it), keyed by the generation and
  the trials it is selected from (the population before it and that population's parents, by
  id, in order: trials that are complete never change); the elite selection is a deterministic
  function of them.
"""
from __future__ import annotations

import weakref
from typing import Any

import optuna
from optuna.trial import TrialState

_BY_STORAGE: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()   # storage -> its memos
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


class MemoNSGAIISampler(optuna.samplers.NSGAIISampler):
    """``optuna.samplers.NSGAIISampler`` with the memos of the module docstring."""

    def _memo(self, name: str, key: tuple) -> tuple[dict, bool]:
        memo = self.__dict__.setdefault(name, {})
        if key not in memo:
            memo.clear()
        return memo, key in memo

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict:
        # optuna's intersection of the finished trials' spaces is incremental (it keeps how far
        # it has read): the one of the study's storage carries on from where the last batch's left
        shared = _BY_STORAGE.setdefault(study._storage, {}).setdefault(("space", study._study_id), self._search_space)
        self._search_space = shared
        n = len(study._get_trials(deepcopy=False, states=_FINISHED, use_cache=True))
        key = (id(study._storage), study._study_id, n)
        memo, hit = self._memo("_dse_space", key)
        if not hit:
            memo[key] = super().infer_relative_search_space(study, trial)
        return dict(memo[key])

    def get_trial_generation(self, study: Any, trial: Any) -> int:
        gkey = self._get_generation_key()
        generation = trial.system_attrs.get(gkey, None)
        if generation is not None:
            return generation
        n = len(study._get_trials(deepcopy=False, states=[TrialState.COMPLETE], use_cache=True))
        key = (id(study._storage), study._study_id, n)
        memo, hit = self._memo("_dse_generation", key)
        if not hit:
            memo[key] = super().get_trial_generation(study, trial)
            return memo[key]
        study._storage.set_trial_system_attr(trial._trial_id, gkey, memo[key])
        return memo[key]

    def select_parent(self, study: Any, generation: int) -> list:
        population = self.get_population(study, generation - 1)
        parents = self.get_parent_population(study, generation - 1)
        key = (study._study_id, self._population_size, generation,
               tuple(t._trial_id for t in population), tuple(t._trial_id for t in parents))
        memo = _BY_STORAGE.setdefault(study._storage, {})
        ids = memo.get(key)
        if ids is None:
            chosen = self._elite_population_selection_strategy(study, population + parents)
            memo[key] = tuple(t._trial_id for t in chosen)
            return chosen
        by_id = {t._trial_id: t for t in population + parents}
        return [by_id[i] for i in ids]


# optuna names the generation and parent-cache keys after the sampler's class: keep NSGA-II's, so
# that the trials of studies written by ``NSGAIISampler`` (their generation) read the same
for _attr in ("_GENERATION_KEY", "_PARENT_CACHE_KEY_PREFIX"):
    if hasattr(optuna.samplers.NSGAIISampler, _attr):
        setattr(MemoNSGAIISampler, _attr, getattr(optuna.samplers.NSGAIISampler, _attr))
