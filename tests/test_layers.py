"""The package's layers (docs/design.md, section 8), held to the table that documents them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitlocks"

# layer -> the layers its modules may import at run time (besides itself).
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "layout": set(),
    "core": {"errors", "layout"},
    # The git layer's file writer only, lazily, for the register's one write.
    "identity": {"core", "git", "errors", "layout"},
    "git": {"core", "errors", "layout"},
    "store": {"core", "git", "identity", "errors", "layout"},
    "service": {"core", "git", "identity", "store", "errors", "layout"},
    "render": {"core", "identity", "errors", "layout"},
    # The store and the service only lazily, for the post-commit hook's one write.
    "hooks": {"core", "git", "identity", "store", "service", "render", "errors", "layout"},
    "agents": {"core", "git", "identity", "store", "service", "render", "hooks", "errors"}
    | {"layout"},
    # The live page: reads through the service, renders nothing but JSON for its page.
    "ui": {"core", "git", "identity", "store", "service", "render", "errors", "layout"},
    # core only for its JSON writer, an error's --json document.
    "main": {"cli", "hooks", "agents", "errors", "core"},
    "__init__": {"core", "errors"},
    "__main__": {"main"},
}
ALLOWED["cli"] = ALLOWED["agents"] | {"agents", "ui"}  # the command line sits above them all
# Third-party and heavy standard modules, and the one layer allowed each.
HOMES = {
    "pygit2": {"store"},
    "typer": {"cli"},
    "subprocess": {"git", "identity", "agents"},  # agents: the doctor runs harness shells
    "pathspec": {"core"},
    "mcp": {"agents"},
    "http": {"ui"},
    "webbrowser": {"cli"},
}


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), str(path))
    return found


MODULES = _modules()


def _layer(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(
    tree: ast.Module, *, top_level_only: bool, for_types: bool = False
) -> list[tuple[str, ast.stmt]]:
    """Modules imported at run time (and, ``for_types``, for the type checker too: the
    ``if TYPE_CHECKING`` blocks, left out otherwise)."""
    found: list[tuple[str, ast.stmt]] = []

    def visit(node: ast.AST, depth: int) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking(child) and not for_types:
                continue
            inner = depth + isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import) and not (top_level_only and depth):
                found.extend((alias.name, child) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and not (top_level_only and depth):
                base = child.module or ""
                found.append((base, child))
                if base == "gitlocks" or base.startswith("gitlocks."):
                    found.extend((f"{base}.{alias.name}", child) for alias in child.names)
            visit(child, inner)

    visit(tree, 0)
    return found


def _internal(name: str) -> str | None:
    """The gitlocks module ``name`` refers to (a module, or a name inside one)."""
    while name.startswith("gitlocks"):
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def test_every_layer_imports_only_the_layers_beneath_it() -> None:
    wrong = []
    for module, tree in MODULES.items():
        layer = _layer(module)
        for name, _ in _imports(tree, top_level_only=False):
            target = _internal(name)
            if target is None or target == "gitlocks":
                continue
            if _layer(target) != layer and _layer(target) not in ALLOWED[layer]:
                wrong.append(f"{module} imports {target}")
    assert not wrong, wrong


def test_heavy_dependencies_live_in_their_one_layer() -> None:
    wrong = []
    for module, tree in MODULES.items():
        for name, _ in _imports(tree, top_level_only=False):
            home = HOMES.get(name.split(".")[0])
            if home is not None and _layer(module) not in home:
                wrong.append(f"{module} imports {name}")
    assert not wrong, wrong


def _imported_modules(tree: ast.Module) -> dict[str, int]:
    """The gitlocks modules (files) ``tree`` imports, at its top, inside a function or for
    the type checker, each with the line of its first import: ``from gitlocks.git import
    settings`` imports the module ``settings``."""
    found: dict[str, int] = {}
    for name, node in _imports(tree, top_level_only=False, for_types=True):
        if isinstance(node, ast.ImportFrom) and name == node.module:
            named = [f"{name}.{alias.name}" for alias in node.names]
            if all(n in MODULES for n in named):
                continue  # only modules are named: each is imported, not the package
        target = _internal(name)
        if target is not None and target != "gitlocks":
            found.setdefault(target, node.lineno)
    return found


def test_no_import_cycles_between_files() -> None:
    """No file imports, at its top, inside a function or for its annotations, a file that
    imports it back, however far round: a cycle means two modules share one job, or a name
    lives in the wrong one. A lazy import keeps a heavy dependency off a hot path, and an
    import under ``TYPE_CHECKING`` one that only the type checker needs: neither hides a
    cycle (a module that annotates with a caller's type names what it needs of it in a
    ``Protocol``)."""
    graph = {
        module: {t: line for t, line in _imported_modules(tree).items() if t != module}
        for module, tree in MODULES.items()
    }
    cycles: list[str] = []
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            cycles.append(" -> ".join(cycle))
            return
        if module in done:
            return
        for target in sorted(graph[module]):
            walk(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        walk(module, [])
    assert not cycles, cycles


def test_no_module_borrows_another_s_private_names() -> None:
    """A ``_name`` is its module's own: one another module needs is made public (or moved
    to the module whose job it is), never imported or reached for across modules."""
    borrowed = []
    for module, tree in MODULES.items():
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gitlocks"):
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in MODULES:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    elif _private(alias.name):
                        borrowed.append(f"{module}:{node.lineno}: {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("gitlocks") and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
            ):
                borrowed.append(f"{module}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    assert not borrowed, borrowed


# A module's optional table, read where most modules have none (the verb table).
NAMED_LOOKUPS_ALLOWED = {("gitlocks.cli.app", "OPTIONAL_VALUES")}


def test_no_attribute_is_looked_up_by_name_with_a_fallback() -> None:
    """``getattr(x, "name", default)`` and ``hasattr(x, "name")`` hide from the type checker
    an attribute that is renamed or removed: the fallback quietly becomes the behaviour (a
    local wait that asked git on every poll, once ``Store.reftable`` went). Such an attribute
    belongs to the object's declared type (the store's ``LockStore``) and is read directly."""
    found = []
    for module, tree in MODULES.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                continue  # a name chosen at run time (a tool's, a stream's)
            fallback = node.func.id == "hasattr" or (
                node.func.id == "getattr" and len(node.args) > 2
            )
            dunder = name.value.startswith("__") and name.value.endswith("__")
            if fallback and not dunder and (module, name.value) not in NAMED_LOOKUPS_ALLOWED:
                found.append(f"{module}:{node.lineno}: {node.func.id}(..., {name.value!r})")
    assert not found, found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_imports_inside_functions_say_why() -> None:
    """Only a deliberate lazy import of a heavy dependency or a verb, with its reason."""
    silent = []
    for module, tree in MODULES.items():
        source = (PACKAGE.parent / (module.replace(".", "/"))).with_suffix(".py")
        if not source.exists():
            source = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
        lines = source.read_text().splitlines()
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in top:
                continue
            if any(node is n for n in _type_checking_bodies(tree)):
                continue
            here = lines[node.lineno - 1]
            line = node.lineno - 2  # the group of imports it stands in says why, above it
            while line >= 0 and lines[line].strip().startswith(("from ", "import ")):
                line -= 1
            above = lines[line].strip() if line >= 0 else ""
            if "#" not in here and not above.startswith("#"):
                silent.append(f"{module}:{node.lineno}: {here.strip()}")
    assert not silent, silent


def _type_checking_bodies(tree: ast.Module) -> list[ast.stmt]:
    return [stmt for node in tree.body if _type_checking(node) for stmt in node.body]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "args", [["version"], ["whoami"], ["-h"], ["skill", "show"], ["version", "--json"]]
)
def test_cheap_verbs_never_import_pygit2(args: list[str], tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from gitlocks.main import main\n"
        f"code = main({args!r})\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('PYGIT2=%s CODE=%s' % ('pygit2' in sys.modules, code))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.stderr.endswith("PYGIT2=False CODE=0"), proc.stderr


def test_top_level_help_needs_no_command_line_framework(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from gitlocks.main import main\n"
        "main(['-h'])\n"
        "sys.stderr.write('TYPER=%s' % ('typer' in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.stderr.endswith("TYPER=False"), proc.stderr


SETTINGS_MODULE = "gitlocks.git.settings"


def test_only_the_settings_module_runs_git_config() -> None:
    """Settings are read (and written) in one place: a ``"config"`` word in a git
    command line, or pygit2's ``.config``, anywhere else is a second reader."""
    wrong = []
    for module, tree in MODULES.items():
        if module == SETTINGS_MODULE:
            continue
        slots = {  # a class's field names are no command line
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__slots__"
        }
        for node in ast.walk(tree):
            if id(node) in slots:
                continue
            if isinstance(node, (ast.List, ast.Tuple)) and any(
                isinstance(e, ast.Constant) and e.value == "config" for e in node.elts
            ):
                wrong.append(f"{module}:{node.lineno}: git config")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr == "config"
                and "repo" in ast.unparse(node.value)
            ):
                wrong.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    assert not wrong, wrong


MAX_MODULE_LINES = 600


def test_no_module_passes_six_hundred_lines() -> None:
    """A module that grows past this does more than one job: split it by job."""
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, long


TESTS = Path(__file__).resolve().parent
# Folders of tests that are no package folder: the shared builders, and the tests of the
# project as a whole (docs, layers, imports, the manual page) at the top.
NOT_PACKAGES = {"support", "__pycache__"}


def test_the_tests_mirror_the_package() -> None:
    """Each folder of tests is named after the package folder whose code it tests, so a
    change and its tests are found in the same place."""
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith(".")}
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - NOT_PACKAGES <= packages, sorted(folders - NOT_PACKAGES - packages)


def test_no_test_asserts_on_the_wall_clock() -> None:
    """A time budget fails on a busy machine: speed is measured in bench/, never asserted.
    An upper bound on an elapsed time is such a budget (a lower bound, "it did wait", and a
    deadline that only ends a bounded loop are not)."""
    clock = re.compile(r"(time\.monotonic|time\.time|time\.perf_counter)\(\) - ")
    found = []
    for path in TESTS.rglob("test_*.py"):
        lines = path.read_text().splitlines()
        timed = {
            m.group(1)
            for line in lines
            if (m := re.match(r"\s*(\w+) = .*", line)) and clock.search(line)
        }
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text.startswith("assert"):
                continue
            names = "|".join(map(re.escape, timed)) or "(?!)"
            if re.search(rf"\b({names})\s*<", text) or (clock.search(text) and "<" in text):
                found.append(f"{path.relative_to(TESTS)}:{number}: {text}")
    assert not found, found
