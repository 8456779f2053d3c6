"""The import graph of the whole ``dse`` package, built from the AST (imports inside functions
included): no cycle, ``dse.search`` never reaches ``dse.distributed``, no package imports another
package's ``_private`` name, and importing the expression parser does not load optuna."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import dse

ROOT = Path(dse.__file__).resolve().parent

# Edges allowed to close a cycle while a re-layout is in progress, each with its reason and owner
# (empty: the package has no cycle). test_allowed_edges_still_exist fails on a stale entry.
ALLOWED_CYCLE_EDGES: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(mods: dict[str, Path]) -> dict[str, set[tuple[str, str]]]:
    """module -> {(imported dse module, imported name or "")}, every import statement anywhere."""
    out: dict[str, set[tuple[str, str]]] = {}
    for mod, path in mods.items():
        edges: set[tuple[str, str]] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("dse"):
                        edges.add((_target(a.name, mods), ""))
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, path.name == "__init__.py", node)
                if not base.startswith("dse"):
                    continue
                for a in node.names:
                    full = f"{base}.{a.name}"
                    if full in mods:               # `from dse.search import runner`: a module
                        edges.add((full, ""))
                    else:
                        edges.add((_target(base, mods), a.name))
        out[mod] = {(t, n) for t, n in edges if t and t != mod}
    return out


def _target(name: str, mods: dict[str, Path]) -> str:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name


def _package(mod: str) -> str:
    return ".".join(mod.split(".")[:2])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: {t for t, _ in edges if (m, t) not in ALLOWED_CYCLE_EDGES}
            for m, edges in imports(mods).items()}


def test_the_graph_is_built_from_function_level_imports_too():
    g = imports(_modules())
    # dse.cli.run imports the runner inside a function only: the graph must still see it
    assert any(t == "dse.search.execute.runner" for t, _ in g["dse.cli.run"])
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_allowed_edges_still_exist():
    g = imports(_modules())
    gone = sorted(e for e in ALLOWED_CYCLE_EDGES if e[1] not in {t for t, _ in g.get(e[0], ())})
    assert gone == [], f"remove these edges from ALLOWED_CYCLE_EDGES, they no longer exist: {gone}"


def test_search_never_imports_distributed():
    bad = sorted((m, t) for m, edges in imports(_modules()).items() if m.startswith("dse.search")
                 for t, _ in edges if t.startswith("dse.distributed"))
    assert bad == []


def test_no_private_name_imported_across_packages():
    bad = sorted((m, f"{t}.{n}") for m, edges in imports(_modules()).items() for t, n in edges
                 if n.startswith("_") and not n.startswith("__") and _package(t) != _package(m))
    assert bad == []


def test_private_modules_are_not_imported_across_packages():
    bad = sorted((m, t) for m, edges in imports(_modules()).items() for t, _ in edges
                 if any(p.startswith("_") and p != "__init__" for p in t.split("."))
                 and _package(t) != _package(m))
    assert bad == []


def test_the_expression_parser_does_not_load_optuna():
    code = "import dse.search.space.expr, sys; assert 'optuna' not in sys.modules, 'optuna loaded'"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT.parent)
    assert r.returncode == 0, r.stderr


# The layers of the package (README, "Layout"), bottom (0) to top; a module may import its own layer or
# any lower one, never a higher one (inside functions included). dse/__init__ and __main__ sit on top.
LAYERS: dict[str, int] = {
    # package data, named constants, one-line errors, unit conversions, the packaged model table
    "constants": 0, "errors": 0, "data": 0, "units": 0, "tomlfile": 0, "version": 0, "catalog": 0,
    "report": 0, "lifetime": 0,
    "spec": 1,                       # the design point: knobs, defaults, validation
    "workload": 2,                   # traces, converters, synthetic generator, statistics
    "hardware": 3,                   # unit -> core -> die -> package -> node; network, area, power, cost
    "mapping": 4,                    # sharding, placement, scheduler
    "performance": 5,                # latency, energy, baselines, serving, delivered FLOPS
    "pipeline": 6, "vector": 6,      # the scalar and the vectorised evaluation of design points
    "reproduce": 7,                  # published figure vs ours
    "search": 8,                     # spaces, objectives, samplers, runner, storage, front, knee
    "distributed": 9,                # many processes on one study, on search's public names
    "viz": 10,                       # figures and reports of studies
    "cli": 11,                       # thin: parse, call, print
}


def _layer(mod: str) -> int | None:
    parts = mod.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def test_every_package_has_a_layer():
    tops = {m.split(".")[1] for m in _modules() if m.count(".") >= 1} - {"__main__"}
    assert sorted(tops - set(LAYERS)) == [], "give each new top-level module or package a layer in LAYERS"


def _upward(graph: dict[str, set[tuple[str, str]]]) -> list[tuple[str, str]]:
    return sorted((m, t) for m, edges in graph.items() for t, _ in edges
                  if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m))


def test_imports_point_down_the_layers():
    up = _upward(imports(_modules()))
    assert up == [], f"imports pointing up a layer (see layout.md): {up}"


def test_the_layer_check_sees_an_upward_import():
    fake = {"dse.spec.design": {("dse.workload.window", "Workload"), ("dse.catalog", "get_model")},
            "dse.cli.run": {("dse.search.execute.runner", "")}}
    assert _upward(fake) == [("dse.spec.design", "dse.workload.window")]


# The sub-packages of dse.search, bottom (0) to top: a module may import its own sub-package or a
# lower one, never a higher one (inside functions included). dse/search/__init__ only re-exports.
SEARCH_ORDER: dict[str, int] = {
    "storage": 0,     # storages, stored trials, every private optuna API
    "space": 0,       # design space, derived knobs, objective sets (pure)
    "front": 1,       # Pareto fronts, hypervolume, knees, knee confidence
    "grid": 2,        # dse grid: the exhaustive vectorised search
    "propose": 2,     # samplers, bounds, multi-fidelity
    "study": 3,       # the study file and a study read back
    "execute": 4,     # dse run: trials, evaluation, pools, warm state
    "review": 5,      # exported designs, the quality of a front
}
SEARCH_MAX_MODULES, SEARCH_MAX_SHARE = 15, 0.40


def _search_sub(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["dse", "search"] else None


def _search_upward(graph: dict[str, set[tuple[str, str]]]) -> list[tuple[str, str]]:
    out = []
    for m, edges in graph.items():
        a = _search_sub(m)
        for t, _ in edges:
            b = _search_sub(t)
            if a and b and a != b and SEARCH_ORDER[b] >= SEARCH_ORDER[a]:
                out.append((m, t))
    return sorted(out)


def test_search_modules_live_in_sub_packages():
    search = ROOT / "search"
    assert sorted(p.name for p in search.glob("*.py")) == ["__init__.py"], "a module directly in dse/search"
    subs = sorted(p.name for p in search.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert subs == sorted(SEARCH_ORDER), "give each sub-package of dse.search its place in SEARCH_ORDER"


def test_search_sub_packages_import_downwards_only():
    up = _search_upward(imports(_modules()))
    assert up == [], f"dse.search imports sideways or upwards (see SEARCH_ORDER): {up}"


def test_the_search_order_check_sees_a_sideways_import():
    fake = {"dse.search.grid.grid": {("dse.search.propose.bound.metrics", "")},
            "dse.search.front.pareto": {("dse.search.storage.optuna_compat", "")},
            "dse.search.storage.stored": {("dse.search.front.pareto", "")}}
    assert _search_upward(fake) == [("dse.search.grid.grid", "dse.search.propose.bound.metrics"),
                                    ("dse.search.storage.stored", "dse.search.front.pareto")]


def test_search_sub_packages_are_small_and_documented():
    search = ROOT / "search"
    lines = {p.name: sum(len(f.read_text().splitlines()) for f in p.glob("*.py")) for p in search.iterdir()
             if p.is_dir() and (p / "__init__.py").exists()}
    total = sum(lines.values())
    for sub, n in lines.items():
        pkg = search / sub
        assert len(list(pkg.glob("*.py"))) - 1 <= SEARCH_MAX_MODULES, sub
        assert n <= SEARCH_MAX_SHARE * total, f"dse/search/{sub} holds {n / total:.0%} of dse/search"
        doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text()))
        assert doc and len(doc) > 80, f"dse/search/{sub}/__init__.py needs a docstring of what it owns"
