"""Other libraries through their public APIs only: an AST check over a2a/, agents/ and supervisor/.

The libraries watched (``WATCHED``): aiohttp (with multidict and yarl, its public types), httpx,
httpcore, websockets, msgspec, langgraph*, langchain* and redis. A *finding* is one of:

``import``
    An import of a watched module whose dotted path has a component starting with ``_`` (not a
    dunder), an imported name starting with ``_``, or, for a library with a list of public
    modules in ``PUBLIC_MODULES``, a module not in that list (aiohttp keeps private code in
    modules without an underscore: ``aiohttp.web_protocol``, ``aiohttp.http_parser``, ...).
``attribute``
    ``x._name`` (not a dunder) where ``x`` is, or is an attribute chain rooted in, a name bound
    by an import of a watched module (``web._run_app``, ``aiohttp.web_request._Request``).
``known-private``
    ``x._name`` where ``_name`` is in ``KNOWN_PRIVATE`` (names watched libraries keep on their
    objects) and ``x`` is not bare ``self`` or ``cls``: an object of theirs reached through a
    variable is not visible to the rule above, so the names we know are caught wherever they are.
``by-string``
    ``getattr`` / ``setattr`` / ``hasattr`` / ``delattr`` with a literal ``"_name"`` on anything
    but bare ``self`` or ``cls`` (the same access, spelt so that the rules above miss it).
``subclass``
    In a class deriving (directly or through our own classes) from a watched library's class:
    ``self._name`` / ``cls._name`` / ``super()._name`` where the watched base class has
    ``_name`` (on the imported class: methods, slots, class attributes; or set on ``self`` in
    the source of a watched class of its MRO, for attributes made in ``__init__``) or
    ``_name`` is in ``KNOWN_PRIVATE``; a method ``def _name`` overriding one the base has; and
    an ``__init__`` that never calls the base's ``__init__`` (a half-built object of theirs).

Findings are reported as ``file:line: rule: what``; the allow-lists match ``(rule, what)`` per
file, so they survive lines moving. ``ALLOWED`` holds the justified exceptions (each says why and
against which versions it was checked); ``TEMPORARY`` holds offenders being removed now.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("a2a", "agents", "supervisor")

#: Top-level modules watched; ``langgraph`` and ``langchain`` also cover ``langgraph_*`` and
#: ``langchain_*`` (langchain_core, langchain_openai, ...).
WATCHED = (
    "aiohttp",
    "multidict",
    "yarl",
    "httpx",
    "httpcore",
    "websockets",
    "msgspec",
    "langgraph",
    "langchain",
    "redis",
)
_PREFIX_FAMILIES = ("langgraph", "langchain")

#: For these libraries only the listed modules are public (their documented import paths);
#: elsewhere a module is public unless a component of its path starts with an underscore.
PUBLIC_MODULES: dict[str, frozenset[str]] = {
    "aiohttp": frozenset(
        {
            "aiohttp",
            "aiohttp.web",
            "aiohttp.abc",
            "aiohttp.hdrs",
            "aiohttp.client",
            "aiohttp.resolver",
            "aiohttp.tracing",
            "aiohttp.test_utils",
            "aiohttp.pytest_plugin",
            "aiohttp.worker",
        }
    ),
}

#: Private names of watched libraries' objects (aiohttp's protocol, request, response and
#: payload; httpx's transport and client): caught on any receiver but bare ``self`` / ``cls``.
KNOWN_PRIVATE = frozenset(
    {
        "_pool",
        "_transport",
        "_waiter",
        "_messages",
        "_handler_waiter",
        "_request_in_progress",
        "_upgraded",
        "_buffer",
        "_buffer_offset",
        "_prepare_hook",
        "_payload",
        "_payload_writer",
        "_protocol",
        "_loop",
        "_make_server",
        "_request_handler",
        "_request_factory",
        "_task_handler",
        "_keepalive",
        "_force_close",
        "_manager",
        "_mounts",
        "_socket",
    }
)

#: Justified exceptions, by file: {(rule, what): "why; versions checked"}. Keep it short.
ALLOWED: dict[str, dict[tuple[str, str], str]] = {}

# The HTTP server's offenders (the fast path, JsonAnswer's half-built responses, the connection
# guard's reach into RequestHandler, the Server header hook) are gone: none is allowed any more.
TEMPORARY: dict[str, frozenset[tuple[str, str]]] = {}


def _watched(module: str) -> bool:
    top = module.split(".", 1)[0]
    return top in WATCHED or top.startswith(_PREFIX_FAMILIES)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module(module: str) -> bool:
    if any(_private(part) for part in module.split(".")):
        return True
    public = PUBLIC_MODULES.get(module.split(".", 1)[0])
    return public is not None and module not in public


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.what}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str | None, level: int, here: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _bindings_of(tree: ast.Module, here: str, is_package: bool) -> dict[str, str]:
    """Names a module binds by import (at any depth) and local classes: name -> dotted path."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, here, is_package)
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{module}.{alias.name}"
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bound[node.name] = f"{here}.{node.name}"
    return bound


@cache
def _bindings(path: Path) -> dict[str, str]:
    return _bindings_of(_parse(path), _module_name(path), path.name == "__init__.py")


@cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _import_object(qualified: str) -> object | None:
    """The object a dotted path names (a module's attribute, possibly nested), if importable."""
    parts = qualified.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            found = getattr(found, name, None)
            if found is None:
                return None
        return found
    return None


def _our_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _watched_bases(bound: dict[str, str], node: ast.ClassDef, depth: int = 0) -> list[type]:
    """The watched libraries' classes ``node`` derives from, through our own classes too."""
    found: list[type] = []
    for base in node.bases:
        dotted = _dotted(base)
        if dotted is None or depth > 8:
            continue
        head, _, rest = dotted.partition(".")
        qualified = f"{bound[head]}.{rest}" if head in bound and rest else bound.get(head, dotted)
        if _watched(qualified):
            obj = _import_object(qualified)
            if isinstance(obj, type):
                found.append(obj)
            continue
        module, _, name = qualified.rpartition(".")
        source = _our_file(module)
        if source is None:
            continue
        for other in _parse(source).body:
            if isinstance(other, ast.ClassDef) and other.name == name:
                found += _watched_bases(_bindings(source), other, depth + 1)
    return found


def _root_name(node: ast.expr) -> str | None:
    """The name an expression starts from, through attributes, calls and subscripts."""
    while True:
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            break
    return node.id if isinstance(node, ast.Name) else None


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _is_super(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


class _Checker(ast.NodeVisitor):
    def __init__(self, rel: str, bound: dict[str, str]) -> None:
        self.rel = rel
        self.bound = bound
        self.imported = {name for name, target in self.bound.items() if _watched(target)}
        self.bases: list[list[type]] = [[]]
        self.findings: list[Finding] = []

    def add(self, node: ast.AST, rule: str, what: str) -> None:
        self.findings.append(Finding(self.rel, getattr(node, "lineno", 0), rule, what))

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _watched(alias.name) and _private_module(alias.name):
                self.add(node, "import", f"import {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and _watched(module):
            if _private_module(module):
                self.add(node, "import", f"from {module} import {', '.join(a.name for a in node.names)}")
            for alias in node.names:
                if _private(alias.name):
                    self.add(node, "import", f"from {module} import {alias.name}")

    # classes deriving from theirs
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        theirs = _watched_bases(self.bound, node)
        self.bases.append(theirs)
        if theirs:
            self._check_subclass_body(node, theirs)
        self.generic_visit(node)
        self.bases.pop()

    def _check_subclass_body(self, node: ast.ClassDef, theirs: list[type]) -> None:
        for item in node.body:
            if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if _private(item.name) and any(_base_has(base, item.name) for base in theirs):
                self.add(item, "subclass", f"{node.name} overrides {item.name}")
            if item.name == "__init__" and _has_own_init(theirs) and not _calls_base_init(item):
                self.add(item, "subclass", f"{node.name}.__init__ never calls the base __init__")

    def _theirs_has(self, name: str) -> bool:
        return name in KNOWN_PRIVATE or any(_base_has(base, name) for base in self.bases[-1])

    # attributes
    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        if _private(name):
            shown = f"{ast.unparse(node.value)}.{name}"
            if _root_name(node.value) in self.imported and not _is_self(node.value):
                self.add(node, "attribute", shown)
            elif (_is_self(node.value) or _is_super(node.value)) and self.bases[-1]:
                if self._theirs_has(name):
                    self.add(node, "subclass", shown)
            elif name in KNOWN_PRIVATE and not _is_self(node.value):
                self.add(node, "known-private", shown)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Name)
            and func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and not _is_self(node.args[0])
        ):
            self.add(node, "by-string", f"{func.id}({ast.unparse(node.args[0])}, {node.args[1].value!r})")
        self.generic_visit(node)


def _base_has(base: type, name: str) -> bool:
    """True if a watched class has ``name``: on the class (methods, slots, class attributes) or
    set on instances by its code (``self.name = ...`` in its source, where the source is Python)."""
    return hasattr(base, name) or any(name in _instance_names(klass) for klass in base.__mro__)


@cache
def _instance_names(klass: type) -> frozenset[str]:
    if not _watched(klass.__module__ or ""):
        return frozenset()
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
    except (OSError, TypeError, SyntaxError):  # a class written in C, or without source
        return frozenset()
    return frozenset(
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
    )


def _has_own_init(theirs: list[type]) -> bool:
    """True if one of the watched bases (or their watched ancestors) defines ``__init__``."""
    return any(
        "__init__" in vars(klass) for base in theirs for klass in base.__mro__ if _watched(klass.__module__ or "")
    )


def _calls_base_init(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            return True
    return False


def _sources() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def findings_in(path: Path) -> list[Finding]:
    checker = _Checker(path.relative_to(ROOT).as_posix(), _bindings(path))
    checker.visit(_parse(path))
    return checker.findings


def _excused(finding: Finding) -> bool:
    key = (finding.rule, finding.what)
    return key in ALLOWED.get(finding.path, {}) or key in TEMPORARY.get(finding.path, frozenset())


def test_no_private_names_of_other_libraries() -> None:
    found = [f for path in _sources() for f in findings_in(path) if not _excused(f)]
    assert not found, (
        "private names of other libraries (use their public API; see this test's docstring):\n"
        + "\n".join(map(str, found))
    )


def test_allow_lists_hold_no_stale_entries_and_say_why() -> None:
    seen = {(f.path, f.rule, f.what) for path in _sources() for f in findings_in(path)}
    stale = [
        f"{path}: {key}"
        for table in (ALLOWED, TEMPORARY)
        for path, keys in table.items()
        for key in keys
        if (path, *key) not in seen
    ]
    assert not stale, "allow-list entries that match nothing any more (remove them):\n" + "\n".join(stale)
    unexplained = [
        f"{path}: {key}"
        for path, entries in ALLOWED.items()
        for key, reason in entries.items()
        if "checked" not in reason or len(reason) < 40
    ]
    assert not unexplained, "ALLOWED entries must say why, and which versions were checked"


# ---- the rule itself, on small sources ---------------------------------------------------

OFFENDING = {
    "from aiohttp.web_protocol import RequestHandler": "import",
    "from httpx._transports.default import AsyncHTTPTransport": "import",
    "from aiohttp import _http_parser": "import",
    "import httpcore._async": "import",
    "import httpx\nhttpx.AsyncClient()._transport": "attribute",
    "from aiohttp import web\nweb.Response._body": "attribute",
    "def f(transport):\n    return transport._pool": "known-private",
    "def f(request):\n    return request.protocol._waiter": "known-private",
    "def f(payload):\n    return getattr(payload, '_buffer')": "by-string",
    "import httpx\nclass T(httpx.AsyncHTTPTransport):\n    def f(self):\n        return self._pool": "subclass",
    "from aiohttp import web\nclass W(web.WebSocketResponse):\n    def f(self):\n        self._autoping": "subclass",
    "from aiohttp import web\nclass R(web.Request):\n    def f(self):\n        super()._prepare_hook": "subclass",
    "from aiohttp import web\nclass R(web.Request):\n    async def _prepare_hook(self, response): ...": "subclass",
    "from aiohttp import web\nclass R(web.Response):\n    def __init__(self):\n        self.text = ''": "subclass",
}

FINE = [
    "from aiohttp import web\nfrom aiohttp.abc import AbstractAccessLogger\nimport httpx, httpcore",
    "import msgspec\nmsgspec.json.Decoder().decode(b'1')",
    "class Mine:\n    def __init__(self):\n        self._pool = []\n    def f(self):\n        return self._pool",
    "import httpx\nclass T(httpx.AsyncBaseTransport):\n    def __init__(self):\n        super().__init__()\n"
    "        self._inner = 1\n    def f(self):\n        return self._inner",
    "from collections import namedtuple\nP = namedtuple('P', 'a')\nP(1)._replace(a=2)",
    "def f(cls):\n    return cls.__name__",
]


def _check_source(source: str) -> list[Finding]:
    tree = ast.parse(source)
    checker = _Checker("a2a/probe.py", _bindings_of(tree, "a2a.probe", is_package=False))
    checker.visit(tree)
    return checker.findings


@pytest.mark.parametrize(("source", "rule"), OFFENDING.items())
def test_the_rule_catches(source: str, rule: str) -> None:
    assert rule in {f.rule for f in _check_source(source)}


@pytest.mark.parametrize("source", FINE)
def test_the_rule_lets_public_use_pass(source: str) -> None:
    assert _check_source(source) == []
