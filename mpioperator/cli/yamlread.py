"""YAML read from a user's file with bounds: its size, its nesting, its aliases and what they expand to.

PyYAML shares an aliased node instead of copying it, so loading is cheap, but everything after (the
conversion, validation, JSON for the request) walks the expanded tree: a few hundred bytes of nested
aliases (the "billion laughs") expand to billions of nodes, and an alias inside its own anchor makes a
recursive object that ends in a RecursionError. PyYAML has no setting for either, so the document's
events are read once first (a flat stream, no recursion) and counted: each anchor's expanded size is
known when its node ends, an alias adds that size, and an alias to a node still open is recursive.
Only then is the text loaded.
"""

from __future__ import annotations

from typing import Any

import yaml

# The API server takes no request body over 3 MiB; a file of several jobs may be larger, not this large.
MAX_BYTES = 16 << 20
# Kubernetes objects are a dozen levels deep; the code that walks them recurses.
MAX_DEPTH = 100
# How many aliases a stream may use, and how many nodes they may add to it once expanded: far more than a
# manifest that shares a container or a volume list, far less than a gigabyte of objects.
MAX_ALIASES = 1_000
MAX_ALIAS_NODES = 100_000

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlTooCostly(ValueError):
    """The text is over one of the bounds; the message says which, in one line."""


def load_all(text: str) -> list[Any]:
    """The documents of a YAML stream (empty ones left out), once it is within the bounds. Malformed YAML
    raises yaml.YAMLError, as yaml.safe_load_all does."""
    if len(text) > MAX_BYTES:
        raise YamlTooCostly(f"it is larger than {MAX_BYTES >> 20} MiB")
    _check_events(text)
    return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]


def _check_events(text: str) -> None:
    loader = _Loader(text)
    try:
        # Per open collection: its anchor and the nodes it holds so far, expanded.
        open_nodes: list[tuple[str | None, int]] = []
        sizes: dict[str, int] = {}  # anchor -> its node's expanded size, once the node has ended
        aliases = added = 0
        while loader.check_event():
            event: yaml.Event = loader.get_event()  # type: ignore[no-untyped-call]
            if isinstance(event, yaml.DocumentStartEvent):
                sizes.clear()  # anchors are per document
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(open_nodes) >= MAX_DEPTH:
                    raise YamlTooCostly(f"it is nested deeper than {MAX_DEPTH} levels{_where(event)}")
                open_nodes.append((event.anchor, 1))
            else:
                if isinstance(event, yaml.AliasEvent):
                    if any(anchor == event.anchor for anchor, _ in open_nodes):
                        raise YamlTooCostly(f"alias *{event.anchor} refers to its own node{_where(event)}")
                    size = sizes.get(event.anchor or "", 1)  # an unknown one is the loader's error
                    aliases += 1
                    added += size
                    if aliases > MAX_ALIASES:
                        raise YamlTooCostly(f"it uses more than {MAX_ALIASES} aliases")
                    if added > MAX_ALIAS_NODES:
                        raise YamlTooCostly(
                            f"its aliases expand to more than {MAX_ALIAS_NODES} nodes{_where(event)}"
                        )
                elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                    anchor, size = open_nodes.pop()
                    if anchor is not None:
                        sizes[anchor] = size
                elif isinstance(event, yaml.ScalarEvent):
                    size = 1
                    if event.anchor is not None:
                        sizes[event.anchor] = 1
                else:
                    continue
                if open_nodes:
                    anchor, held = open_nodes[-1]
                    open_nodes[-1] = (anchor, held + size)
    finally:
        loader.dispose()


def _where(event: yaml.Event) -> str:
    mark = event.start_mark
    return f" (line {mark.line + 1})" if mark is not None else ""
