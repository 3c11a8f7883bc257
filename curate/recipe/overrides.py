"""`--set key.path=value` overrides of a recipe: applied to the composed YAML (so every line
number still points at the file) and mirrored as text edits (so the manifest records the
recipe as it ran)."""

from __future__ import annotations

from typing import Any

from curate.recipe.format import hint_known, known_keys


def override(root, text: str, spec: str, file: str, edits: list) -> list[str]:
    """Apply one `KEY.PATH=VALUE` to the composed recipe (new nodes keep the line of what they
    replace) and note the text edit that makes `Recipe.text` say the same."""
    import yaml

    dotted, eq, raw = spec.partition("=")
    segs = dotted.strip().split(".")
    head = f"{file}:{root.start_mark.line + 1}: --set {spec}"
    if not eq or not all(segs):
        return [f"{head}: expected KEY.PATH=VALUE; write e.g. --set run.inflight=8"]
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        return [f"{head}: the value is not YAML ({getattr(exc, 'problem', exc)}); quote it, "
                f"e.g. --set {dotted}='\"{raw}\"'"]
    parent, slot, node, trail = None, None, root, ()
    for i, seg in enumerate(segs):
        where, here = f"{file}:{node.start_mark.line + 1}: --set {spec}", ".".join(segs[:i]) or "the recipe"
        if isinstance(node, yaml.MappingNode):
            slot = next((j for j, (k, _) in enumerate(node.value) if getattr(k, "value", None) == seg), None)
            if slot is None:
                return _add(node, text, trail, segs[i:], value, where, here, edits)
            parent, node = node, node.value[slot][1]
            trail += (seg,)
        elif isinstance(node, yaml.SequenceNode):
            slot = _item(node, seg)
            if slot is None:
                return [f"{where}: {here} has no item {seg!r}; use an index from 0 to {len(node.value) - 1}"
                        + (" or a step id" if trail == ("steps",) else "")]
            parent, node = node, node.value[slot]
            trail += (slot,)
        else:
            return [f"{where}: {here} is a single value, so it has no {seg!r}; set {here}=VALUE instead"]
    new = _node_of(value, node)
    if isinstance(parent, yaml.MappingNode):
        parent.value[slot] = (parent.value[slot][0], new)
    elif parent is not None:
        parent.value[slot] = new
    edits.append((node.start_mark.index, node.end_mark.index, _flow(value)))
    return []


def _item(node, seg: str) -> int | None:
    """A list item by index, or a step by its id."""
    import yaml

    if seg.isdigit():
        return int(seg) if int(seg) < len(node.value) else None
    return next((j for j, n in enumerate(node.value) if isinstance(n, yaml.MappingNode) and any(
        getattr(k, "value", None) == "id" and getattr(v, "value", None) == seg for k, v in n.value)), None)


def _add(mapping, text: str, trail: tuple, rest: list[str], value: Any, where: str, here: str,
         edits: list) -> list[str]:
    """Add a missing key, if the format knows it there (a new mapping only through known keys)."""
    import yaml

    for j, seg in enumerate(rest):
        known = known_keys(trail + tuple(rest[:j]))
        if (known is None and j < len(rest) - 1) or (known is not None and seg not in known):
            names = known or ([getattr(k, "value", "") for k, _ in mapping.value] if j == 0 else [])
            at = ".".join([here, *rest[:j]]) if here != "the recipe" else ".".join(rest[:j]) or "the recipe"
            fix = hint_known(seg, names) if names else f"write {seg} under {at} in the recipe first"
            return [f"{where}: unknown path: {at} has no key {seg!r}; {fix}"]
    for seg in reversed(rest[1:]):
        value = {seg: value}
    key = yaml.ScalarNode("tag:yaml.org,2002:str", rest[0], mapping.start_mark, mapping.start_mark)
    edits.append(_insertion(mapping, text, f"{_flow(rest[0])}: {_flow(value)}"))
    mapping.value.append((key, _node_of(value, mapping)))
    return []


def _insertion(mapping, text: str, entry: str) -> tuple[int, int, str]:
    """The text edit that adds `entry` as the last key of a flow or block mapping."""
    if mapping.flow_style:
        close = mapping.end_mark.index - 1
        return close, close, (", " if mapping.value else "") + entry
    end = mapping.value[-1][1].end_mark.index
    if end == 0 or text[end - 1] != "\n":
        end = text.find("\n", end) + 1 or len(text)
    lead = "" if end == 0 or text[end - 1] == "\n" else "\n"
    return end, end, f"{lead}{' ' * mapping.value[0][0].start_mark.column}{entry}\n"


def _node_of(value: Any, at) -> Any:
    """A composed node for `value`, every part marked at the line of node `at`."""
    import yaml

    node = yaml.compose(_flow(value), Loader=yaml.SafeLoader)
    stack = [node]
    while stack:
        n = stack.pop()
        n.start_mark, n.end_mark = at.start_mark, at.end_mark
        if isinstance(n, yaml.MappingNode):
            stack += [x for pair in n.value for x in pair]
        elif isinstance(n, yaml.SequenceNode):
            stack += n.value
    return node


def _flow(value: Any) -> str:
    """One-line YAML for a value (dumped inside a list, so a scalar needs no document end)."""
    import yaml

    return yaml.safe_dump([value], default_flow_style=True, width=2**30).strip()[1:-1]


def _patched(text: str, edits: list[tuple[int, int, str]], data: dict) -> str:
    """The recipe text with the overrides written in (comments and layout kept); if the edits
    overlap or do not reproduce `data`, the data dumped as YAML instead."""
    import yaml

    if not edits:
        return text
    out, last = text, len(text) + 1
    for start, end, new in sorted(edits, reverse=True):
        if end > last:
            return yaml.safe_dump(data, sort_keys=False)
        out, last = out[:start] + new + out[end:], start
    try:
        return out if yaml.safe_load(out) == data else yaml.safe_dump(data, sort_keys=False)
    except yaml.YAMLError:
        return yaml.safe_dump(data, sort_keys=False)
