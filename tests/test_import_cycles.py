"""No import cycle in src/drill: the graph of every module's imports, the late ones inside functions included (a late
import hides a cycle from Python, not from the design), and only `if TYPE_CHECKING:` blocks left out."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src"


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under `root/drill` (a package is its `__init__.py`)."""
    names = {}
    for path in sorted((root / "drill").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child):
                pending.extend(child.orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            pending.append(child)
    return found


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` that `name` imports anywhere in its file: `from a import b` is `a.b` when that is a
    module, else `a`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {t for t in targets if t in modules and t != name}


def import_cycles(root: Path) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan), each sorted."""
    modules = module_names(root)
    graph = {name: sorted(imported_modules(name, path, modules)) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(start: str) -> None:  # iterative Tarjan: deep import chains must not hit the recursion limit
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for name in graph:
        if name not in index:
            visit(name)
    return sorted(groups)


def test_src_drill_has_no_import_cycle() -> None:
    cycles = import_cycles(SOURCE)
    assert cycles == [], "import cycles (late imports count): " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_late_import_cycle_and_skips_type_checking_blocks(tmp_path: Path) -> None:
    package = tmp_path / "drill"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from drill.b import thing\n")
    (package / "b.py").write_text("def thing():\n    from drill import a\n    return a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from drill.a import x\n")
    (package / "d.py").write_text("from . import c\n")
    (package / "e.py").write_text("from drill.d import c\nfrom drill import d\n")
    assert import_cycles(tmp_path) == [["drill.a", "drill.b"]]
    (package / "c.py").write_text("from drill import e\n")
    assert import_cycles(tmp_path) == [["drill.a", "drill.b"], ["drill.c", "drill.d", "drill.e"]]
