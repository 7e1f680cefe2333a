"""Each folder of pipeline/ imports only the layers docs/architecture.md (#layers) lets it use."""

from __future__ import annotations

import ast
from pathlib import Path

PIPELINE = Path(__file__).resolve().parents[2] / "pipeline"
SHARED = {
    "pipeline",
    "pipeline.__version__",
    "pipeline.errors",
    "pipeline.paths",
    "pipeline.limits",
    "pipeline.resources",
    "pipeline.progress",
    "pipeline.lazy",
    # a domain rule (which workload a run is) over values it is handed: the writer and the
    # upgrade apply it, it imports nothing of pipeline
    "pipeline.workload",
}

# folder -> the top-level parts of pipeline it may import (besides itself and SHARED)
MAY_USE = {
    "layouts": set(),
    "readers": {"layouts"},
    "synth": {"layouts"},
    "warehouse": set(),
    "jobs": {"readers", "warehouse"},
    "analysis": {"warehouse"},
    "outputs": {"warehouse", "analysis", "jobs"},
    "cli": {"jobs", "outputs", "analysis", "warehouse", "synth"},
}
# single modules allowed past their folder's rule, each with its reason
EXCEPTIONS = {
    (
        "pipeline.synth.scale",
        "pipeline.readers.decode",
    ),  # scaling a dump cuts its TLV streams as the readers do
    # a build sets the advice mart's thresholds from the warehouse's advice.toml; a run checks it first
    ("pipeline.jobs.build", "pipeline.analysis.advice"),
    ("pipeline.jobs.runner", "pipeline.analysis.advice"),
}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pipeline"):
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("pipeline"))
    return names


def test_each_folder_imports_only_the_layers_it_may_use():
    wrong = []
    for folder, allowed in MAY_USE.items():
        for path in sorted((PIPELINE / folder).rglob("*.py")):
            module = ".".join(path.relative_to(PIPELINE.parent).with_suffix("").parts)
            for name in _imports(path):
                parts = name.split(".")
                top = parts[1] if len(parts) > 1 else None
                if name in SHARED or top in (folder, *allowed) or ".".join(parts[:2]) in SHARED:
                    continue
                if any(module == m and name.startswith(target) for m, target in EXCEPTIONS):
                    continue
                wrong.append(f"{module} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_every_folder_has_a_rule():
    folders = {p.name for p in PIPELINE.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(MAY_USE), folders ^ set(MAY_USE)


def _module_graph() -> dict[str, set[str]]:
    """Each module of pipeline/ -> the modules of pipeline/ it imports, at its top or inside a
    function (a deferred import is still a dependency a reader of the code has to follow)."""
    modules = {
        ".".join(p.relative_to(PIPELINE.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in PIPELINE.rglob("*.py")
    }
    return {m: {n for n in _imports(p) if n in modules and n != m} for m, p in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(m, stack):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                found.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n, stack)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    return found


def test_no_module_imports_a_module_that_imports_it_back():
    # a package's __init__ is left out: importing pipeline.x.y runs pipeline.x first anyway
    graph = {m: {n for n in deps if not m.startswith(n + ".")} for m, deps in _module_graph().items()}
    assert not _cycles(graph), "import cycles:\n" + "\n".join(" -> ".join(c) for c in _cycles(graph))


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


STORE_FOLDERS = {"raw", "marts", "runs", ".tmp"}


def test_only_the_warehouse_names_its_folders():
    """Outside pipeline/warehouse/, no module builds a path inside a warehouse (its tables'
    folders, its scratch folder) or moves a file into one: the jobs hand parts to the writer
    (``Warehouse.place_part``) and ask it for scratch folders (``temp_dir``)."""
    wrong = []
    for path in sorted(PIPELINE.rglob("*.py")):
        if path.is_relative_to(PIPELINE / "warehouse"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            # wh.path / "raw" (or marts, runs, .tmp): a path built into the warehouse's own folders
            # (its advice.toml, a user's file at its root, is the user's, not the store's)
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Div)
                and isinstance(node.left, ast.Attribute)
                and node.left.attr == "path"
                and isinstance(node.left.value, ast.Name)
                and node.left.value.id == "wh"
                and isinstance(node.right, ast.Constant)
                and node.right.value in STORE_FOLDERS
            ):
                wrong.append(
                    f"{path.relative_to(PIPELINE.parent)}:{node.lineno}: wh.path / {node.right.value!r}"
                )
            # wh.place(...), wh.files(...) outside the reading side: placing files by hand
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("place", "record")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "wh"
            ):
                wrong.append(f"{path.relative_to(PIPELINE.parent)}:{node.lineno}: wh.{node.func.attr}(...)")
    assert not wrong, "\n".join(wrong)
