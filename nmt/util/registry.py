"""Named extension points: the attentions and teacher-forcing schedules a config may name.

A :class:`Registry` maps a name to a class or function.  nmt's own attentions and schedules are
entries like any other (registered by the modules that define them), so a user's entry is built,
saved and checked by the code that serves the built-in ones.  A config names an entry by its
registered name (``cosine``) or by import path (``my_attention:CosineEnergy``: module, colon,
attribute), as fairseq's ``--user-dir`` and ``register_model`` do.

Code outside nmt runs only when its user asks.  Training from a config the user wrote imports the
modules it names (:func:`import_path`); reading a checkpoint imports nothing by itself: its
record of the code it was trained with (:meth:`Registry.record`) is admitted only for modules the
caller allows by name (:func:`allowing`, ``nmt.load(..., modules=[...])``, ``--module``), as Hugging
Face's ``trust_remote_code`` does, and a module whose source changed since is refused
(:func:`fingerprint`).  Pure Python: the config layer declares the registries.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from nmt.util.errors import UserError, short_repr
from nmt.util.out_paths import shown

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_NAME_CHARS = 100
"""Longest registered name or import path: a name is shown in every message and listed as a choice."""
PATH = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_]\w*)*)")
"""``module.sub:Attr.attr``: where an entry is, as a config or a checkpoint names it."""

_ALLOWED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("nmt_allowed_modules", default=frozenset())
_GIVEN: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("nmt_given_modules", default=())


class PluginError(UserError):
    """Code outside nmt that cannot be used: unknown, not allowed, changed, or failing its checks."""


@dataclass(frozen=True)
class Entry:
    """One registered name: what it stands for and where that code lives."""

    name: str
    target: Any
    builtin: bool
    origin: str  # "module:qualname"
    fingerprint: Optional[str]  # sha256 of the module's source; None where it has none (a notebook)

    @property
    def module(self) -> str:
        return self.origin.split(":", 1)[0]


def origin_of(target: Any) -> str:
    """``module:qualname`` of a class or function."""
    return f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', type(target).__name__)}"


def fingerprint(target: Any) -> Optional[str]:
    """sha256 of the source of the module defining ``target``; None without a source file
    (``__main__`` of a notebook or a console), where no other process could import it anyway."""
    module = sys.modules.get(getattr(target, "__module__", ""), None)
    try:
        source = inspect.getsource(module) if module is not None else None
    except (OSError, TypeError):
        source = None
    return hashlib.sha256(source.encode("utf-8")).hexdigest() if source is not None else None


class Registry:
    """Names of one kind of extension (``kind``: "attention", "teacher-forcing schedule")."""

    def __init__(self, kind: str, option: str, accepts: Optional[Callable[[Any], Optional[str]]] = None) -> None:
        self.kind, self.option = kind, option  # option: the config key that names one, for messages
        self.accepts = accepts  # why a target is not of this registry's kind, or None when it is
        self._entries: dict[str, Entry] = {}
        self._reserved: dict[str, None] = {}  # ordered: names() lists nmt's own in the order given
        self._taken: dict[str, str] = {}  # names a config gives another meaning (a preset): name -> what

    def reserve(self, names: Iterable[str]) -> None:
        """Names nmt defines itself: known to the config before the module defining them is imported."""
        self._reserved.update(dict.fromkeys(names))

    def take(self, names: Iterable[str], what: str) -> None:
        """Names a config already gives another meaning (``what``, e.g. "an attention preset"): no
        entry may take them, so a config that names one never trains the user's code by surprise."""
        self._taken.update(dict.fromkeys(names, what))

    def register(self, name: str, target: Any, replace: bool = False) -> Any:
        """Register ``target`` under ``name``; returns it.  A built-in or taken name and a target of the
        wrong kind are refused.  Registering a name again from the same module replaces its entry (a
        notebook cell run twice); a name another module's code holds is refused unless ``replace``."""
        if not isinstance(name, str) or not (NAME.fullmatch(name) or PATH.fullmatch(name)):
            raise PluginError(f"{self.kind} name {short_repr(name)}: use letters, digits and _ (e.g. 'cosine')")
        if len(name) > MAX_NAME_CHARS:
            raise PluginError(f"{self.kind} name {short_repr(name)}: at most {MAX_NAME_CHARS} characters")
        builtin = getattr(target, "__module__", "").startswith("nmt.")
        if name in self._reserved and not builtin:
            raise PluginError(f"{self.kind} {name!r} is nmt's own; register yours under another name")
        if name in self._taken and not builtin:
            raise PluginError(f"{self.kind} {name!r} is {self._taken[name]}; register yours under another name")
        why = self.accepts(target) if self.accepts is not None else None
        if why is not None:
            raise PluginError(f"{self.kind} {name!r}: {short_repr(target)} {why}")
        held = self._entries.get(name)
        if held is not None and not replace and held.module != getattr(target, "__module__", "?"):
            raise PluginError(
                f"{self.kind} {name!r} is already {short_repr(held.origin)}; register yours under another name, "
                "or pass replace=True to replace it"
            )
        self._entries[name] = Entry(name, target, builtin, origin_of(target), None if builtin else fingerprint(target))
        return target

    def unregister(self, name: str) -> None:
        """Remove a user's entry (one that failed its checks, so it is no longer offered as a choice)."""
        entry = self._entries.get(name)
        if entry is not None and not entry.builtin:
            del self._entries[name]

    def decorator(self, name: str, replace: bool = False) -> Callable[[Any], Any]:
        """``@registry.decorator("cosine")``: :meth:`register` as a class or function decorator."""
        return lambda target: self.register(name, target, replace)

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._reserved

    def name_for(self, target: Any) -> str:
        """The name ``target`` is registered under, or its import path once registered under it (what a
        check given a class or function, not a name, registers: nmt's checks look entries up by name)."""
        name = self.name_of(target)
        if name is None:
            name = origin_of(target)
            self.register(name, target)
        return name

    def name_of(self, target: Any) -> Optional[str]:
        """The name ``target`` is registered under (the first), or None."""
        return next((name for name, entry in self._entries.items() if entry.target is target), None)

    def names(self) -> list[str]:
        """Every known name: nmt's own first, in the order reserved, then the user's."""
        return [
            *sorted(self._reserved, key=list(self._reserved).index),
            *(n for n in self._entries if n not in self._reserved),
        ]

    def unknown(self, name: str) -> str:
        """The message for a name that is not registered."""
        return (
            f"{self.option}={short_repr(name)} is not a known {self.kind}: choose from {', '.join(self.names())}, "
            f"a name you registered, or an import path module:Name"
        )

    def get(self, name: str) -> Entry:
        """The entry of ``name``; a name in import-path form is imported when its module is allowed
        (:func:`allow`), and refused in one line naming ``--module`` otherwise."""
        if name not in self._entries and PATH.fullmatch(name):
            self.import_allowed(name, self.option)
        if name not in self._entries:
            raise PluginError(self.unknown(name))
        return self._entries[name]

    def import_allowed(self, path: str, option: str) -> Entry:
        """Import ``module:Name`` that a saved or read-only config names (``option``), if its module is
        allowed by name; otherwise one PluginError saying how to allow it.  Imports nothing else."""
        module = path.split(":", 1)[0]
        if module not in _ALLOWED.get():
            raise PluginError(
                f"{option}={short_repr(path)} is code outside nmt, which nmt imports from a config it did not "
                f"train from only when allowed by name: add --module {module} (Python: modules=[{module!r}]) "
                "if you trust that module"
            )
        return import_path(path, self)

    def record(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """What a checkpoint keeps of the user's entries among ``names``: name, origin, fingerprint."""
        out = []
        for name in dict.fromkeys(names):
            entry = self._entries.get(name)
            if entry is not None and not entry.builtin:
                out.append({"kind": self.kind, "name": name, "origin": entry.origin, "sha256": entry.fingerprint})
        return out

    def admit(self, record: dict[str, Any], source: str) -> None:
        """Make a checkpoint's recorded entry usable: already registered with the same code, or
        imported from an allowed module; otherwise one PluginError naming module and source."""
        name, origin, sha = record.get("name"), record.get("origin"), record.get("sha256")
        if not (
            isinstance(name, str)
            and isinstance(origin, str)
            and len(name) <= MAX_NAME_CHARS
            and (NAME.fullmatch(name) or PATH.fullmatch(name))
            and len(origin) <= 2 * MAX_NAME_CHARS
            and PATH.fullmatch(origin)
            and (sha is None or (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha)))
        ):
            raise PluginError(
                f"{source}: its record of user code ({short_repr(name)}, {short_repr(origin)}) is not one nmt "
                "writes (an altered file?)"
            )
        module = origin.split(":", 1)[0]
        entry = self._entries.get(name)
        if entry is None:
            if module == "__main__":
                raise PluginError(
                    f"{source}: its {self.kind} {name!r} was defined in a script or notebook (__main__), which no "
                    f"other process can import; register it again before loading, or move it to a module"
                )
            if module not in _ALLOWED.get():
                raise PluginError(
                    f"{source}: its {self.kind} {name!r} is code outside nmt ({origin}); load it with "
                    f"modules=[{module!r}] (CLI: --module {module}) if you trust that module"
                )
            import_module(module, Path.cwd())
            if name not in self._entries:  # the module defines it but registers it under no name
                self.register(name, _attribute(sys.modules[module], origin.split(":", 1)[1], origin, self))
            entry = self._entries[name]
        if entry.origin != origin:
            raise PluginError(f"{source}: its {self.kind} {name!r} is {origin}, but this process has {entry.origin}")
        if sha is not None and entry.fingerprint is not None and sha != entry.fingerprint:
            raise PluginError(
                f"{source}: the source of module {module} ({self.kind} {name!r}) changed since this model was "
                f"trained (sha256 {str(sha)[:12]} then, {entry.fingerprint[:12]} now); restore it or retrain"
            )


def _attribute(module: Any, qualname: str, path: str, registry: Registry) -> Any:
    target = module
    for part in qualname.split("."):
        if not hasattr(target, part):
            raise PluginError(f"{registry.option}={path}: module {module.__name__} has no {qualname}")
        target = getattr(target, part)
    return target


MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
"""A module's dotted name, as ``--module`` and ``modules=`` take it (beside a ``.py`` file's path)."""


def import_module(name: str, search: Optional[Path] = None) -> Any:
    """Import module ``name`` (a dotted name, or a ``.py`` file's path), ``search`` first on the path.

    Every failure is one PluginError naming the module: a name that is neither, a file that would
    replace a module of its name (``json.py``, a second ``cosine.py``), a syntax error, an import
    that fails or raises inside the module."""
    if not isinstance(name, str) or not name.strip():
        raise PluginError(f"module {short_repr(name)}: give a module name (my_attention) or a .py file's path")
    if name.endswith(".py"):
        return _import_file(Path(name))
    if not MODULE.fullmatch(name):
        raise PluginError(f"module {short_repr(name)}: not a module name (my_attention, pkg.mod) or a .py file's path")
    added = search is not None and str(search) not in sys.path
    if added:
        sys.path.insert(0, str(search))
    try:
        return _run_import(name, lambda: importlib.import_module(name))
    except ModuleNotFoundError as exc:
        where = f" (looked in {search} and on sys.path)" if search is not None else " (not on sys.path or PYTHONPATH)"
        raise PluginError(f"module {exc.name or name} not found{where}") from None
    finally:
        if added:
            sys.path.remove(str(search))


def _import_file(path: Path) -> Any:
    """Import a ``.py`` file as the module of its stem, unless that would replace another module."""
    stem = path.stem
    if not path.is_file():
        raise PluginError(f"module file {shown(path)} not found")
    if not NAME.fullmatch(stem):
        raise PluginError(f"module file {shown(path)}: its name {stem!r} is not a Python module name")
    other = _module_named(stem)
    if other is not None and other != path.resolve():
        raise PluginError(
            f"module file {shown(path)}: the module {stem!r} is already {shown(other)}, which "
            "it would replace in this process; rename the file"
        )
    spec = importlib.util.spec_from_file_location(stem, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"module file {shown(path)}: not a Python module")
    module, loader = importlib.util.module_from_spec(spec), spec.loader
    sys.modules[stem] = module
    try:
        _run_import(stem, lambda: loader.exec_module(module))
    except BaseException:
        sys.modules.pop(stem, None)
        raise
    return module


def _module_named(name: str) -> Optional[Path]:
    """Where the module ``name`` already is (imported, standard, or found on the path), or None."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        file = getattr(loaded, "__file__", None)
        return Path(file).resolve() if file else Path(f"<built-in module {name}>")
    if name in sys.stdlib_module_names:
        return Path(f"<standard module {name}>")
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return Path(spec.origin).resolve() if spec.origin and spec.has_location else Path(f"<module {name}>")


def _run_import(name: str, run: Callable[[], Any]) -> Any:
    """``run()`` (an import of module ``name``), its failures in one line naming the module."""
    try:
        return run()
    except SyntaxError as exc:
        raise PluginError(
            f"module {name}: syntax error in {shown(exc.filename or '?')} line {exc.lineno}: {exc.msg}"
        ) from None
    except ModuleNotFoundError as exc:
        if exc.name is None or name == exc.name or name.startswith(f"{exc.name}."):
            raise  # the module itself is missing: the caller says where it looked
        raise PluginError(f"module {name}: its own import failed: no module named {exc.name!r}") from None
    except PluginError:
        raise
    except Exception as exc:  # the module's own code failed: the user's to fix, in one line
        raise PluginError(f"module {name}: importing it raised {type(exc).__name__}: {short_repr(str(exc))}") from None


def import_path(path: str, registry: Registry, search: Optional[Path] = None) -> Entry:
    """Import ``module:Name`` and register it under that path; ``search``: the config's folder.

    Called where the user named the code: their config (training) or an allowed module."""
    match = PATH.fullmatch(path)
    if not match:
        raise PluginError(f"{registry.option}={short_repr(path)}: an import path is module:Name")
    module = import_module(match.group(1), search)
    registry.register(path, _attribute(module, match.group(2), path, registry))
    return registry.get(path)


def module_names(modules: Iterable[str]) -> frozenset[str]:
    """The names modules are allowed by: ``pkg.mod`` as given, a ``.py`` file by its stem."""
    return frozenset(Path(m).stem if m.endswith(".py") else m for m in modules)


def allow(modules: Iterable[str]) -> None:
    """Import ``modules`` (names, found in the working folder or on the path, or ``.py`` files) now,
    so what they register is known, and let checkpoints name them from here on: what
    ``--module`` does for one command."""
    if isinstance(modules, str) or not isinstance(modules, Iterable):
        raise PluginError(f"modules: give a list of module names or .py paths, not {short_repr(modules)}")
    modules = list(modules)
    bad = next((m for m in modules if not isinstance(m, str)), None)
    if bad is not None:
        raise PluginError(f"modules: {short_repr(bad)} is not a module name or a .py file's path (a string)")
    for module in modules:
        import_module(module, Path.cwd())
    _ALLOWED.set(_ALLOWED.get() | module_names(modules))
    given = (str(Path(m).resolve()) if m.endswith(".py") else m for m in modules)
    _GIVEN.set(tuple(dict.fromkeys((*_GIVEN.get(), *given))))


def given_modules() -> tuple[str, ...]:
    """The modules allowed so far, as given (``.py`` paths made absolute): what a child process needs."""
    return _GIVEN.get()


@contextlib.contextmanager
def allowing(modules: Iterable[str]) -> Iterator[None]:
    """:func:`allow` within the block only (``modules=`` of the library's functions)."""
    tokens = _ALLOWED.set(_ALLOWED.get()), _GIVEN.set(_GIVEN.get())
    try:
        allow(modules)
        yield
    finally:
        _ALLOWED.reset(tokens[0])
        _GIVEN.reset(tokens[1])
