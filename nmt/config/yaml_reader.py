"""Reading config YAML safely: a strict loader with limits, so no file or ``--set`` value can
take the machine's memory or time, and every problem is one short :class:`ConfigError`.

The loader refuses a key given twice (both lines named), a list or mapping as a key, integers
too long to convert, nesting past :data:`MAX_YAML_DEPTH` and documents whose aliases expand past
:data:`MAX_YAML_NODES` nodes (alias bombs, counted before anything walks them); files past
:data:`MAX_CONFIG_BYTES` are not read whole.  Validating what it returns is :mod:`nmt.config`'s job.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from nmt.util.errors import SHOWN_VALUE_CHARS, ConfigError, short_repr, shorten

MAX_CONFIG_BYTES = 1 << 20
"""Largest config file (or ``--set`` value) read: 1 MiB; real configs are a few KiB."""

MAX_YAML_NODES = 100_000
"""Most YAML nodes one config (or ``--set`` value) may expand to, an alias counting its anchor's
nodes again each time it is used: this refuses alias bombs ("billion laughs") before anything
walks them.  The full config with every option is under 1,000 nodes."""

MAX_YAML_DEPTH = 64
"""Deepest nesting of YAML collections a config may hold (a real one nests four deep)."""


def parse_value(key: str, text: str) -> Any:
    """An override's value as YAML (with the limits of a config file); text YAML cannot read stays text."""
    if text == "":
        return ""
    if len(text) > MAX_CONFIG_BYTES:  # characters, not bytes: argv may hold undecodable ones
        raise ConfigError(
            f"--set {shorten(key, SHOWN_VALUE_CHARS)}: the value is longer than {MAX_CONFIG_BYTES:,} characters"
        )
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except _TooLarge as exc:
        raise ConfigError(f"--set {shorten(key, SHOWN_VALUE_CHARS)}: {exc}") from None
    except yaml.YAMLError:
        return text


class _TooLarge(Exception):
    """A YAML document past :data:`MAX_YAML_NODES` or :data:`MAX_YAML_DEPTH`, or referring to itself."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    """The nodes directly inside ``node``: a mapping's keys and values, a sequence's items."""
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node, limit: int = MAX_YAML_NODES) -> None:
    """Raise :class:`_TooLarge` if ``root`` expands to more than ``limit`` nodes or contains itself.

    Aliases make the composed document a graph in which one node may be reached many times;
    each node's expanded size is computed once (memoized), so the check costs time in the
    number of distinct nodes, however large the expansion.  Iterative: no recursion limit.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()  # the nodes being expanded: meeting one again is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if expanded:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > limit:
                raise _TooLarge(
                    f"expands to more than {limit:,} YAML nodes (each use of an alias counts "
                    f"its anchor's nodes again); a config is far smaller"
                )
        elif key in on_path:
            raise _TooLarge(f"line {node.start_mark.line + 1}: an alias refers to a collection that holds it")
        elif key not in sizes:
            on_path.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader with limits: no key twice in one mapping (YAML keeps the last silently),
    no key that is a list or mapping, no document expanding past :data:`MAX_YAML_NODES` nodes or
    nesting past :data:`MAX_YAML_DEPTH`, no integer too long to convert."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _TooLarge(
                    f"line {self.peek_event().start_mark.line + 1}: nested more than {MAX_YAML_DEPTH} levels deep"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        _check_expansion(node)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, f"a {type(key).__name__} cannot be a key", key_node.start_mark
                ) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {short_repr(key)} appears twice (lines {seen[key].line + 1} and "
                    f"{key_node.start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # Python refuses to convert integers of more than 4,300 digits
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {len(node.value):,} characters is too long", node.start_mark
            ) from None


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


def _not_a_file(path: Path) -> str:
    """What ``path`` is when it exists and is not a regular file ("a folder", "a FIFO", ...); else ""."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""  # missing or unreadable: open says which
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))
    if stat.S_ISREG(mode):
        return ""
    return next((name for test, name in kinds if test(mode)), "a device")


def read_yaml(path: Path) -> dict[str, Any]:
    """Read a YAML mapping; malformed YAML and repeated keys are reported with line and column.

    A file over :data:`MAX_CONFIG_BYTES`, or one whose aliases expand past :data:`MAX_YAML_NODES`
    nodes, is refused before anything is built from it.
    """
    kind = _not_a_file(path)
    if kind:  # a FIFO would block the open (forever, without a writer); a device never ends
        raise ConfigError(f"{path}: a config file must be a regular file, not {kind}")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)  # at most this much
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config ({exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: a config file is at most {MAX_CONFIG_BYTES:,} bytes; this one is longer")
    try:
        raw = yaml.load(text, Loader=_StrictLoader)
    except _TooLarge as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}{where}: malformed YAML: {shorten(problem)}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections, got {type(raw).__name__}")
    return raw
