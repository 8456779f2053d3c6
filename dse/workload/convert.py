"""Router dumps -> traces (``dse trace convert``).

Accepted inputs (several files are concatenated in the order given):

1. **Routes JSON** (the per-token dump of the moe-ocs tooling, vLLM / MLX backends)::

     {"meta": {"num_experts": 256, "top_k": 8, "num_moe_layers": 40, ...},
      "routes": [{"token_pos": 0, "phase": "prefill" | "decode",
                  "layers": {"0": {"experts": [k ids], "weights": [...]}, "1": ...}}, ...]}

   A layer entry may also be a bare list of ids. Layer keys must be integers; when they are not
   0..L-1 (e.g. absolute layer numbers of the MoE layers) they are renumbered in sorted order.

2. **JSON lines** (``.jsonl`` / ``.ndjson``, or a ``.json`` holding a list), one object per line:

   * per token and layer: ``{"token": 17, "layer": 3, "experts": [5, 9, ...]}`` (as written by a
     forward hook on a router: vLLM / SGLang ``topk_ids``, HF ``router_logits.topk``, MLX
     ``argpartition``); or
   * per token, all layers: ``{"token": 17, "layers": {"0": [ids], "1": [ids], ...}}``.

   Aliases: ``token`` = ``token_pos`` | ``position`` | ``pos``; ``layer`` = ``layer_idx`` |
   ``layer_id``; ``experts`` = ``expert_ids`` | ``topk_ids`` | ``ids``. Optional ``phase``
   (filtered like the routes format) and ``step``: when every record has a ``step``, tokens are
   grouped by it (every step must then hold the same number of tokens, the batch); otherwise tokens
   are ordered by ``token`` and cut into consecutive decode steps of the batch.

**Sequences and batches.** Every input file is one sequence (request), unless its JSON-lines
records name one (``seq`` | ``sequence`` | ``request`` | ``request_id``). A decode batch is B
*different* requests: when the dumps hold at least B sequences, step s gives each of the B slots
the next token of the sequence it serves, and a slot whose sequence ends takes the next unused
sequence (continuous batching); the trace ends when a slot finds none left. With fewer
sequences than B, consecutive tokens are cut into steps of B (one request's tokens are then
read as a batch, which they are not: :func:`warnings` says so, as ``dse trace convert`` prints).
The batch defaults to the model's native batch, or to all the tokens (one step) when there are
fewer; a trailing partial step is dropped. The model is ``--model`` or, when omitted, the one
catalog model whose (layers, experts, top-k) match the dump's ``meta``. Every problem is one
:class:`~dse.errors.TraceError` line naming the file and the record.
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dse.errors import TraceError
from dse.tomlfile import read_text
from dse.workload.trace import Trace, TraceMeta, check_ids, check_model, id_dtype

TOKEN_KEYS = ("token", "token_pos", "position", "pos")
LAYER_KEYS = ("layer", "layer_idx", "layer_id")
EXPERT_KEYS = ("experts", "expert_ids", "topk_ids", "ids")
SEQ_KEYS = ("seq", "sequence", "request", "request_id")
PHASES = ("decode", "prefill", "all")


def _get(rec: dict, keys: tuple[str, ...]):
    for k in keys:
        if k in rec:
            return rec[k]
    return None


def _ids(v: Any, where: str) -> list[int]:
    if isinstance(v, dict):
        v = _get(v, EXPERT_KEYS)
    if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise TraceError(f"{where}: expected a non-empty list of integer expert ids, got {str(v)[:60]}")
    return v


class _Tokens:
    """Collects per-token, per-layer ids from any input format."""

    def __init__(self) -> None:
        self.records: list[tuple[Any, Any, dict[int, list[int]]]] = []   # (step, order key, layer -> ids)
        self.seqs: list[Any] = []                                        # sequence of every record
        self.meta: dict[str, Any] = {}
        self.dropped = 0
        self.file = 0                                                    # index of the file being read

    def add(self, step, order, layers: dict[int, list[int]], seq: Any = None) -> None:
        self.records.append((step, order, layers))
        self.seqs.append((self.file, seq))


def _read_json(path: Path) -> Any:
    text = read_text(path, error=TraceError, expected="a router dump", encoding_of="JSON or JSON lines")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise TraceError(f"{path}: JSON nested too deeply") from None


def _layer_key(k: Any, where: str) -> int:
    try:
        v = int(k)
    except (TypeError, ValueError):
        raise TraceError(f"{where}: layer keys must be integers, got {str(k)[:20]!r}") from None
    if v < 0:
        raise TraceError(f"{where}: layer {v}: must be >= 0")
    return v


def _read_routes(doc: dict, path: Path, acc: _Tokens, phase: str) -> None:
    meta = doc.get("meta") or {}
    if not isinstance(meta, dict):
        raise TraceError(f"{path}: meta must be an object")
    acc.meta.update(meta)
    routes = doc["routes"]
    if not isinstance(routes, list):
        raise TraceError(f"{path}: routes must be a list of token records")
    for i, r in enumerate(routes):
        where = f"{path}: routes[{i}]"
        if not isinstance(r, dict) or not isinstance(r.get("layers"), dict):
            raise TraceError(f"{where}: expected an object with a 'layers' object")
        if phase != "all" and r.get("phase", "decode") != phase:
            acc.dropped += 1
            continue
        layers = {_layer_key(k, where): _ids(v, f"{where}.layers.{k}") for k, v in r["layers"].items()}
        acc.add(None, (len(acc.records), r.get("token_pos", i)), layers)


def _read_lines(lines: Iterable[tuple[int, Any]], path: Path, acc: _Tokens, phase: str) -> None:
    per_token: dict[Any, dict] = {}
    for lineno, rec in lines:
        where = f"{path}: line {lineno}"
        if not isinstance(rec, dict):
            raise TraceError(f"{where}: expected a JSON object per line")
        if phase != "all" and rec.get("phase", "decode") != phase:
            acc.dropped += 1
            continue
        tok = _get(rec, TOKEN_KEYS)
        if tok is None:
            raise TraceError(f"{where}: missing the token index (one of {', '.join(TOKEN_KEYS)})")
        if not isinstance(tok, int) or isinstance(tok, bool):
            raise TraceError(f"{where}: token index {str(tok)[:40]}: must be an integer")
        step = rec.get("step")
        if step is not None and (not isinstance(step, int) or isinstance(step, bool)):
            raise TraceError(f"{where}: step {str(step)[:40]}: must be an integer")
        seq = _get(rec, SEQ_KEYS)
        if seq is not None and not isinstance(seq, (int, str)):
            raise TraceError(f"{where}: sequence id {str(seq)[:40]}: must be an integer or a string")
        key = (step, tok, seq)
        slot = per_token.setdefault(key, {"line": lineno, "layers": {}})
        if isinstance(rec.get("layers"), dict):
            for k, v in rec["layers"].items():
                slot["layers"][_layer_key(k, where)] = _ids(v, f"{where}: layers.{k}")
            continue
        layer = _get(rec, LAYER_KEYS)
        if not isinstance(layer, int) or isinstance(layer, bool) or layer < 0:
            raise TraceError(f"{where}: missing or bad layer index (one of {', '.join(LAYER_KEYS)}; an integer >= 0)")
        if layer in slot["layers"]:
            raise TraceError(f"{where}: token {tok} layer {layer} appears twice")
        slot["layers"][layer] = _ids(_get(rec, EXPERT_KEYS), f"{where}: experts")
    for (step, tok, seq), v in per_token.items():
        acc.add(step, (step if step is not None else 0, tok), v["layers"], seq)


def _read_file(path: Path, acc: _Tokens, phase: str) -> None:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        try:
            fh = open(path, encoding="utf-8-sig")
        except FileNotFoundError:
            raise TraceError(f"{path}: no such file") from None
        except OSError as exc:
            raise TraceError(f"{path}: cannot read ({exc.strerror or exc})") from None

        def lines():
            with fh:
                try:
                    for n, line in enumerate(fh, 1):
                        if line.strip():
                            try:
                                yield n, json.loads(line)
                            except json.JSONDecodeError as exc:
                                raise TraceError(f"{path}: line {n}: not valid JSON ({exc.msg})") from None
                except UnicodeDecodeError:
                    raise TraceError(f"{path}: not a UTF-8 text file (expected JSON lines)") from None
        _read_lines(lines(), path, acc, phase)
        return
    doc = _read_json(path)
    if isinstance(doc, dict) and "routes" in doc:
        _read_routes(doc, path, acc, phase)
    elif isinstance(doc, list):
        _read_lines(enumerate(doc, 1), path, acc, phase)
    else:
        raise TraceError(f"{path}: unrecognised router dump (expected a 'routes' JSON object, a JSON list of "
                         f"records or JSON lines; see `dse trace convert --help`)")


def _infer_model(meta: dict, layers: int, k: int, path: str) -> str:
    from dse.catalog import catalog
    E = meta.get("num_experts")
    cands = [m.name for m in catalog().values()
             if m.moe_layers == layers and m.top_k == k and (E is None or m.experts == E)]
    if len(cands) == 1:
        return cands[0]
    shape = f"{layers} layers x {E if E is not None else '?'} experts, top-{k}"
    if not cands:
        raise TraceError(f"{path}: no catalog model has {shape}; pass --model NAME (see `dse models`) or add "
                         f"the model with --catalog FILE")
    raise TraceError(f"{path}: several catalog models have {shape} ({', '.join(cands)}); pass --model NAME")


@dataclass(frozen=True)
class Converted:
    """A converted trace and how its steps were built (for :func:`warnings`)."""
    trace: Trace
    sequences: int                 # independent requests in the dumps
    interleaved: bool              # the B slots of a step are different requests
    explicit_steps: bool           # steps given by the records' ``step`` field


def convert(paths: list[str | Path], model: str | None = None, batch: int | None = None,
            phase: str = "decode") -> Trace:
    """Read router dumps and build a validated trace [steps, layers, B, k]."""
    return convert_report(paths, model, batch, phase).trace


def convert_report(paths: list[str | Path], model: str | None = None, batch: int | None = None,
                   phase: str = "decode") -> Converted:
    """:func:`convert` with the sequence count and the way the steps were built."""
    from dse.catalog import get_model
    if phase not in PHASES:
        raise TraceError(f"phase {phase!r}: allowed {', '.join(PHASES)}")
    paths = [Path(p) for p in paths]
    name = ", ".join(map(str, paths))
    acc = _Tokens()
    for i, p in enumerate(paths):
        acc.file = i
        _read_file(p, acc, phase)
    if not acc.records:
        extra = f" ({acc.dropped} records of other phases; try --phase all)" if acc.dropped else ""
        raise TraceError(f"{name}: no {phase} tokens{extra}")
    L, k = _check_shape(acc, name)
    m = get_model(model or _infer_model(acc.meta, L, k, name))
    if acc.meta.get("num_experts") not in (None, m.experts):
        raise TraceError(f"{name}: dump routes over {acc.meta['num_experts']} experts, but model {m.name} has "
                         f"{m.experts} (wrong model?)")
    n_seq = len(set(acc.seqs))
    explicit = all(r[0] is not None for r in acc.records)
    if explicit:
        ordered, B, steps, src_b = _explicit_steps(acc.records, batch, name)
    else:
        n = len(acc.records)
        B = batch or (m.native_batch if n >= m.native_batch else n)
        if n_seq >= B >= 2:
            ordered, steps, src_b = _interleave(acc, B)
        else:
            ordered, steps, src_b = _consecutive(acc.records, B, name, phase)
    arr = np.empty((steps * B, L, k), dtype=np.int64)
    for t, (_, _, layers) in enumerate(ordered):
        for layer, ids in layers.items():
            arr[t, layer] = ids
    ids = arr.reshape(steps, B, L, k).transpose(0, 2, 1, 3)
    check_ids(ids, m.experts, name)
    src = f"converted from {name} ({phase} tokens of {n_seq} sequence{'s' * (n_seq != 1)}; {src_b})"
    meta = TraceMeta(m.name, B, steps, L, k, m.experts, src, name)
    check_model(meta, m.name)
    tr = Trace(meta, np.ascontiguousarray(ids.astype(id_dtype(m.experts))))
    return Converted(tr, n_seq, not explicit and n_seq >= B >= 2, explicit)


def _check_shape(acc: _Tokens, name: str) -> tuple[int, int]:
    """Renumber layers 0..L-1 (sorted; e.g. absolute indices of the MoE layers) and check that every
    token has every layer with k ids; (L, k)."""
    lm = {layer: i for i, layer in enumerate(sorted({layer for r in acc.records for layer in r[2]}))}
    acc.records = [(st, od, {lm[layer]: ids for layer, ids in layers.items()}) for st, od, layers in acc.records]
    L = len(lm)
    k = len(next(iter(acc.records[0][2].values())))
    for _step, order, layers in acc.records:
        if len(layers) != L:
            missing = sorted(set(range(L)) - set(layers))
            inv = {i: layer for layer, i in lm.items()}
            raise TraceError(f"{name}: token {order[1]}: has {len(layers)} of {L} layers (missing layer "
                             f"{inv[missing[0]]}); every token needs top-k ids for every MoE layer")
        for layer, ids in layers.items():
            if len(ids) != k:
                raise TraceError(f"{name}: token {order[1]} layer {layer}: {len(ids)} expert ids, expected top-{k} "
                                 f"(as the first token)")
    return L, k


def _explicit_steps(records: list, batch: int | None, name: str) -> tuple[list, int, int, str]:
    by_step: dict[Any, list] = {}
    for r in sorted(records, key=lambda r: r[1]):
        by_step.setdefault(r[0], []).append(r)
    sizes = {len(v) for v in by_step.values()}
    if len(sizes) != 1:
        raise TraceError(f"{name}: steps hold different token counts ({sorted(sizes)[:4]}); every decode step "
                         f"must hold the batch's tokens")
    B = sizes.pop()
    if batch is not None and batch != B:
        raise TraceError(f"{name}: records carry steps of {B} tokens; --batch {batch} contradicts them")
    ordered = [r for s in sorted(by_step, key=lambda x: (str(type(x)), x)) for r in by_step[s]]
    return ordered, B, len(by_step), f"steps from records, B={B}"


def _consecutive(records: list, B: int, name: str, phase: str) -> tuple[list, int, str]:
    """Consecutive tokens (in order) cut into steps of B."""
    recs = sorted(records, key=lambda r: r[1])
    n = len(recs)
    if B > n:
        raise TraceError(f"{name}: only {n} {phase} tokens, fewer than batch {B} (pass --batch <= {n})")
    steps = n // B
    src = f"{n} consecutive tokens cut into {steps} steps of B={B}" + (f", {n - steps * B} dropped" if n % B else "")
    return recs[:steps * B], steps, src


def _interleave(acc: _Tokens, B: int) -> tuple[list, int, str]:
    """Continuous batching: B slots, each serving one sequence token by token; a slot whose sequence
    ends takes the next unused one; stop when a slot finds none (that partial step is dropped)."""
    seqs: dict[Any, list] = {}
    for rec, seq in zip(acc.records, acc.seqs):
        seqs.setdefault(seq, []).append(rec)
    queue = deque(sorted(rs, key=lambda r: r[1]) for rs in seqs.values())   # requests in the order given
    slots = [[queue.popleft(), 0] for _ in range(B)]
    ordered: list = []
    while True:
        step = []
        for slot in slots:
            while slot[1] >= len(slot[0]):
                if not queue:
                    n = len(acc.records)
                    steps = len(ordered) // B
                    return ordered, steps, (f"{len(seqs)} sequences interleaved over B={B} slots, {steps} steps, "
                                            f"{n - steps * B} of {n} tokens unused")
                slot[0], slot[1] = queue.popleft(), 0
            step.append(slot[0][slot[1]])
            slot[1] += 1
        ordered.extend(step)


def warnings(conv: Converted, profile_steps: int, trace_steps: int) -> list[str]:
    """What a converted trace cannot stand for: one request read as a batch, too few steps for the
    profiling plus measured windows (``profile_steps`` + ``trace_steps``, the design defaults)."""
    m = conv.trace.meta
    out = []
    if not conv.interleaved and not conv.explicit_steps and m.batch > 1:
        who = "one sequence" if conv.sequences == 1 else f"{conv.sequences} sequences (fewer than B={m.batch})"
        out.append(f"the dump holds {who}: each step is {m.batch} consecutive tokens of the same request(s), not "
                   f"a batch of independent requests (hot-set persistence and placement are then optimistic); "
                   f"give at least B single-request dumps to interleave them into real batches")
    need = profile_steps + trace_steps
    if m.steps < need:
        prof = min(profile_steps, m.steps // 2)
        out.append(f"{m.steps} step{'s' * (m.steps != 1)} < profiling {profile_steps} + measured {trace_steps}: an "
                   f"evaluation profiles placement on {prof} step{'s' * (prof != 1)} and measures "
                   f"{m.steps - prof}" + (" (placement then sees the measured steps)" if prof == 0 else ""))
    return out
