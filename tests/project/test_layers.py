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
    (``wh.held_writer().place_part``) and ask the warehouse for scratch folders (``temp_dir``)."""
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
            # wh.place(...), wh.record(...): placing files by hand
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("place", "record")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "wh"
            ):
                wrong.append(f"{path.relative_to(PIPELINE.parent)}:{node.lineno}: wh.{node.func.attr}(...)")
    assert not wrong, "\n".join(wrong)


WAREHOUSE = PIPELINE / "warehouse"
# the modules of pipeline/warehouse/ and pipeline/jobs/ that may move a file (into the tables'
# folders, the index's, the commit records'), each with its reason
MAY_MOVE_FILES = {
    WAREHOUSE / "writer.py": "places parts' files, commits the index, keeps its versions",
    WAREHOUSE / "commit_records.py": "a part's commit record into its layer's _commits/ (for the writer)",
    WAREHOUSE / "check.py": "check --repair restores a kept version over the index, under the writer's lock",
}
# the reading side: what takes a snapshot of the index and never writes
READING = [PIPELINE / "outputs", PIPELINE / "analysis", WAREHOUSE / "views.py", WAREHOUSE / "index.py"]


def _moves(tree: ast.AST) -> list[tuple[int, str]]:
    """Calls that move a file: os.replace / os.rename / shutil.move, and a Path's .replace(target)
    or .rename(target) (one argument: str.replace takes two)."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        f = node.func
        owner = f.value.id if isinstance(f.value, ast.Name) else None
        if (owner, f.attr) in (("os", "replace"), ("os", "rename"), ("shutil", "move")):
            out.append((node.lineno, f"{owner}.{f.attr}"))
        elif f.attr in ("replace", "rename") and owner not in ("os", "shutil") and len(node.args) == 1:
            out.append((node.lineno, f".{f.attr}(...)"))
    return out


def test_only_the_writer_moves_files_into_a_warehouse():
    """In pipeline/warehouse/ and pipeline/jobs/, only the writer (and the two helpers it names)
    moves a file: the jobs hand a part to ``Writer.place_part``, compaction and the upgrade go
    through their Writer."""
    wrong = []
    for folder in (WAREHOUSE, PIPELINE / "jobs"):
        for path in sorted(folder.rglob("*.py")):
            if path in MAY_MOVE_FILES:
                continue
            for line, what in _moves(ast.parse(path.read_text())):
                wrong.append(f"{path.relative_to(PIPELINE.parent)}:{line}: {what}")
    assert not wrong, "\n".join(wrong)


def test_the_move_finder_finds_moves():
    tree = ast.parse("import os\nos.replace(a, b)\nPath(a).replace(b)\nx.rename(y)\ns.replace('a', 'b')\n")
    assert [w for _, w in _moves(tree)] == ["os.replace", ".replace(...)", ".rename(...)"]


def test_only_the_writer_takes_the_lock():
    takers = sorted(
        str(p.relative_to(PIPELINE.parent))
        for p in PIPELINE.rglob("*.py")
        if any(n in ("fcntl", "pipeline.fcntl") for n in _std_imports(p))
    )
    assert takers == ["pipeline/warehouse/writer.py"], takers


def _std_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_readers_never_import_the_writer_nor_ask_for_it():
    """The reading side reads one snapshot of the index (``Warehouse.run_index``): it never
    imports pipeline/warehouse/writer.py nor asks a warehouse for its writer."""
    wrong = []
    for root in READING:
        for path in sorted([root] if root.is_file() else root.rglob("*.py")):
            rel = path.relative_to(PIPELINE.parent)
            if any(n.startswith("pipeline.warehouse.writer") for n in _imports(path)):
                wrong.append(f"{rel}: imports pipeline.warehouse.writer")
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("writer", "held_writer")
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("wh", "warehouse", "self")
                ):
                    wrong.append(f"{rel}:{node.lineno}: {node.func.value.id}.{node.func.attr}()")
    assert not wrong, "\n".join(wrong)


def test_no_module_outside_the_warehouse_imports_the_writer():
    """The jobs and commands reach the writer through ``Warehouse.writer()`` and
    ``Warehouse.held_writer()``, never by importing it."""
    wrong = sorted(
        str(p.relative_to(PIPELINE.parent))
        for p in PIPELINE.rglob("*.py")
        if not p.is_relative_to(WAREHOUSE)
        and any(n.startswith("pipeline.warehouse.writer") for n in _imports(p))
    )
    assert not wrong, wrong


# profetl 0.2's layout (a commit record per run, runs/run_id=<id>/run.parquet, and a folder per
# run in each table's folder): only pipeline/warehouse/upgrade.py knows it, and only the modules
# that take part in an upgrade reach it (docs/architecture.md#upgrade)
UPGRADE = WAREHOUSE / "upgrade.py"
MAY_USE_UPGRADE = {
    WAREHOUSE / "store.py": "refuses a warehouse not upgraded yet where every reader opens the index",
    WAREHOUSE / "writer.py": "migrates under the lock before its sweep",
    WAREHOUSE / "check.py": "check --repair migrates, dropping the 0.2 runs --drop names first",
}


def _code_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """The string constants of the code (f-strings' parts too), docstrings and other bare
    strings left out."""
    bare = {
        id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in bare
    ]


def test_only_the_upgrade_knows_the_layout_of_profetl_0_2():
    wrong = []
    for path in sorted(PIPELINE.rglob("*.py")):
        if path == UPGRADE:
            continue
        rel = path.relative_to(PIPELINE.parent)
        for line, text in _code_strings(ast.parse(path.read_text())):
            if "run_id=" in text or text.endswith("run.parquet"):
                wrong.append(f"{rel}:{line}: {text!r}")
        if path not in MAY_USE_UPGRADE and any(
            n.startswith("pipeline.warehouse.upgrade") for n in _imports(path)
        ):
            wrong.append(f"{rel}: imports pipeline.warehouse.upgrade")
    assert not wrong, "\n".join(wrong)


def test_the_layout_finder_finds_the_layout_in_code_not_in_docstrings():
    tree = ast.parse('"""runs/run_id=<id>/run.parquet"""\nx = f"runs/run_id={i}/run.parquet"\n')
    assert [t for _, t in _code_strings(tree) if "run_id=" in t] == ["runs/run_id="]
