"""`dse params`, `dse models`, `dse constants`: what the model knows, as tables."""
from __future__ import annotations

import argparse

from dse.catalog import catalog
from dse.constants import C
from dse.report import dumps, table
from dse.spec import PARAMS


def register(sub) -> None:
    p = sub.add_parser("params", help="list every design-point knob with default and allowed values",
                       description="Every knob of a design point (the keys of a design file's [hardware], "
                                   "[workload] and [mapping], of --set and of a space's [params]): its part, "
                                   "default, unit, allowed values and meaning.")
    p.add_argument("--json", action="store_true", help="print the knobs as a JSON list")
    p.set_defaults(func=_params)
    p = sub.add_parser("models", help="list the MoE model catalog",
                       description="The MoE models a design can run (workload.model, a study's [workload] "
                                   "models, --model): shape, FFN weight size, native batch and source; "
                                   "`dse --catalog FILE models` adds your own.")
    p.add_argument("--json", action="store_true", help="print the models as a JSON list")
    p.set_defaults(func=_models)
    p = sub.add_parser("constants", help="list the model's named constants with their sources",
                       description="The model's named constants (dse/data/constants.toml): value, unit, class "
                                   "(spec, sourced, calibrated or assumed) and the source of each.")
    p.add_argument("--json", action="store_true", help="print the constants as a JSON list")
    p.set_defaults(func=_constants)


def _params(args: argparse.Namespace) -> int:
    rows = [(p.part, p.name, "(derived)" if p.default is None else p.default, p.unit, p.allowed(), p.doc)
            for p in PARAMS]
    if args.json:
        print(dumps([dict(zip(["part", "name", "default", "unit", "allowed", "doc"], r)) for r in rows]))
    else:
        print(table(rows, ["part", "knob", "default", "unit", "allowed", "meaning"], align="llrlll"))
    return 0


def _models(args: argparse.Namespace) -> int:
    rows = []
    for m in catalog().values():
        rows.append((m.name, m.experts, m.top_k, m.moe_layers, m.hidden, m.expert_intermediate, m.shared_experts,
                     m.ffn_weight_bytes / (1 << 30), m.native_batch, "yes" if m.union_table else "no", m.source))
    hdr = ["model", "E", "k", "layers", "d", "d_ff", "shared", "FFN GiB", "native B", "U(B) data", "source"]
    if args.json:
        print(dumps([dict(zip(hdr, r)) for r in rows]))
    else:
        print(table(rows, hdr, align="lrrrrrrrrll"))
    return 0


def _constants(args: argparse.Namespace) -> int:
    rows = [(c.name, c.value, c.unit, c.cls, c.source) for c in C.all()]
    if args.json:
        print(dumps([{**dict(zip(["name", "value", "unit", "class", "source"], r)), "fitted_on": list(c.fitted_on)}
                     for r, c in zip(rows, C.all())]))
    else:
        print(table(rows, ["constant", "value", "unit", "class", "source"], align="lrlll"))
    return 0
