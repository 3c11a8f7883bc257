"""Public declarations: domains, stages, pools and the pipeline graph. Declaring runs nothing;
`curate.core.plan.compile_plan` checks the whole graph and reports every problem at once."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from curate import defaults
from curate.names import (
    LINEAGE_COLUMNS,
    MAX_EXT_PARTS,
    MAX_NAME,
    TEMPLATE_FIELDS,
    name_problem,
    plain_extension,
    suggest_name,
    template_problem,
)
from curate.resources import Resources

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller(skip: int = 0) -> str:
    """file:line of the first frame outside curate: where the user declared something.
    `skip` passes over frames that are not files (a dataclass's generated __init__)."""
    f = sys._getframe(1 + skip)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG_DIR + os.sep):
        f = f.f_back
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}" if f else "<unknown>"


class Domain:
    """A level of the hierarchy (`Doc = Domain("doc")`, `Page = Doc.child("page")`)."""

    def __init__(self, name: str, parent: Domain | None = None):
        self.name = name
        self.parent = parent

    def child(self, name: str) -> Domain:
        """Declare the domain one level below this one."""
        return Domain(name, self)

    @property
    def path(self) -> str:
        return self.name if self.parent is None else f"{self.parent.path}/{self.name}"

    def __repr__(self) -> str:
        return f"Domain({self.path!r})"


class Pool:
    """One physical worker pool that several Calls share: the class is built once per worker,
    each Call (`pool.stage("method")`) keeps its own queue, batch size, retries and time limit.

    `replicas` workers (default: one per GPU the cluster has for a GPU pool, else 1), each
    holding `resources` (a `cu.Resources`, or its fields as keywords: `num_gpus=1`,
    `memory=8e9`, ...; a dict is taken as Ray's custom resources). Without `resources`, the
    class's own `default_resources` (see `Resources.declared`) are the base the keywords change."""

    def __init__(self, cls: Any, init: dict | None = None, replicas: int | None = None, *,
                 name: str | None = None, resources: Resources | dict | None = None, where: str = "",
                 **resource_options):
        self.cls = cls
        self.init = dict(init or {}) if isinstance(init, dict) or init is None else init
        self.replicas = replicas
        self.name = name
        self.resources = Resources.of(Resources.declared(cls, self.init if isinstance(self.init, dict) else {}) if resources is None else resources,
                                      **resource_options)
        self.where = where or _caller()

    def stage(self, method: str = "__call__", *, batch_size: int = defaults.DEFAULT_BATCH_SIZE,
              retries: int = defaults.DEFAULT_RETRIES, timeout_s: float | None = None,
              name: str | None = None) -> Stage:
        """A Call on this pool that invokes `method(batch)` on the shared worker object."""
        return Stage(self.cls, init=self.init, batch_size=batch_size, retries=retries, timeout_s=timeout_s,
                     name=name, pool=self, method=method, where=_caller())

    def __repr__(self) -> str:
        return f"Pool({getattr(self.cls, '__name__', self.cls)!r}, replicas={self.replicas}, {self.resources})"


@dataclass(eq=False)
class Stage:
    """A configured batched function or class. Stage objects used twice share one pool."""

    fn: Any
    init: dict = field(default_factory=dict)
    batch_size: int = defaults.DEFAULT_BATCH_SIZE
    replicas: int | None = None  # None: one per GPU for a GPU stage, else DEFAULT_REPLICAS
    retries: int = defaults.DEFAULT_RETRIES
    resources: Resources = field(default_factory=Resources)
    name: str | None = None
    pool: Pool | None = None
    timeout_s: float | None = None  # an attempt on one batch past this is failed and its worker replaced
    method: str = "__call__"
    where: str = ""

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        base = getattr(self.fn, "__name__", type(self.fn).__name__)
        return base if self.method == "__call__" else f"{base}.{self.method}"


def stage(fn_or_class: Any, *, init: dict | None = None, batch_size: int = defaults.DEFAULT_BATCH_SIZE,
          replicas: int | None = None, retries: int = defaults.DEFAULT_RETRIES, name: str | None = None,
          timeout_s: float | None = None, resources: Resources | dict | None = None,
          **resource_options) -> Stage:
    """Configure a batched stage: `fn(batch: list) -> list`, or a class built once per worker
    with `cls(**init)` whose `__call__(batch)` does the same. `timeout_s` limits one attempt
    on one batch: past it the attempt fails (retried, then FAILED with cause kind `timeout`).
    Each of its `replicas` workers holds `resources`: a `cu.Resources`, or its fields as
    keywords (`num_cpus=0.25` (the default), `num_gpus=1`, `memory=`, `accelerator_type=`,
    `runtime_env=`; `resources={"accel": 1}` is Ray's custom resources). Without `resources`,
    the stage's own `default_resources` (see `Resources.declared`) are the base they change."""
    init = dict(init or {}) if isinstance(init, dict) or init is None else init
    base = Resources.declared(fn_or_class, init if isinstance(init, dict) else {}) if resources is None else resources
    return Stage(fn_or_class, init=init, batch_size=batch_size, replicas=replicas, retries=retries,
                 resources=Resources.of(base, **resource_options), name=name, where=_caller(),
                 timeout_s=timeout_s)


@dataclass(frozen=True)
class NodeDecl:
    """One declared operation. `inputs` are node indices of the same pipeline."""

    kind: str  # source | map | filter | expand | reduce | zip | broadcast
    inputs: tuple[int, ...]
    stage: Any = None
    into: Domain | None = None
    on_child_failure: str = "suppress"
    onto: int | None = None  # broadcast: the child port whose lineage the result takes
    where: str = ""


class Port:
    """The values of one node at every entity of its domain. Methods declare new nodes."""

    def __init__(self, pipeline: Pipeline, node: int, domain: Domain, lineage: tuple[int, ...]):
        self.pipeline = pipeline
        self.node = node
        self.domain = domain
        self.lineage = lineage  # expand nodes from the root down to this port's entities

    def _add(self, decl: NodeDecl, domain: Domain, lineage: tuple[int, ...]) -> Port:
        return self.pipeline._add(decl, domain, lineage)

    def expand(self, stage: Any, *, into: Domain) -> Port:
        """Each item becomes an ordered list of children in `into` (a child domain)."""
        decl = NodeDecl("expand", (self.node,), stage, into=into, where=_caller())
        node = len(self.pipeline.nodes)  # the expand node itself opens the children's lineage
        if not isinstance(into, Domain):
            self.pipeline._problems.append(f"{decl.where}: expand into={into!r}, which is not a Domain; "
                                           f"pass a domain declared with {self.domain.name}.child(...)")
            return self._add(NodeDecl("expand", (self.node,), stage, into=None, where=decl.where),
                             self.domain.child("?"), self.lineage + (node,))
        return self._add(decl, into, self.lineage + (node,))

    def map(self, stage: Any) -> Port:
        """One output per item, same domain."""
        return self._add(NodeDecl("map", (self.node,), stage, where=_caller()), self.domain, self.lineage)

    def filter(self, stage: Any) -> Port:
        """Keep items whose stage result is true (or `(True, _)`); others are DROPPED with a reason."""
        return self._add(NodeDecl("filter", (self.node,), stage, where=_caller()), self.domain, self.lineage)

    def reduce(self, stage: Any, *, on_child_failure: str = "suppress") -> Port:
        """Each parent gets one value from the ordered list of its PRESENT children.
        A FAILED/SUPPRESSED child SUPPRESSES the parent, or with `on_child_failure="drop"` is left out."""
        decl = NodeDecl("reduce", (self.node,), stage, on_child_failure=on_child_failure, where=_caller())
        parent = self.domain.parent or self.domain
        return self._add(decl, parent, self.lineage[:-1])

    def broadcast(self, onto: Port) -> Port:
        """Project this port's value onto every child entity of `onto`'s lineage."""
        decl = NodeDecl("broadcast", (self.node,), onto=onto.node, where=_caller())
        if onto.pipeline is not self.pipeline:
            self.pipeline._problems.append(f"{decl.where}: broadcast onto a port of another pipeline; "
                                           "both ports must come from one Pipeline")
            return self._add(NodeDecl("broadcast", (self.node,), where=decl.where), self.domain, self.lineage)
        return self._add(decl, onto.domain, onto.lineage)

    def __repr__(self) -> str:
        return f"Port(node={self.node}, domain={self.domain.path!r})"


def zip(*ports: Port) -> Port:  # noqa: A001 - the public name the design gives it
    """Combine aligned ports of one domain and lineage into tuples."""
    where = _caller()
    if not ports:
        raise TypeError("curate.zip() needs at least one port")
    pipe = ports[0].pipeline
    if any(p.pipeline is not pipe for p in ports[1:]):
        pipe._problems.append(f"{where}: zip of ports from different pipelines; "
                              "both ports must come from one Pipeline")
        ports = ports[:1]
    decl = NodeDecl("zip", tuple(p.node for p in ports), where=where)
    return pipe._add(decl, ports[0].domain, ports[0].lineage)


class Pipeline:
    """A dataflow over one hierarchy, rooted at `root`; `source` is the port of the inputs."""

    def __init__(self, root: Domain):
        self.root = root
        self.nodes: list[NodeDecl] = []
        self.ports: list[Port] = []  # ports[i] is the port of nodes[i]
        self.outputs: dict[str, int] = {}
        self.output_options: dict[str, dict] = {}
        self._problems: list[str] = []
        self.source = self._add(NodeDecl("source", (), where=_caller()), root, ())

    def _add(self, decl: NodeDecl, domain: Domain, lineage: tuple[int, ...]) -> Port:
        port = Port(self, len(self.nodes), domain, lineage)
        self.nodes.append(decl)
        self.ports.append(port)
        return port

    def output(self, name: str, port: Port, *, schema: dict | None = None,
               files: dict[str, str | dict] | None = None, where: str | None = None) -> None:
        """Name a port as an output of the run.

        For Parquet output (`run(..., output_dir=)`): `schema` maps payload columns to pyarrow
        types (or type names such as "string", "float64", "binary") instead of inferring them;
        `files` maps payload columns holding large bytes (or text) to a file extension: those
        are written as files under `<output>/_files/<column>/` and the column holds their
        relative path; `{"ext": ".md", "name": "{key}/{route}/{key}"}` names each file by a
        template (fields: name (the input's file stem), key (stem plus 8 hex, unique per input),
        ordinal, lineage, or a payload field) instead of a digest of the entity id.

        Payload files are written by the workers of the Call that made them when `port` is that
        Call's own value (a map, expand or reduce) and no other step or output reads it: the
        bytes never reach the writer on the driver's node (on Ray with a local directory, only
        workers on the driver's node do; the others leave them to the writer). When `port` is
        a filter, zip or broadcast, or a value another step also reads, the writer writes them
        from the bytes it is sent, as for every output before: map the port once more (a
        stage that returns its value) to have the workers write them.

        `name` is one plain path component (`out/<name>/`): a letter or digit, then letters,
        digits, '_', '-', '.', at most 100 characters. Files columns and schema columns are
        plain names of the same form, never a lineage column; an extension looks like '.jpg',
        'jpg' or '.tar.gz' and is stored with its leading dot. A bad one is a problem that
        `compile_plan` reports with the others."""
        where = where or _caller()  # a recipe passes FILE:LINE
        problems = _output_problems(where, name, schema, files)
        self._problems.extend(problems)
        if not isinstance(name, str):
            name = repr(name)  # reported above; kept so the output still counts as declared
        if port.pipeline is not self:
            self._problems.append(f"{where}: output {name!r} is a port of another pipeline; "
                                  "declare it from this pipeline's source")
            return
        if name in self.outputs:
            self._problems.append(f"{where}: output name {name!r} is used twice; give each output its own name")
            return
        self.outputs[name] = port.node
        self.output_options[name] = {"schema": dict(schema) if isinstance(schema, Mapping) else {},
                                     "files": _normal_files(files)}


_NAME_RULE = f"a letter or digit, then letters, digits, '_', '-' or '.'; at most {MAX_NAME} characters"


def _output_problems(where: str, name: Any, schema: Any, files: Any) -> list[str]:
    """Problems of an output's name, `files` and `schema`: each becomes a path or a column of
    the output directory, so each must be a plain name (see `curate.io.rows.name_problem`)."""
    out = []
    why = name_problem(name)
    if why is not None:
        out.append(f"{where}: output name {name!r} {why}; use a name such as {suggest_name(name, 'pages')!r} "
                   f"({_NAME_RULE}; the output is written to <output_dir>/<name>/)")
    label = f"{where}: output {name!r}"
    lineage = ", ".join(LINEAGE_COLUMNS)

    def column_problem(kind: str, col: Any, example: str) -> str | None:
        if isinstance(col, str) and col in LINEAGE_COLUMNS:
            return (f"{label}: {kind} column {col!r} is a lineage column of every row ({lineage}), not a payload "
                    f"field; rename the payload field, e.g. {'page_' + col!r}, and name that")
        why = name_problem(col)
        if why is not None:
            return (f"{label}: {kind} column {col!r} {why}; use the payload field's own name, such as "
                    f"{suggest_name(col, example)!r} ({_NAME_RULE})")
        return None

    if files is not None and not isinstance(files, Mapping):
        out.append(f"{label}: files={files!r} is not a dict; pass {{column: extension}}, "
                   "e.g. files={'image': '.jpg'}")
    for col, ext in files.items() if isinstance(files, Mapping) else ():
        p = column_problem("files", col, "image")
        if p is not None:
            out.append(p)
        if isinstance(ext, Mapping):
            ext = dict(ext)
            if set(ext) - {"ext", "name"} or "ext" not in ext:
                out.append(f"{label}: files {ext!r} of column {col!r} must be an extension or a mapping with "
                           "ext (and name), e.g. {'ext': '.md', 'name': '{key}/{route}/{key}'}")
            elif ext.get("name") is not None and template_problem(ext["name"]) is not None:
                out.append(f"{label}: files name template {ext['name']!r} of column {col!r} "
                           f"{template_problem(ext['name'])}; write '/'-separated plain names and "
                           f"{{placeholders}} ({', '.join(TEMPLATE_FIELDS)} or a payload field), "
                           "e.g. '{key}/{route}/{key}'")
            ext = ext.get("ext")
        if plain_extension(ext) is None:
            out.append(f"{label}: files extension {ext!r} of column {col!r} is not a plain file extension; "
                       "write it like '.jpg', 'jpg' or '.tar.gz' (letters and digits, 1-16 per part, "
                       f"at most {MAX_EXT_PARTS} parts separated by '.')")
    if schema is not None and not isinstance(schema, Mapping):
        out.append(f"{label}: schema={schema!r} is not a dict; pass {{column: type}}, "
                   "e.g. schema={'text': 'string'}")
    for col in schema if isinstance(schema, Mapping) else ():
        p = column_problem("schema", col, "text")
        if p is not None:
            out.append(p)
    return out


def _normal_files(files: Any) -> dict:
    """`files` with each extension written with its leading dot (bad ones are reported)."""
    if not isinstance(files, Mapping):
        return {}
    out = {}
    for col, spec in files.items():
        if isinstance(spec, Mapping):
            spec = dict(spec)
            spec["ext"] = plain_extension(spec.get("ext")) or spec.get("ext")
            out[col] = spec
        else:
            out[col] = plain_extension(spec) or spec
    return out
