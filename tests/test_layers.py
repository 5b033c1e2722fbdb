"""The layers of Parla, checked on the source: which package may import which, the order of
memory's concerns, no circle of imports, and no module or class past its size.

Every module of the product (the folders that pyproject.toml's package-dir maps into `parla`) and of
bench/ is parsed; every import counts, absolute or relative, at the top, inside a function or under
TYPE_CHECKING, since each one ties the importer to what it names. A failure names the file, the
line, what it imports and the rule it breaks; the rules and why they hold are in
docs/design/architecture.md ("Layers")."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.tier("fast")

ROOT = Path(__file__).resolve().parents[1]
RULES = "the rules, and why: docs/design/architecture.md, 'Layers'"

# What each package may import of Parla besides itself, lowest layer first. `parla` is the package
# root's own module (its __init__.py); bench may import all of Parla, and nothing of Parla imports bench.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "parla": frozenset(),
    "kernel": frozenset(),
    "records": frozenset({"kernel"}),
    "memory": frozenset({"kernel", "records"}),
    "voice": frozenset({"kernel", "records"}),
    "tools": frozenset({"kernel", "records", "memory"}),
    "ui": frozenset({"kernel", "records", "memory"}),
    "daemon": frozenset({"kernel", "records", "memory", "voice", "tools", "ui"}),
    "bench": frozenset({"parla", "kernel", "records", "memory", "voice", "tools", "ui", "daemon"}),
}
# Folders of the repository that are not Parla: the product imports neither (bench and tests may).
NOT_PRODUCT = ("bench", "tests")

# memory's concerns, lowest first: each imports only those before it. The modules every concern
# may import: its errors, its settings and the prompts that are their defaults.
MEMORY_BASE = frozenset({"errors", "config", "prompts"})
MEMORY_ORDER = ("language", "store", "embedders", "summarizers", "retrieval", "compaction", "imports", "top")
# memory's own modules above all its sub-packages: the context a session starts from, forgetting.
MEMORY_TOP = frozenset({"context", "forgetting"})

MAX_LINES = 500
MAX_METHODS = 30
SIZES = "the limits and their exceptions: docs/design/architecture.md, 'Sizes'"
# Modules and classes past the limits, each with the section of docs/design/architecture.md that
# says why (none today). An entry that no longer needs to be here fails the test too, so the list
# only shrinks.
TOO_LONG_ALLOWED: dict[str, str] = {}
TOO_MANY_METHODS_ALLOWED: dict[str, str] = {}


@dataclass(frozen=True)
class Module:
    name: str  # parla.memory.store.protocol, bench.faults
    path: Path
    shown: str  # its path in the repository: memory/store/protocol.py
    is_package: bool  # an __init__.py


@dataclass(frozen=True)
class Import:
    source: Module
    line: int
    target: str  # the module imported, as precisely as the statement names it

    def __str__(self) -> str:
        return f"{self.source.shown}:{self.line} imports {self.target}"


def package_dirs(root: Path) -> dict[str, str]:
    """The package-dir mapping of pyproject.toml (parla.memory = memory, ...), and bench/."""
    mapping = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {**mapping, "bench": "bench"}


def find_modules(root: Path) -> dict[str, Module]:
    """Every module of the product and of bench/ by its importable name. The folder mapped to a
    package holds only the sub-packages no other mapping claims (parla/ holds kernel and records)."""
    mapping = package_dirs(root)
    claimed = {(root / folder).resolve() for folder in mapping.values()}
    found: dict[str, Module] = {}
    for package, folder in mapping.items():
        base = (root / folder).resolve()
        for path in sorted(base.rglob("*.py")):
            inner = path.relative_to(base)
            if any(part.startswith(".") or part == "__pycache__" for part in inner.parts):
                continue
            if any(parent in claimed and parent != base for parent in path.parents):
                continue
            parts = list(inner.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join([package, *parts])
            found[name] = Module(name, path, path.relative_to(root.resolve()).as_posix(), is_package)
    return found


def resolved(module: Module, node: ast.Import | ast.ImportFrom, known: dict[str, Module]) -> Iterator[str]:
    """The modules an import statement names: `from .x import y` names module `x.y` when there is
    one, else `x`; a relative import is read from the module's package."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, node.module] if node.module else package)
    else:
        base = node.module or ""
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        yield sub if sub in known else base


def owner(name: str, known: dict[str, Module]) -> str:
    """The module of ours that `name` is, or is inside of (an attribute named as a module)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def find_imports(root: Path) -> tuple[dict[str, Module], list[Import]]:
    known = find_modules(root)
    found: dict[Import, None] = {}  # in order, each once (`from x import a, b` names x once)
    for module in known.values():
        tree = ast.parse(module.path.read_text(), str(module.path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update((Import(module, node.lineno, target), None) for target in resolved(module, node, known))
    return known, list(found)


@cache
def repository() -> tuple[dict[str, Module], list[Import]]:
    return find_imports(ROOT)


def package_of(name: str) -> str:
    """`memory` for parla.memory.x, `kernel` for parla.kernel.x, `parla` for the root, `bench`, or
    the top-level name of anything else (a library, tests)."""
    parts = name.split(".")
    if parts[0] == "parla":
        return parts[1] if len(parts) > 1 else "parla"
    return parts[0]


def concern_of(name: str) -> str:
    """memory's concern a module of parla.memory belongs to: its sub-package, or for a module at
    memory's top, the base or the top."""
    parts = name.split(".")
    if len(parts) == 2:
        return "top"  # memory/__init__.py
    concern = parts[2]
    if concern in MEMORY_BASE:
        return "base"
    if concern in MEMORY_TOP:
        return "top"
    assert concern in MEMORY_ORDER, f"{name}: a concern of memory the layering test does not know; add it in order"
    return concern


def package_breaches(known: dict[str, Module], imports: Iterable[Import]) -> list[str]:
    breaches = []
    for imp in imports:
        source = package_of(imp.source.name)
        target = package_of(imp.target)
        ours = imp.target.startswith("parla.") or imp.target == "parla" or target == "bench"
        if source != "bench" and target in NOT_PRODUCT:
            breaches.append(f"{imp}: nothing of Parla imports {target}/")
        elif ours and target != source and target not in MAY_IMPORT[source]:
            allowed = ", ".join(sorted(MAY_IMPORT[source])) or "nothing of Parla"
            breaches.append(f"{imp}: {source} imports {allowed} (besides itself), not {target}")
    return breaches


def memory_breaches(known: dict[str, Module], imports: Iterable[Import]) -> list[str]:
    rank = {concern: i for i, concern in enumerate(MEMORY_ORDER)}
    breaches = []
    for imp in imports:
        if not (imp.source.name.startswith("parla.memory") and imp.target.startswith("parla.memory.")):
            continue
        source, target = concern_of(imp.source.name), concern_of(owner(imp.target, known))
        if target == "base" or source == target:
            continue
        if source == "base" or rank[target] > rank[source]:
            breaches.append(
                f"{imp}: in memory, {source} may import only {_below(source)}; {target} is above it "
                f"(memory's order, lowest first: {', '.join(MEMORY_ORDER)})"
            )
    return breaches


def _below(concern: str) -> str:
    if concern == "base":
        return "the base (errors, config, prompts)"
    lower = MEMORY_ORDER[: MEMORY_ORDER.index(concern)]
    return ", ".join(["the base (errors, config, prompts)", *lower])


def circles(known: dict[str, Module], imports: Iterable[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion)."""
    graph: dict[str, set[str]] = {name: set() for name in known}
    for imp in imports:
        target = owner(imp.target, known)
        if target and target != imp.source.name:
            graph[imp.source.name].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start, targets in graph.items():
        if start in index:
            continue
        work = [(start, iter(sorted(targets)))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def circle_breaches(known: dict[str, Module], imports: Iterable[Import]) -> list[str]:
    imports = list(imports)
    breaches = []
    for component in circles(known, imports):
        members = set(component)
        inside = [str(i) for i in imports if i.source.name in members and owner(i.target, known) in members]
        breaches.append(
            f"a circle of imports: {', '.join(component)} (none of them can be read or changed without the others: "
            f"move what they share into a module below them); its imports: " + "; ".join(sorted(inside))
        )
    return breaches


def _report(breaches: list[str], rules: str = RULES) -> str:
    return "\n".join([*breaches, rules])


def test_each_package_imports_only_the_layers_below_it() -> None:
    known, imports = repository()
    breaches = package_breaches(known, imports)
    assert not breaches, _report(breaches)


def test_each_concern_of_memory_imports_only_those_below_it() -> None:
    known, imports = repository()
    breaches = memory_breaches(known, imports)
    assert not breaches, _report(breaches)


def test_no_circle_of_imports() -> None:
    known, imports = repository()
    breaches = circle_breaches(known, imports)
    assert not breaches, _report(breaches)


def _product(known: dict[str, Module]) -> list[Module]:
    return [m for m in known.values() if package_of(m.name) != "bench"]


def size_breaches(sizes: dict[str, int], limit: int, what: str, allowed: dict[str, str], listed: str) -> list[str]:
    """Each of `sizes` past `limit` that `allowed` does not name, and each entry of `allowed` that
    is no longer past it."""
    breaches = [
        f"{name} has {size} {what} (at most {limit}): split it by concern"
        for name, size in sizes.items()
        if size > limit and name not in allowed
    ]
    return breaches + [
        f"{name} is allowed past {limit} {what} and no longer is: take it out of {listed}"
        for name in sorted(allowed)
        if sizes.get(name, 0) <= limit
    ]


def test_no_module_past_its_size() -> None:
    known, _ = repository()
    lines = {m.shown: len(m.path.read_text().splitlines()) for m in _product(known)}
    breaches = size_breaches(lines, MAX_LINES, "lines", TOO_LONG_ALLOWED, "TOO_LONG_ALLOWED")
    assert not breaches, _report(breaches, SIZES)


def test_no_class_past_its_methods() -> None:
    known, _ = repository()
    methods = {
        f"{module.shown}:{node.name}": sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in node.body)
        for module in _product(known)
        for node in ast.walk(ast.parse(module.path.read_text()))
        if isinstance(node, ast.ClassDef)
    }
    breaches = size_breaches(methods, MAX_METHODS, "methods", TOO_MANY_METHODS_ALLOWED, "TOO_MANY_METHODS_ALLOWED")
    assert not breaches, _report(breaches, SIZES)


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_check_finds_each_kind_of_breach(tmp_path: Path) -> None:
    """A small tree with one breach of each rule: each is found and named by file and line, an
    import inside a function, under TYPE_CHECKING or relative alike."""
    _tree(
        tmp_path,
        {
            "pyproject.toml": '[tool.setuptools.package-dir]\nparla = "parla"\n"parla.memory" = "memory"\n'
            '"parla.voice" = "voice"\n',
            "parla/__init__.py": "",
            "parla/kernel/__init__.py": "",
            "parla/kernel/errors.py": "import os\nfrom parla.memory import errors\n",
            "memory/__init__.py": "",
            "memory/errors.py": "import os\n\n\ndef f():\n    import bench.load\n",
            "memory/store/__init__.py": "",
            "memory/store/rows.py": "from ..errors import f\nfrom ..retrieval import search\n",
            "memory/retrieval/__init__.py": "",
            "memory/retrieval/search.py": "def f():\n    from parla.voice.speak import Voice\n",
            "voice/__init__.py": "",
            "voice/speak.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .hear import Ear\n",
            "voice/hear.py": "from . import speak\n",
            "bench/__init__.py": "",
            "bench/load.py": "from parla.voice.hear import speak\nimport tests.peers\n",
        },
    )
    known, imports = find_imports(tmp_path)
    assert sorted(known) == [
        "bench",
        "bench.load",
        "parla",
        "parla.kernel",
        "parla.kernel.errors",
        "parla.memory",
        "parla.memory.errors",
        "parla.memory.retrieval",
        "parla.memory.retrieval.search",
        "parla.memory.store",
        "parla.memory.store.rows",
        "parla.voice",
        "parla.voice.hear",
        "parla.voice.speak",
    ]
    assert [b.split(":", 2)[:2] for b in package_breaches(known, imports)] == [
        ["parla/kernel/errors.py", "2 imports parla.memory.errors"],
        ["memory/errors.py", "5 imports bench.load"],
        ["memory/retrieval/search.py", "2 imports parla.voice.speak"],
    ]
    assert [b.split(":", 2)[:2] for b in memory_breaches(known, imports)] == [
        ["memory/store/rows.py", "2 imports parla.memory.retrieval.search"]
    ]
    (circle,) = circle_breaches(known, imports)
    assert circle.startswith("a circle of imports: parla.voice.hear, parla.voice.speak ")
    assert circle.endswith("voice/hear.py:1 imports parla.voice.speak; voice/speak.py:4 imports parla.voice.hear")


def test_the_size_check_names_what_is_past_its_limit_and_what_the_list_allows_no_longer() -> None:
    sizes = {"a.py": 501, "b.py": 700, "c.py": 500, "d.py": 20}
    allowed = {"b.py": "Sizes", "d.py": "Sizes"}
    assert size_breaches(sizes, 500, "lines", allowed, "TOO_LONG_ALLOWED") == [
        "a.py has 501 lines (at most 500): split it by concern",
        "d.py is allowed past 500 lines and no longer is: take it out of TOO_LONG_ALLOWED",
    ]
