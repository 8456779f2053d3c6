"""Rebuild the hostile trace files of the corpus (tests/hostile/trace/), deterministically.

    python tests/hostile/build_traces.py

Every file is a small synthetic ``rexpert-trace/1`` archive (model olmoe-1b-7b: 16 layers,
64 experts, top-8, B = 2) broken in one way. No real routing data is involved.
"""
from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "trace"
MODEL, LAYERS, EXPERTS, K, B, STEPS = "olmoe-1b-7b", 16, 64, 8, 2, 2


def good_ids() -> np.ndarray:
    rng = np.random.default_rng(0)
    ids = np.empty((STEPS, LAYERS, B, K), dtype=np.uint8)
    for idx in np.ndindex(STEPS, LAYERS, B):
        ids[idx] = rng.choice(EXPERTS, size=K, replace=False)
    return ids


def npy(arr, *, allow_pickle: bool = False) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asanyarray(arr), allow_pickle=allow_pickle)
    return buf.getvalue()


def members(experts=None, **over) -> dict[str, bytes]:
    m = {
        "experts": npy(good_ids() if experts is None else experts),
        "model": npy(np.array(MODEL)),
        "batch": npy(np.array(B, dtype=np.int64)),
        "n_experts": npy(np.array(EXPERTS, dtype=np.int64)),
        "source": npy(np.array("tests/hostile/build_traces.py")),
        "format": npy(np.array("rexpert-trace/1")),
    }
    m.update(over)
    return {k: v for k, v in m.items() if v is not None}


def write(name: str, mem: dict[str, bytes], compression=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(OUT / name, "w", compression=compression) as zf:
        for k, v in mem.items():
            zf.writestr(k + ".npy", v)


class Payload:
    """Unpickling this would print a marker: the loader must never unpickle anything."""

    def __reduce__(self):
        return (print, ("HOSTILE-PICKLE-EXECUTED",))


def out_of_range_line(t: int, layer: int) -> str:
    """One JSON line of the router dump with an out-of-range id: expert 99 at token 1, layer 2, slot 3."""
    ids = ", ".join(str(99 if (t, layer, j) == (1, 2, 3) else (t + layer + j) % 64) for j in range(K))
    return f'{{"token": {t}, "layer": {layer}, "experts": [{ids}]}}'


def main() -> None:
    OUT.mkdir(exist_ok=True)
    ids = good_ids()
    write("wrong_dtype_float.npz", members(ids.astype(np.float32)))
    write("wrong_shape_3d.npz", members(ids.reshape(STEPS, LAYERS, B * K)))
    bad = ids.copy()
    bad[1, 3, 0, 2] = EXPERTS  # one past the last expert
    write("ids_out_of_range.npz", members(bad))
    neg = ids.astype(np.int16)
    neg[0, 0, 1, 0] = -1
    write("ids_negative.npz", members(neg))
    dup = ids.copy()
    dup[0, 5, 1, 1] = dup[0, 5, 1, 0]
    write("ids_repeated_in_topk.npz", members(dup))
    write("layers_wrong_for_model.npz", members(ids[:, :3]))
    write("topk_wrong_for_model.npz", members(ids[..., :4]))
    write("empty_experts.npz", members(ids[:0]))
    write("batch_mismatch.npz", members(batch=npy(np.array(5, dtype=np.int64))))
    write("model_not_in_catalog.npz", members(model=npy(np.array("gpt-5"))))
    write("format_unknown.npz", members(format=npy(np.array("rexpert-trace/99"))))
    write("missing_members.npz", members(model=None, batch=None, source=None))
    write("member_not_scalar.npz", members(batch=npy(np.array([2, 2], dtype=np.int64))))
    # Pickles: an object array of experts, and a pickled metadata member.
    obj = np.empty((STEPS, LAYERS, B, K), dtype=object)
    obj[...] = 1
    obj[0, 0, 0, 0] = Payload()
    write("pickled_object_experts.npz", members() | {"experts": npy(obj, allow_pickle=True)})
    write("pickled_object_model.npz", members(model=npy(np.array([Payload()], dtype=object).reshape(()),
                                                        allow_pickle=True)))
    # Truncations: the archive cut short; a member shorter than its header says.
    full = io.BytesIO()
    with zipfile.ZipFile(full, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for k, v in members().items():
            zf.writestr(k + ".npy", v)
    raw = full.getvalue()
    (OUT / "truncated_archive.npz").write_bytes(raw[: len(raw) * 3 // 5])
    exp = npy(ids)
    write("truncated_experts_member.npz", members(experts=None) | {"experts": exp[: len(exp) - 100]})
    # A header claiming 2^40 steps over a few bytes of data (a cheap "bomb" of the declared kind).
    hdr = io.BytesIO()
    np.lib.format.write_array_header_2_0(hdr, {"descr": "|u1", "fortran_order": False,
                                              "shape": (1 << 40, LAYERS, B, K)})
    write("declared_huge_shape.npz", members() | {"experts": hdr.getvalue() + ids.tobytes()})
    # Deflate bomb: 64 MiB of zeros in ~64 KiB (zeros are also invalid: top-k ids repeat).
    bomb_steps = (64 << 20) // (LAYERS * B * K)
    hdr = io.BytesIO()
    np.lib.format.write_array_header_2_0(hdr, {"descr": "|u1", "fortran_order": False,
                                              "shape": (bomb_steps, LAYERS, B, K)})
    with zipfile.ZipFile(OUT / "zip_bomb_zeros.npz", "w", compression=zipfile.ZIP_DEFLATED,
                         compresslevel=9) as zf:
        for k, v in members().items():
            if k != "experts":
                zf.writestr(k + ".npy", v)
        with zf.open("experts.npy", "w", force_zip64=True) as fh:
            fh.write(hdr.getvalue())
            zero = bytes(1 << 20)
            for _ in range(64):
                fh.write(zero)
    (OUT / "not_a_zip.npz").write_bytes(bytes(range(256)) * 4)
    (OUT / "empty_file.npz").write_bytes(b"")
    (OUT / "router_dump_bad.json").write_text('{"meta": {"num_experts": 64, "top_k": 8}, "routes": [{"token_pos": 0, '
                                              '"layers": {"0": {"experts": [1, 2, "x"]}}}]}')
    (OUT / "router_dump_truncated.json").write_text('{"meta": {"num_experts": 64, "top_k": 8}, "routes": [{"tok')
    (OUT / "router_dump_ids_out_of_range.jsonl").write_text(
        "\n".join(out_of_range_line(t, layer) for t in range(2) for layer in range(LAYERS)) + "\n")
    (OUT / "router_dump_nan.jsonl").write_text('{"token": 0, "layer": 0, "experts": [NaN, 1, 2, 3, 4, 5, 6, 7]}\n')


if __name__ == "__main__":
    main()
