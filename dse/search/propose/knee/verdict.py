"""One verdict on a study's knee: *clear*, *ambiguous* or *not settled*, with the evidence.

The knee is the top knee candidate (``dse.search.front.knee``): the architecture whose best
interior front design has the highest knee utility. Its margin over the best design of any other
architecture says how much better it is *among the designs the run evaluated*. On
``studies/catalog.toml`` that was not evidence enough: runs on different seeds each called a
different knee "clear" by 0.02-0.09 while the best design of their runner-up architecture, never
refined, was 0.1-0.5 below what another seed reached in it (issue 48). A margin is evidence
against another seed only when both sides of it are as good as their architectures get, so the
verdict also asks how far each was refined:

* **refined**: a design is *refined* when every design one knob away from it
  (``dse.search.propose.knee.sweep.variants``: every legal value of every searched knob) has
  been evaluated on the trace, or is proved infeasible by the closed form (die area, mapping,
  closed-form link loads, which are exact), and none of them is better (a local optimum of the
  one-knob moves on the trace-driven values: no single change of the design improves its figure
  of merit);
* **clear**: the top margin is at least the ambiguity threshold, the knee's design is refined,
  and so is the best design of every other architecture within ``CONTEST_WINDOW`` of it (a score
  that further refinement could still lift past the knee's is not yet evidence);
* **ambiguous**: the top margin is below the threshold: the run's own designs do not separate
  the top architectures (near-equal architectures: choose among them on other grounds);
* **not settled**: a clear margin, but the knee's design or a contender's is not refined yet
  (run more trials, or pool seeds with ``dse front --storage S1 --storage S2``);
* with **one architecture** on the front there is no margin: the knee is clear once its design
  is refined, not settled before (a run of two trials is not evidence).

``dse front``, ``dse run``'s summary, the report and the knee phase's stop rule
(``stop = "knee-settled"``: stop once the verdict is not *not settled*) all read this verdict.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CONTEST_WINDOW = 0.10        # other architectures within this utility of the knee must be refined too


@dataclass
class Verdict:
    word: str                                  # "clear", "ambiguous", "not settled", "none"
    reason: str                                # the evidence, in words
    margin: float | None = None                # the top margin (as the knee candidates give it)
    unrefined: list[dict[str, Any]] = field(default_factory=list)   # designs not refined yet (architectures)

    @property
    def clear(self) -> bool:
        return self.word == "clear"

    @property
    def settled(self) -> bool:
        """Whether more trials of this run would not change the verdict's footing: clear or
        ambiguous with every contender refined."""
        return self.word == "clear" or (self.word == "ambiguous" and not self.unrefined)

    def line(self) -> str:
        return f"knee {self.word}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.word, "reason": self.reason, "margin": self.margin, "unrefined": self.unrefined}


def judge(kc: Any, chains: Any, top_row: int) -> Verdict:
    """The verdict (module docstring) of knee candidates ``kc`` whose top design is row
    ``top_row`` of the evaluated designs of ``chains`` (``dse.search.propose.knee.ascent.Chains``:
    their utilities, architectures and what is left to evaluate around each)."""
    if not kc.candidates:
        return Verdict("none", "no knee candidate")
    if kc.margin is None:                      # one architecture: uncontested, once its design is refined
        left = chains.moves_left(top_row)
        if left:
            return Verdict("not settled", f"one architecture on the front, but the knee's design is not "
                                          f"refined ({left} moves not evaluated)", None,
                           [{"architecture": dict(zip(kc.keys, kc.candidates[0].group)), "moves_left": left}])
        return Verdict("clear", "one architecture on the front, and the knee's design is refined "
                                "(no one-knob move and no exchange of two is better, or left to try)")
    top = kc.candidates[0]
    unrefined = _unrefined(kc, chains, top.score, top.group, top_row)
    if kc.ambiguous:
        return Verdict("ambiguous", margin_words(kc), kc.margin, unrefined)
    if unrefined:
        names = "; ".join(f"{_arch(u['architecture'])} ({u['moves_left']} moves not evaluated)" for u in unrefined[:3])
        return Verdict("not settled", f"the top candidate leads by {kc.margin:.3f}, but not every contender "
                                      f"within {CONTEST_WINDOW:g} is refined: {names}", kc.margin, unrefined)
    return Verdict("clear", f"the top candidate leads by {kc.margin:.3f} (at least {kc.threshold:g}); its design "
                            f"and the best design of every architecture within {CONTEST_WINDOW:g} of it are "
                            f"refined (no one-knob move and no exchange of two is better, or left to try)", kc.margin)


def _unrefined(kc: Any, chains: Any, score: float, group: tuple, top_row: int) -> list[dict[str, Any]]:
    """The knee's design, then the best design of each other architecture within
    ``CONTEST_WINDOW`` of it, that still have moves to evaluate (the knee's own first: when it
    has, no need to look further)."""
    left = chains.moves_left(top_row)
    if left:
        return [{"architecture": dict(zip(kc.keys, group)), "moves_left": left}]
    out = []
    for h in chains.heads:
        if h.group != group and h.utility >= score - CONTEST_WINDOW:
            left = chains.moves_left(h.row)
            if left:
                out.append({"architecture": dict(zip(kc.keys, h.group)), "moves_left": left})
    return out


def margin_words(kc: Any) -> str:
    """The top margin in words, with the rival that set it."""
    over = ""
    if kc.rival is not None:
        arch = ", ".join(f"{k}={v}" for k, v in zip(kc.keys, kc.rival.group))
        trial = "" if kc.rival.trial is None else f"trial {kc.rival.trial}, "
        over = f" over the best design of another architecture, not a knee candidate ({trial}{arch})"
    return (f"the top candidate leads by {kc.margin:.3f}{over} "
            f"({'below' if kc.ambiguous else 'at least'} the {kc.threshold:g} threshold)")


def _arch(a: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in a.items())


def trials_verdict(cfg: Any, trials: Sequence) -> Verdict:
    """The verdict of a study's finished trials (optuna ``FrozenTrial``s as the sampler was told
    them, or records read back: anything ``sample.Evaluated`` reads): what ``dse run`` records
    after each knee-phase batch and stops on, and what ``dse front`` prints."""
    from dse.search.front import knee as kn
    from dse.search.propose import sample
    from dse.search.propose.bound import BoundMemo
    from dse.search.propose.knee import ascent
    from dse.search.propose.knee import front as knee_moves
    ev = sample.Evaluated(cfg, trials)
    keys = tuple(cfg.knee.keys) if getattr(cfg, "knee", None) is not None else kn.KNEE_KEYS
    F, params, kc = knee_moves.knee_of(cfg, ev, keys)
    if not len(F):
        return Verdict("none", "no knee candidate")
    if not kc.candidates:
        return Verdict("none", "no knee candidate")
    chains = ascent.Chains(cfg, ev, keys, 1, scale=kc.scale, memo=sample.memo_of(cfg))
    return judge(kc, chains, chains.index[BoundMemo.key(params[kc.top])])
