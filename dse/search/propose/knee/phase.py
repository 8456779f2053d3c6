"""The knee phase of a study: its settings, its sampler, and when it has settled.

``[search]`` keys (all optional)::

    knee_share = 0.25          # share of the trial budget spent around the knee candidates (0: none)
    stop = "knee-settled"      # "trials" (default): run to the trial target; "knee-settled": also
                               # stop once the knee's verdict is settled (the trial target stays the cap)
    knee_patience = 3          # batches of the candidates' signature a dashboard's history compares
    knee_candidates = 3        # chains of the knee phase (architectures refined at once), and
                               # the candidates `dse front` shows
    knee_keys = ["core_side", "array_depth", "tile_width", "pooling"]   # what names an architecture

Phases. A study of ``trials`` trials in batches of ``batch`` runs its *global phase* (its sampler
as configured) for the first ``global_trials = batch * floor((1 - knee_share) * trials / batch)``
finished trials, then its *knee phase*: each batch is planned by coordinate ascent of the knee
utility on the trace from the best designs of the best architectures
(``dse.search.propose.knee.ascent``). The phase is decided per batch from the number of finished
trials before it, so a resumed study continues the phase it was in; the run records both phases
in the study's user attribute ``dse_knee_phase`` (``global_trials``, the candidates' signature
after each knee-phase batch, the last verdict, and whether and when it settled), and a resumed
run keeps the recorded ``global_trials`` even if the trial target changed.

Settled. After each knee-phase batch the run takes the knee's one verdict
(``dse.search.propose.knee.verdict``: clear, ambiguous or not settled); it has *settled* when the
verdict is clear, or ambiguous with every contender refined (more trials of this run would not
change the footing of the choice). With ``stop = "knee-settled"`` the run stops there.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.search.front.knee import KNEE_KEYS

STOPS = ("trials", "knee-settled")
SCORE_TOL = 0.01             # scores closer than this count as unchanged (half the ambiguity margin)
ATTR = "dse_knee_phase"      # the study user attribute recording the phases
CANDIDATES_ATTR = "dse_knee_candidates"   # ... and the top knee candidates after the last run
SEARCH_KEYS = ("stop", "knee_share", "knee_patience", "knee_candidates", "knee_keys")


@dataclass(frozen=True)
class KneeSearch:
    share: float = 0.0
    stop: str = "trials"
    patience: int = 3
    candidates: int = 3
    keys: tuple[str, ...] = KNEE_KEYS
    start: int | None = None          # recorded global_trials of a resumed study

    def global_trials(self, trials: int, batch: int) -> int:
        """Finished trials of the global phase (a whole number of batches)."""
        if self.start is not None:
            return self.start
        if self.share <= 0:
            return trials
        return batch * int(math.floor((1.0 - self.share) * trials / batch))

    @property
    def active(self) -> bool:
        return self.share > 0 or self.stop != "trials"


def parse(se: Mapping[str, Any], src: str) -> KneeSearch:
    """The knee-phase keys of a ``[search]`` table (module docstring)."""
    out = KneeSearch()
    stop = se.get("stop", "trials")
    if stop not in STOPS:
        raise ConfigError(f"{src}: search.stop = {stop!r}: must be one of {', '.join(STOPS)}")
    share = se.get("knee_share", 0.0)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 0.9:
        raise ConfigError(f"{src}: search.knee_share = {share!r}: must be a number from 0 to 0.9")
    ints = {}
    for key, lo, hi in (("knee_patience", 1, 1000), ("knee_candidates", 1, 20)):
        v = se.get(key, getattr(out, key.removeprefix("knee_")))
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ConfigError(f"{src}: search.{key} = {v!r}: must be an integer from {lo} to {hi}")
        ints[key.removeprefix("knee_")] = v
    keys = se.get("knee_keys", list(KNEE_KEYS))
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        raise ConfigError(f"{src}: search.knee_keys: must be a list of knob names")
    return KneeSearch(float(share), stop, ints["patience"], ints["candidates"], tuple(keys))


def resumed(cfg: Any, attrs: Mapping[str, Any]) -> Any:
    """``cfg`` with the ``global_trials`` its study recorded (a resumed study keeps its phases)."""
    rec = attrs.get(ATTR)
    knee = getattr(cfg, "knee", None)
    if knee is None or not isinstance(rec, Mapping) or "global_trials" not in rec:
        return cfg
    return replace(cfg, knee=replace(knee, start=int(rec["global_trials"])))


# ---- the sampler -----------------------------------------------------------------------------
def finished(study) -> list:
    """The study's finished trials."""
    return [t for t in study.get_trials(deepcopy=False) if t.state.is_finished()]


class PhaseClock:
    """Whether the knee phase has begun (``G`` finished trials; they only grow, so once reached
    for good), and each trial's phase, decided at its first question: a trial is asked in one
    phase (a scan of the trials per parameter asked cost 1.5 s of a 14 s run)."""

    def __init__(self, G: int, position: int | None = None) -> None:
        self.G, self.reached, self.phase, self.position = G, False, {}, position

    def knee(self, study) -> bool:
        if not self.reached:
            n = len(finished(study)) if self.position is None else self.position
            self.reached = n >= self.G
        return self.reached

    def of(self, study, trial) -> bool:
        hit = self.phase.get(trial.number)
        if hit is None:
            if len(self.phase) > 4096:
                self.phase.clear()
            hit = self.phase[trial.number] = self.knee(study)
        return hit


def wrap(cfg: Any, seed: int, inner: Any, position: int | None = None, lag: int = 0):
    """The study's sampler: ``inner`` for the global phase, the knee plan after it (optuna
    ``BaseSampler``; optuna is imported only here); ``position``: finished trials before the
    batch it asks (it decides the phase; None: the study's finished trials); a plan ``lag``
    batches behind reads the trials ``sample.basis`` names."""
    import optuna

    from dse.search.propose import sample
    from dse.search.propose.knee import ascent
    G = cfg.knee.global_trials(cfg.trials, cfg.batch)

    class _KneePhase(optuna.samplers.BaseSampler):
        def __init__(self) -> None:
            self.inner = inner
            self.rng = np.random.default_rng(seed)
            self.fallback = optuna.samplers.RandomSampler(seed=seed)
            self.todo: list[dict[str, Any]] = []
            self.basis = -1
            self.assigned: dict[int, dict[str, Any]] = {}
            self.memo = sample.memo_of(cfg)
            self.clock = PhaseClock(G, position)

        def infer_relative_search_space(self, study, trial):
            return {} if self.clock.of(study, trial) else self.inner.infer_relative_search_space(study, trial)

        def sample_relative(self, study, trial, search_space):
            return {} if self.clock.of(study, trial) else self.inner.sample_relative(study, trial, search_space)

        def sample_independent(self, study, trial, name, distribution):
            if not self.clock.of(study, trial):
                return self.inner.sample_independent(study, trial, name, distribution)
            params = self.assigned.get(trial.number)
            if params is None:
                params = self.assigned[trial.number] = self._next(study)
            if name in params:
                return params[name]
            return self.fallback.sample_independent(study, trial, name, distribution)

        def before_trial(self, study, trial):
            if not self.clock.of(study, trial):
                self.inner.before_trial(study, trial)

        def after_trial(self, study, trial, state, values):
            if not self.clock.knee(study):
                self.inner.after_trial(study, trial, state, values)

        def _next(self, study) -> dict[str, Any]:
            done, pending = sample.basis(cfg, study, position, lag)
            if len(done) != self.basis:
                ev = sample.Evaluated(cfg, done, pending)
                s = {**sample.DEFAULTS, **dict(cfg.sampler_settings)} if cfg.sampler == "guided" else sample.DEFAULTS
                self.todo = ascent.plan(cfg, ev, self.rng, cfg.batch, s, self.memo, cfg.knee) or \
                    sample.global_plan(cfg, done, self.rng, cfg.batch, s, self.memo, pending)
                self.basis = len(done)
            return self.todo.pop(0) if self.todo else {}

    return _KneePhase()


# ---- settledness -----------------------------------------------------------------------------
def signature(cfg: Any, trials: Sequence) -> list[list[Any]]:
    """The knee candidates' signature (module docstring) of the feasible front of ``trials``;
    each entry ``[architecture key values, score, margin]``."""
    from dse.search.propose import sample
    from dse.search.propose.knee import front as knee_moves
    ev = sample.Evaluated(cfg, trials)
    F, _, kc = knee_moves.knee_of(cfg, ev, cfg.knee.keys)
    if not len(F):
        return []
    return [[list(c.group), round(c.score, 6), None if c.margin is None else round(c.margin, 6)]
            for c in kc.candidates[:cfg.knee.candidates]]


def candidates_attr(cfg: Any, trials: Sequence) -> dict[str, Any]:
    """The top knee candidates of ``trials`` for the study's user attributes (dashboards): per
    candidate its trial, architecture, objectives, score and margin; whether it is ambiguous."""
    from dse.search.propose import sample
    from dse.search.propose.knee import front as knee_moves
    ev = sample.Evaluated(cfg, trials)
    F, params, kc = knee_moves.knee_of(cfg, ev, cfg.knee.keys)
    if not len(F):
        return {"candidates": [], "ambiguous": False}
    number = {sample.param_key(t.params): t.number for t in reversed(trials)}   # first trial of a design
    names = [o.name for o in cfg.objectives.objectives]
    out = [{"rank": i, "trial": number.get(sample.param_key(params[c.index])),
            "architecture": dict(zip(kc.keys, c.group)),
            "objectives": dict(zip(names, [float(v) for v in pareto_values(cfg, F[c.index])])),
            "score": round(c.score, 6), "margin": None if c.margin is None else round(c.margin, 6)}
           for i, c in enumerate(kc.candidates[:cfg.knee.candidates], 1)]
    rival = None
    if kc.rival is not None:          # its row: the front's, then the feasible designs'
        i = kc.rival.row
        p = params[i] if i < len(F) else ev.params[int(np.flatnonzero(ev.feasible)[i - len(F)])]
        kc.rival.trial = number.get(sample.param_key(p))
        rival = kc.rival.to_json(kc.keys)
    return {"candidates": out, "ambiguous": kc.ambiguous, "threshold": kc.threshold, "rival": rival}


def pareto_values(cfg: Any, row: np.ndarray) -> list[float]:
    """A minimisation row back in the objectives' own directions."""
    return [-v if d == "maximize" else v for v, d in zip(row.tolist(), cfg.objectives.directions)]


def same(a: list, b: list) -> bool:
    """Two signatures name the same architectures in the same order with scores within SCORE_TOL."""
    return len(a) == len(b) and all(x[0] == y[0] and abs(x[1] - y[1]) <= SCORE_TOL for x, y in zip(a, b))


def history(cfg: Any, trials: Sequence) -> list[tuple[int, list]]:
    """``[(finished trials, signature)]`` at the end of every knee-phase batch of ``trials``
    (finished trials in trial order), the global phase's end first."""
    G = cfg.knee.global_trials(cfg.trials, cfg.batch)
    cuts = list(range(G, len(trials) + 1, cfg.batch)) if len(trials) >= G > 0 else []
    return [(c, signature(cfg, trials[:c])) for c in cuts]


def settled_at(cfg: Any, hist: list[tuple[int, list]]) -> int | None:
    """Finished trials at which the knee settled (module docstring), None if it has not."""
    from dse.search.front.knee import AMBIGUOUS_MARGIN
    p = cfg.knee.patience
    for i in range(p, len(hist)):
        window = [h[1] for h in hist[i - p:i + 1]]
        top = window[-1][0] if window[-1] else None
        clear = top is not None and (top[2] is None or top[2] >= AMBIGUOUS_MARGIN)
        if window[-1] and clear and all(same(w, window[-1]) for w in window):
            return hist[i][0]
    return None


class Tracker:
    """What ``dse run`` keeps of the knee phase: ``step(finished)`` before each batch records the
    phases in the study and says whether to stop (``stop = "knee-settled"`` and settled);
    ``final(finished)`` after the run records them and, for dashboards, the top knee candidates
    (study user attribute ``dse_knee_candidates``, ``candidates_attr``)."""

    def __init__(self, cfg: Any, study: Any):
        self.cfg, self.study = cfg, study
        self.hist: list[tuple[int, list]] = []
        self.written: dict | None = None
        self.settled: int | None = None
        self.verdict: dict | None = None

    def final(self, finished: Sequence) -> None:
        self.step(finished)
        trials = sorted(finished, key=lambda t: t.number)
        self.study.set_user_attr(CANDIDATES_ATTR, candidates_attr(self.cfg, trials))

    def step(self, finished: Sequence, note: Any = None) -> bool:
        cfg = self.cfg
        if not cfg.knee.active:
            return False
        G = cfg.knee.global_trials(cfg.trials, cfg.batch)
        trials = sorted(finished, key=lambda t: t.number)
        if len(trials) < G:
            rec = {"global_trials": G, "knee_share": cfg.knee.share, "stop": cfg.knee.stop, "phase": "global"}
            if rec != self.written:
                self.study.set_user_attr(ATTR, rec)
                self.written = rec
            return False
        done = {h[0] for h in self.hist}
        for c in range(G, len(trials) + 1, cfg.batch):
            if c not in done:
                self.hist.append((c, signature(cfg, trials[:c])))
        if self.settled is None:                 # the one verdict (dse.search.review.verdict), once settled kept
            from dse.search.propose.knee.verdict import trials_verdict
            v = trials_verdict(cfg, trials)
            self.verdict = v.to_json()
            self.settled = len(trials) if v.settled else None
        at = self.settled
        rec = {"global_trials": G, "knee_share": cfg.knee.share, "stop": cfg.knee.stop,
               "phase": "settled" if at is not None else "knee", "settled_at": at, "verdict": self.verdict,
               "history": [[c, sig] for c, sig in self.hist]}
        if rec != self.written:
            self.study.set_user_attr(ATTR, rec)
            self.written = rec
        stop = at is not None and cfg.knee.stop == "knee-settled"
        if stop and note is not None:
            note(f"study {cfg.name!r}: the knee settled at {at} finished trials (stop = \"knee-settled\"; "
                 f"the trial target {cfg.trials} is the cap)")
        return stop


def track(cfg: Any, study: Any) -> tuple[Any, Tracker | None]:
    """``dse run``'s view of the study ``cfg`` (optuna ``study``): the config with the phases the
    study recorded (``resumed``) and its ``Tracker``."""
    cfg = resumed(cfg, study.user_attrs)
    return cfg, (Tracker(cfg, study) if getattr(cfg, "knee", None) is not None else None)
