"""DESIGN.md's import rules, checked over every import of the four packages, module-level and
function-level alike (parsed with `ast`, nothing imported):

    agents       -> envs, mineclip_jax
    data         -> mineclip_jax, envs
    envs         -> mineclip_jax at most
    mineclip_jax -> none of the others

and none of them imports `benchmarks`, `experiments` or `tests`. Within one package the modules
form no circle (a module importing its own package's `__init__`, as `from envs import tasks`
inside `envs.voxel`, is not counted: Python initialises the parent first)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "mineclip_jax": {"mineclip_jax"},
    "envs": {"envs", "mineclip_jax"},
    "data": {"data", "mineclip_jax", "envs"},
    "agents": {"agents", "envs", "mineclip_jax"},
}
PROJECT = {*ALLOWED, "benchmarks", "experiments", "tests"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path):
    """(imported module, line) for every import statement anywhere in the file."""
    return imports_in(path.read_text(), module_name(path), path.name == "__init__.py")


def imports_in(source: str, name: str, is_package: bool = False):
    """(imported module, line) for every import statement anywhere in `source` (module `name`);
    for `from X import a`, both X and X.a (a may be a submodule)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, node.lineno
            for alias in node.names:
                yield f"{module}.{alias.name}", node.lineno


def package_files():
    for package in ALLOWED:
        yield from sorted((ROOT / package).rglob("*.py"))


def test_every_import_follows_the_package_rules():
    broken = []
    for path in package_files():
        package = module_name(path).split(".")[0]
        for module, line in imports(path):
            top = module.split(".")[0]
            if top in PROJECT and top not in ALLOWED[package]:
                broken.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not broken, "imports against DESIGN.md's rules:\n" + "\n".join(sorted(set(broken)))


def _graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in package_files()}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for module, _ in imports(path):
            parts = module.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            target = ".".join(parts)
            same_package = target.split(".")[0] == name.split(".")[0]
            if parts and target != name and same_package and not name.startswith(target + "."):
                deps.add(target)
        graph[name] = deps
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_between_modules_of_a_package():
    found = circles(_graph())
    assert not found, "modules that import each other (directly or around a circle): " + "; ".join(
        " <-> ".join(c) for c in found
    )


def test_the_checks_see_function_level_and_relative_imports_and_circles():
    source = (
        "def f():\n    from data import synthetic\n    import benchmarks.common\nfrom . import x\n"
    )
    found = [m for m, _ in imports_in(source, "mineclip_jax.demo")]
    assert {"data", "data.synthetic", "benchmarks.common", "mineclip_jax.x"} <= set(found)
    assert circles({"a.x": {"a.y"}, "a.y": {"a.x"}, "a.z": set()}) == [["a.x", "a.y"]]
    assert circles({"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}) == [["a.x", "a.y", "a.z"]]
    assert circles({"a.x": {"a.y"}, "a.y": set()}) == []
