"""The project's structural rules, checked over the AST of every module of the four packages.

Rules (BRIEF "Style", issue #33 targets, each with the target 0):
- no import cycle between modules (imports inside functions included; imports under
  ``if TYPE_CHECKING:`` are annotations only and do not run, so they are left out);
- no private name (``_x``) imported from another module, nor read as ``module._x`` off an imported module;
- no module over 600 lines;
- no function over 10 parameters (``self``/``cls``, ``*args`` and ``**kwargs`` not counted).

What the code breaks today is listed below, per owner, as an allowlist that may only shrink: a new
violation fails, and so does an entry that no longer applies (remove it, the list must go to 0).
Run ``python tests/test_architecture.py`` to print the current counts.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("instrumentation", "iomodel", "compression_model", "advisor")
MAX_LINES = 600
MAX_PARAMS = 10

# --- allowlists (target: all empty) -------------------------------------------------------------
# Cycles: a module listed may sit in a cycle; private imports: (importing module, "source.name");
# functions: "module:qualified.name".
ALLOWED_CYCLE_MODULES: set[str] = set()
ALLOWED_PRIVATE_IMPORTS: set[tuple[str, str]] = set()
ALLOWED_LONG_MODULES: set[str] = set()
ALLOWED_LONG_FUNCTIONS: set[str] = set()


# --- the analysis -----------------------------------------------------------------------------------

def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            found[_module_name(path, root)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST):
    """Every node that runs, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _absolute(name: str, module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


class Analysis:
    def __init__(self, root: Path = ROOT):
        self.mods = modules(root)
        self.edges: dict[str, set[str]] = defaultdict(set)
        self.private: set[tuple[str, str]] = set()
        self.long_modules: dict[str, int] = {}
        self.long_functions: dict[str, int] = {}
        for name, path in self.mods.items():
            self._scan(name, path)

    def _resolve(self, dotted: str) -> str | None:
        """The module of ours that importing ``dotted`` runs (the longest known prefix)."""
        parts = dotted.split(".")
        while parts:
            cand = ".".join(parts)
            if cand in self.mods:
                return cand
            parts.pop()
        return None

    def _is_extension(self, package: str, name: str) -> bool:
        """``from package import name`` names a compiled submodule (not bound in the package's ``__init__``)."""
        path = self.mods[package]
        if path.name != "__init__.py":
            return False
        tree = ast.parse(path.read_text())
        bound = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)}
        bound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        bound |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                  for a in n.names}
        return name not in bound and (any(path.parent.glob(f"{name}*.c"))
                                      or any(path.parent.glob(f"*/{name.lstrip('_')}.c")))

    def _scan(self, name: str, path: Path) -> None:
        text = path.read_text()
        nlines = text.count("\n")
        if nlines > MAX_LINES:
            self.long_modules[name] = nlines
        tree = ast.parse(text, str(path))
        is_package = path.name == "__init__.py"
        aliases: dict[str, str] = {}      # local name -> our module it is bound to
        for node in _runtime_nodes(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    target = self._resolve(a.name)
                    if target and target != name:
                        self.edges[name].add(target)
                        if a.asname:
                            aliases[a.asname] = target
                        elif target == a.name.split(".")[0] or "." not in a.name:
                            aliases[a.name] = target
            elif isinstance(node, ast.ImportFrom):
                src = _absolute(name, name, is_package, node.level, node.module)
                if not src.split(".")[0] in PACKAGES:
                    continue
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    if sub in self.mods:                      # a submodule
                        if sub != name:
                            self.edges[name].add(sub)
                            aliases[a.asname or a.name] = sub
                        continue
                    target = self._resolve(src)
                    if target and target != name:
                        self.edges[name].add(target)
                        if self._is_extension(target, a.name):
                            continue                          # a compiled private module of the package
                        if a.name.startswith("_") and not a.name.startswith("__"):
                            self.private.add((name, f"{target}.{a.name}"))
        # module._private read off an imported module of ours
        for node in _runtime_nodes(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                self.private.add((name, f"{aliases[node.value.id]}.{node.attr}"))
        self._functions(name, tree, "")

    def _functions(self, module: str, node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{prefix}{child.name}"
                args = child.args
                params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                if params and params[0].arg in ("self", "cls"):
                    params = params[1:]
                if len(params) > MAX_PARAMS:
                    self.long_functions[f"{module}:{qual}"] = len(params)
                self._functions(module, child, qual + ".")
            elif isinstance(child, ast.ClassDef):
                self._functions(module, child, f"{prefix}{child.name}.")
            else:
                self._functions(module, child, prefix)

    def cycles(self) -> list[list[str]]:
        """Strongly connected components of more than one module (Tarjan)."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on: set[str] = set()
        out: list[list[str]] = []
        counter = [0]

        def visit(v: str) -> None:
            work = [(v, iter(sorted(self.edges.get(v, ()))))]
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            while work:
                node, it = work[-1]
                for w in it:
                    if w not in index:
                        index[w] = low[w] = counter[0]
                        counter[0] += 1
                        stack.append(w)
                        on.add(w)
                        work.append((w, iter(sorted(self.edges.get(w, ())))))
                        break
                    if w in on:
                        low[node] = min(low[node], index[w])
                else:
                    work.pop()
                    if work:
                        low[work[-1][0]] = min(low[work[-1][0]], low[node])
                    if low[node] == index[node]:
                        comp = []
                        while True:
                            w = stack.pop()
                            on.discard(w)
                            comp.append(w)
                            if w == node:
                                break
                        if len(comp) > 1:
                            out.append(sorted(comp))

        for v in sorted(self.mods):
            if v not in index:
                visit(v)
        return sorted(out)


_ANALYSIS: Analysis | None = None


def analysis() -> Analysis:
    global _ANALYSIS
    if _ANALYSIS is None:
        _ANALYSIS = Analysis()
    return _ANALYSIS


def _check(found: set, allowed: set, what: str) -> None:
    new = sorted(found - allowed)
    stale = sorted(allowed - found)
    assert not new, f"new {what} (the target is 0): {new}"
    assert not stale, f"{what} allowlisted but gone, remove them from tests/test_architecture.py: {stale}"


def test_no_import_cycles():
    in_cycles = {m for comp in analysis().cycles() for m in comp}
    _check(in_cycles, ALLOWED_CYCLE_MODULES, "modules in an import cycle")


def test_no_private_names_across_modules():
    _check(analysis().private, ALLOWED_PRIVATE_IMPORTS, "private names imported across modules")


def test_no_module_over_600_lines():
    _check(set(analysis().long_modules), ALLOWED_LONG_MODULES, f"modules over {MAX_LINES} lines")


def test_no_function_over_10_parameters():
    _check(set(analysis().long_functions), ALLOWED_LONG_FUNCTIONS, f"functions over {MAX_PARAMS} parameters")


def test_the_analysis_sees_a_cycle_and_a_private_import(tmp_path):
    """The checker itself can fail: a two-module cycle inside a function and a private import are found."""
    pkg = tmp_path / "advisor"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f(\n" + "".join(f"    p{i},\n" for i in range(11)) + "):\n"
                              "    from advisor.b import _hidden\n")
    (pkg / "b.py").write_text("from . import a\n_hidden = 1\n")
    a = Analysis(tmp_path)
    assert a.cycles() == [["advisor.a", "advisor.b"]]
    assert ("advisor.a", "advisor.b._hidden") in a.private
    assert a.long_functions == {"advisor.a:f": 11}


def report(a: Analysis) -> str:
    def owner(m: str) -> str:
        return "instrumentation" if m.startswith("instrumentation") else "other"

    lines = []
    cyc = a.cycles()
    for who in ("instrumentation", "other"):
        comps = [c for c in cyc if owner(c[0]) == who]
        priv = sorted(p for p in a.private if owner(p[0]) == who)
        longm = {m: n for m, n in a.long_modules.items() if owner(m) == who}
        longf = {f: n for f, n in a.long_functions.items() if owner(f) == who}
        lines.append(f"[{who}] cycles: {len(comps)} ({sum(map(len, comps))} modules), "
                     f"private imports: {len(priv)}, modules > {MAX_LINES} lines: {len(longm)}, "
                     f"functions > {MAX_PARAMS} params: {len(longf)}")
        for c in comps:
            lines.append("  cycle: " + " <-> ".join(c))
        for m, n in sorted(longm.items()):
            lines.append(f"  long module: {m} ({n})")
        for f, n in sorted(longf.items()):
            lines.append(f"  long function: {f} ({n})")
        for p in priv:
            lines.append(f"  private: {p[0]} uses {p[1]}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Analysis()))
