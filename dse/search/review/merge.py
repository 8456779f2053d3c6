"""Several runs of one study, one answer: their trials pooled into one front and one knee, and how
many runs put each knee candidate first (knee agreement).

``dse front STUDY --storage S1 --storage S2 ...`` and ``dse report`` with several ``--storage``
read every run of the study in each storage (``runs_in``: the study's own name, or a sibling of
another seed, ``name[seed=N]``, made by the same space, objectives, workloads and base design),
pool their trials (``pool``: one ``StudyResults`` whose records are renumbered in run order, each
remembering its run and trial) and compare each run's top knee candidate with the pooled one
(``agreement``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dse.errors import ConfigError


def runs_in(cfg: Any, urls: Sequence[str]) -> list[tuple[str, Any]]:
    """``[(label, StudyResults)]`` of every run of ``cfg``'s study in the storages ``urls``
    (``--seed`` / ``--model`` given: that sibling only)."""
    import optuna

    from dse.search.storage.storage import mask_text, mask_url, quiet_optuna
    from dse.search.study.results import load_results
    found = []
    for url in urls:
        with quiet_optuna():
            try:
                names = optuna.get_all_study_names(storage=url)
            except Exception as exc:            # noqa: BLE001 - any storage error: one line
                raise ConfigError(f"--storage {mask_url(url)}: cannot read ({mask_text(str(exc), url)})") from None
        mine = [n for n in names if n == cfg.name or (cfg.name == cfg.base_name and n.startswith(cfg.base_name + "["))]
        found += [(n, url, load_results(replace(cfg, storage=url, name=n))) for n in sorted(mine)]
    names = [n for n, _, _ in found]
    out = [(n if names.count(n) == 1 else f"{n}@{mask_url(url)}", res) for n, url, res in found]
    if not out:
        raise ConfigError(f"{cfg.source}: no run of study {cfg.name!r} in {', '.join(mask_url(u) for u in urls)}; run "
                          f"`dse run {cfg.source.name} --storage URL` first")
    return out


def pool(runs: Sequence[tuple[str, Any]]):
    """``(StudyResults, origin)``: the trials of every run as one study (records renumbered in run
    order; ``origin[number] = (run label, trial)``)."""
    from dse.search.study.results import StudyResults
    recs, origin = [], {}
    for label, res in runs:
        shift = len(recs)
        for r in sorted(res.records, key=lambda r: r.number):
            dup = None if r.duplicate_of is None else r.duplicate_of + shift
            new = replace(r, number=len(recs), duplicate_of=dup)
            origin[new.number] = (label, r.number)
            recs.append(new)
    first = runs[0][1]
    return StudyResults(first.cfg, recs, dict(first.study_attrs)), origin


def agreement(runs: Sequence[tuple[str, Any]], pooled) -> dict[str, Any]:
    """Each run's top knee architecture against the pooled front's: ``{"runs", "merged",
    "per_run", "agreement"}``; ``agreement`` lists each architecture some run put first (and the
    pooled top, even if none did) with ``first_in`` (how many runs) and those runs, the pooled
    top first, then by count."""
    from dse.search.review.quality import knee_candidates
    fr, kc = knee_candidates(pooled)
    head = kc.candidates[0] if kc.candidates else None
    merged = list(head.group) if head is not None else None
    per_run, counts = [], {}
    for label, res in runs:
        rfr, rkc = knee_candidates(res)
        top = rkc.candidates[0] if rkc.candidates else None
        # a run agrees when its top architecture, or one equivalent to it, is the pooled one's
        agrees = top is not None and head is not None and any(head.names(g) for g in [top.group, *top.equivalent])
        arch = merged if agrees else (list(top.group) if top is not None else None)
        per_run.append({"run": label, "architecture": arch, "trial": rfr[top.index].number if top else None,
                        "ambiguous": rkc.ambiguous, "agrees": agrees})
        if arch is not None:
            counts.setdefault(tuple(arch), []).append(label)
    if merged is not None:
        counts.setdefault(tuple(merged), [])
    order = sorted(counts, key=lambda a: (list(a) != merged, -len(counts[a]), repr(a)))
    keys = list(kc.keys)
    return {"runs": [lab for lab, _ in runs], "keys": keys, "merged": merged,
            "merged_ambiguous": kc.ambiguous, "per_run": per_run,
            "agreement": [{"architecture": dict(zip(keys, a)), "first_in": len(counts[a]), "runs": counts[a]}
                          for a in order]}


def describe(agree: dict[str, Any]) -> list[str]:
    """Lines for ``dse front``: the agreement table in words."""
    n = len(agree["runs"])
    out = [f"knee agreement over {n} runs (how many put each architecture first; pooled front's knee first):"]
    for a in agree["agreement"]:
        arch = ", ".join(f"{k}={v}" for k, v in a["architecture"].items())
        out.append(f"  {a['first_in']}/{n}: {arch}" + ("  <- pooled knee" if list(a["architecture"].values())
                                                       == agree["merged"] else ""))
    return out
