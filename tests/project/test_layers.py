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
