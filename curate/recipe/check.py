"""Check a parsed recipe and build its Pipeline, collecting every problem with its recipe line.

Nothing stops at the first problem: a step whose stage does not import, or whose parameter has
the wrong type, is declared with a stand-in (or the default), so the rest of the recipe is still
checked and, once every step could be declared, compiled. The format is in `curate.recipe`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import curate as cu
from curate.errors import PlanError, Problem
from curate.names import name_problem, suggest_name
from curate.recipe.format import (
    CHECKS,
    OP_KEYS,
    OPS,
    OUTPUT_KEYS,
    POOL_CALL_KEYS,
    POOL_KEYS,
    RUN_KEYS,
    STAGE_KEYS,
    TOP_KEYS,
    find_loops,
    hint_known,
    import_path,
)
from curate.recipe.rerun_section import entry_problems
from curate.recipe.stand_in import stand_in


@dataclass
class Checked:
    """What `check` found: the pipeline (None unless every step and output could be declared),
    the run options, and every problem, each starting with FILE:LINE:."""

    pipeline: cu.Pipeline | None
    run_options: dict
    problems: list[str]
    dedup: tuple[dict, ...] = ()  # `dedup:` entries, each checked: run after the job


@dataclass
class _Step:
    sid: str | None
    kind: str | None  # None: the step is broken (already reported) and is not declared
    path: tuple
    deps: list[tuple[str, tuple]] = field(default_factory=list)  # (step id, path of the reference)
    stage: Any = None
    into: str | None = None
    on_child_failure: str = "suppress"

    @property
    def label(self) -> str:
        return f"step {self.sid!r}" if self.sid else f"step #{self.path[-1]}"


def check(data: dict, lines) -> Checked:
    """Check every part of the recipe but its input, then compile the pipeline if every step
    could be declared. `lines.at(path, key=False)` gives the FILE:LINE of a path into `data`."""
    c = _Checker(data, lines)
    for k in data:
        if k not in TOP_KEYS:
            c.bad((k,), f"unknown top-level key {k!r}; {hint_known(k, TOP_KEYS)}", key=True)
    c.params((), data, ("name", "description", "extensions"), "the recipe")
    root, domains = c.domains()
    pools = c.pools()
    steps = [c.step(i, raw, pools) for i, raw in enumerate(c.section("steps", list))]
    order, ids = c.graph(steps)
    pipe = c.build(root, domains, order)
    complete = pipe is not None and len(c.ports) == len(steps) + 1
    complete = c.outputs(pipe, ids) and complete
    run = c.section("run", dict)
    c.unknown_keys(("run",), run, RUN_KEYS, "run")
    run_options = c.params(("run",), run, RUN_KEYS, "run")
    dedup = c.dedup()
    c.problems += entry_problems(data.get("rerun"), lines.at)
    if complete:
        c.compile(pipe)
    return Checked(pipe if complete else None, run_options, c.problems, dedup)


class _Checker:
    def __init__(self, data: dict, lines):
        self.data, self.lines = data, lines
        self.problems: list[str] = []
        self.tainted: set[str] = set()  # where of steps declared on a stand-in domain
        self.ports: dict[str, cu.Port] = {}
        self.declared: list[str] = []  # domain names, as written

    def bad(self, path: tuple, message: str, key: bool = False) -> None:
        self.problems.append(f"{self.lines.at(path, key)}: {message}")

    def section(self, name: str, kind: type) -> Any:
        v = self.data.get(name)
        if v is None:
            return kind()
        if not isinstance(v, kind):
            form = "a mapping (key: value, ...)" if kind is dict else "a list (one `- ...` per item)"
            self.bad((name,), f"{name}: must be {form}, not {type(v).__name__}; rewrite it as {form}")
            return kind()
        return v

    def params(self, path: tuple, spec: dict, names, label: str, skip=()) -> dict:
        """The valid values among `names` in `spec`; each bad one is reported and left out,
        so its default stands in while the rest of the recipe is checked."""
        out = {}
        for name in names:
            if name in spec and name not in skip:
                ok, what, example = CHECKS[name]
                if ok(spec[name]):
                    out[name] = spec[name]
                else:
                    self.bad(path + (name,), f"{label}: {name} is {spec[name]!r}, not {what}; write e.g. {example}")
        return out

    def unknown_keys(self, path: tuple, spec: dict, known, label: str, pool: Any = None) -> None:
        for k in spec:
            if k in known:
                continue
            if pool is not None and k in STAGE_KEYS:
                self.bad(path + (k,), f"{label}: {k} is a setting of the pool {pool!r}, not of a step "
                                      f"that uses it; set it under pools: {pool}: {k}: ...", key=True)
            else:
                self.bad(path + (k,), f"{label}: unknown key {k!r}; {hint_known(k, known)}", key=True)

    def resolve(self, path: tuple, spec: Any, label: str) -> Any:
        obj, why = import_path(spec)
        if why:
            self.bad(path, f"{label}: {why}")
        return obj

    # ---- domains and pools ------------------------------------------------------------------
    def domains(self) -> tuple[cu.Domain | None, dict[str, cu.Domain]]:
        raw = self.section("domains", dict)
        if not raw:
            self.bad(("domains",), "no domains declared; declare the levels, e.g. "
                                   "domains: {book: null, chapter: book}")
        parents, self.declared = {}, [str(n) for n in raw]
        for name, parent in raw.items():
            if isinstance(name, str) and (parent is None or isinstance(parent, str)):
                parents[name] = parent
            else:
                self.bad(("domains", name), f"domain {name!r}: {parent!r} must be NAME: PARENT (text, or "
                                            "null for the root); write e.g. chapter: book")
        roots = [n for n, p in parents.items() if p is None]
        if parents and not roots:
            self.bad(("domains",), "no root domain; give the top level null as its parent, e.g. book: null")
        if len(roots) > 1:
            self.bad(("domains", roots[1]), f"several root domains ({', '.join(roots)}); a pipeline has one "
                                            f"root: give the others a parent, e.g. {roots[1]}: {roots[0]}")
        for n, p in parents.items():
            if p is not None and p not in parents:
                self.bad(("domains", n), f"domain {n!r} has parent {p!r}, which is not declared; "
                                         f"{hint_known(p, parents, f'declare {p} under domains:')}")
        for loop in find_loops({n: [p] for n, p in parents.items() if p is not None}):
            self.bad(("domains", loop[0]), f"domains {' -> '.join([*loop, loop[0]])} are each other's "
                                           "parents; every chain of parents must end at the root (null)")
        if not roots:
            return None, {}
        doms = {roots[0]: cu.Domain(roots[0])}
        frontier = [roots[0]]
        while frontier:
            d = frontier.pop(0)
            for n in (n for n, p in parents.items() if p == d and n not in doms):
                doms[n] = doms[d].child(n)
                frontier.append(n)
        return doms[roots[0]], doms

    def pools(self) -> dict[str, cu.Pool]:
        out = {}
        for name, spec in self.section("pools", dict).items():
            path, label = ("pools", name), f"pool {name!r}"
            if not isinstance(spec, dict):
                self.bad(path, f"{label} must be a mapping; write e.g. {name}: {{class: \"module:Class\"}}")
                spec = {}
            self.unknown_keys(path, spec, POOL_KEYS, label)
            cls = None
            if "class" not in spec:
                self.bad(path, f"{label} has no class; add class: \"module:Class\" (built once per worker)")
            else:
                cls = self.resolve(path + ("class",), spec["class"], label)
                if cls is not None and not isinstance(cls, type):
                    self.bad(path + ("class",), f"{label}: {spec['class']!r} is not a class; a pool shares "
                                                "one object built from a class: use stage: for a function")
                    cls = None
            params = self.params(path, spec, POOL_KEYS, label, skip=("class",))
            out[name] = cu.Pool(cls or stand_in(str(spec.get("class"))), name=str(name),
                                where=self.lines.at(path), **params)
        return out

    # ---- steps ----------------------------------------------------------------------------
    def step(self, i: int, raw: Any, pools: dict[str, cu.Pool]) -> _Step:
        path = ("steps", i)
        if not isinstance(raw, dict):
            self.bad(path, f"step #{i} must be a mapping; write e.g. "
                           "- {id: NAME, map: {from: source, stage: \"module:function\"}}")
            return _Step(None, None, path)
        s = _Step(raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None, None, path)
        if s.sid is None:
            self.bad(path, f"step #{i} has no id; add id: NAME, the name other steps and outputs use")
        elif s.sid == "source":
            self.bad(path + ("id",), "step id 'source' is reserved for the pipeline's inputs; rename the step")
        self.unknown_keys(path, raw, ("id", *OPS), s.label)
        ops = [k for k in raw if k in OPS]
        if len(ops) != 1:
            what = f"several operations ({', '.join(ops)})" if ops else "no operation"
            self.bad(path, f"{s.label} has {what}; give exactly one of {', '.join(OPS)}")
            return s
        kind, body, bpath = ops[0], raw[ops[0]], path + (ops[0],)
        if kind == "zip":
            if isinstance(body, list) and body and all(isinstance(r, str) for r in body):
                s.kind, s.deps = kind, [(r, bpath + (j,)) for j, r in enumerate(body)]
            else:
                self.bad(bpath, f"{s.label}: zip must be a list of step ids; write e.g. zip: [titles, chapters]")
            return s
        if not isinstance(body, dict):
            self.bad(bpath, f"{s.label}: {kind} must be a mapping; write e.g. {kind}: {{from: source, ...}}")
            return s
        refs = [self._ref(s, body, bpath, r) for r in (("from", "onto") if kind == "broadcast" else ("from",))]
        if kind == "broadcast":
            self.unknown_keys(bpath, body, OP_KEYS[kind], s.label)
        else:
            self._stage_step(s, kind, body, bpath, pools)
        s.kind = kind if all(refs) else None
        return s

    def _ref(self, s: _Step, body: dict, bpath: tuple, ref: str) -> bool:
        v = body.get(ref)
        if isinstance(v, str) and v:
            s.deps.append((v, bpath + (ref,)))
            return True
        what = f"missing {ref}:" if v is None else f"{ref}: {v!r} is not a step id"
        self.bad(bpath + (ref,), f"{s.label}: {what}; name the step it reads, e.g. {ref}: source")
        return False

    def _stage_step(self, s: _Step, kind: str, body: dict, bpath: tuple, pools: dict) -> None:
        by_pool = "pool" in body and "stage" not in body
        self.unknown_keys(bpath, body, OP_KEYS[kind] + (POOL_CALL_KEYS if by_pool else (*STAGE_KEYS, "pool")), s.label,
                          pool=body.get("pool") if by_pool else None)
        if kind == "expand":
            s.into = body.get("into") if isinstance(body.get("into"), str) else None
            if s.into is None:
                what = "missing into:" if "into" not in body else f"into: {body['into']!r} is not a domain name"
                self.bad(bpath + ("into",), f"{s.label}: {what}; name the child domain the items expand "
                                            "into, e.g. into: chapter")
        if kind == "reduce":
            s.on_child_failure = self.params(bpath, body, ("on_child_failure",), s.label).get(
                "on_child_failure", "suppress")
        if "stage" in body and "pool" in body:
            self.bad(bpath, f"{s.label} has both stage: and pool:; keep stage: for its own workers, "
                            "or pool: to share a declared pool's workers")
        if by_pool:
            params = self.params(bpath, body, POOL_CALL_KEYS, s.label, skip=("pool",))
            name = body["pool"]
            if name in pools:
                s.stage = pools[name].stage(**params)
            else:
                self.bad(bpath + ("pool",), f"{s.label}: unknown pool name {name!r}; "
                                            f"{hint_known(name, pools, 'declare it under pools:')}")
                params.pop("method", None)
                s.stage = cu.stage(stand_in(str(name)), **params)
        elif "stage" in body:
            target = self.resolve(bpath + ("stage",), body["stage"], s.label)
            params = self.params(bpath, body, STAGE_KEYS, s.label, skip=("stage",))
            s.stage = cu.stage(target or stand_in(str(body["stage"]).rpartition(":")[2]), **params)
        else:
            self.bad(bpath, f"{s.label}: missing stage:; give stage: \"module:function\" (or \"module:Class\"), "
                            "or pool: NAME to use a pool declared under pools:")
            s.stage = cu.stage(stand_in("missing"))
        s.stage.where = self.lines.at(s.path)

    # ---- the graph --------------------------------------------------------------------------
    def graph(self, steps: list[_Step]) -> tuple[list[_Step], dict[str, _Step]]:
        """Steps ordered so that each comes after the steps it reads (file order otherwise)."""
        ids: dict[str, _Step] = {}
        for s in steps:
            if s.sid in ids:
                self.bad(s.path + ("id",), f"step id {s.sid!r} is used twice (first on line "
                                           f"{self.lines.line(ids[s.sid].path)}); give each step its own id")
                s.kind = None
            elif s.sid:
                ids[s.sid] = s
        for s in steps:
            for dep, where in s.deps:
                if dep != "source" and dep not in ids:
                    self.bad(where, f"{s.label}: unknown step id {dep!r}; "
                                    f"{hint_known(dep, ['source', *ids], 'use source or a step id')}")
        done, order, pending = {"source"}, [], list(ids.values())
        while ready := [s for s in pending if all(d in done for d, _ in s.deps)]:
            for s in ready:
                order.append(s)
                done.add(s.sid)
                pending.remove(s)
        for loop in find_loops({s.sid: [d for d, _ in s.deps] for s in pending}):
            self.bad(ids[loop[0]].path, f"steps {' -> '.join([*loop, loop[0]])} read each other in a cycle; "
                                        "a step can only read steps that do not read it back")
        return order, ids

    def build(self, root: cu.Domain | None, domains: dict, order: list[_Step]) -> cu.Pipeline | None:
        """Declare the steps on a Pipeline, each node located at its step's recipe line."""
        if root is None:  # the domains are broken (reported): nothing to declare on
            return None
        pipe = cu.Pipeline(root)
        self._locate(pipe, pipe.source, ("input",))
        self.ports = {"source": pipe.source}
        for s in order:
            ins = [self.ports.get(d) for d, _ in s.deps]
            if s.kind is None or None in ins:
                continue
            quiet = any(pipe.nodes[p.node].where in self.tainted for p in ins)
            port = self._declare(s, ins, domains, quiet)
            self._locate(pipe, port, s.path)
            self.ports[s.sid] = port
            stand_in = s.kind == "expand" and port.domain is not domains.get(s.into)
            if stand_in or quiet:
                self.tainted.add(self.lines.at(s.path))
        return pipe

    def _declare(self, s: _Step, ins: list[cu.Port], domains: dict, quiet: bool) -> cu.Port:
        if s.kind == "zip":
            return cu.zip(*ins)
        if s.kind == "broadcast":
            return ins[0].broadcast(onto=ins[1])
        if s.kind == "expand":
            return ins[0].expand(s.stage, into=self._into(s, ins[0].domain, domains, quiet))
        if s.kind == "reduce":
            return ins[0].reduce(s.stage, on_child_failure=s.on_child_failure)
        return getattr(ins[0], s.kind)(s.stage)  # map, filter

    def _into(self, s: _Step, src: cu.Domain | None, domains: dict, quiet: bool) -> cu.Domain | None:
        """The declared domain `into:` names if it is a child of `src`; else (reported, unless a
        problem above already explains it: `quiet` when `src` is itself a stand-in) a stand-in
        child of `src`, so later steps are checked."""
        name, path = s.into, s.path + ("expand", "into")
        below = [n for n, d in domains.items() if src and d.parent and d.parent.name == src.name]
        parent = domains[name].parent if name in domains else None
        if name is not None and name not in self.declared:
            self.bad(path, f"{s.label}: into: {name!r} is not a declared domain; "
                           f"{hint_known(name, below or self.declared, f'declare it under domains: ({name}: ...)')}")
        elif src is not None and name in domains and parent is src:
            return domains[name]
        elif src is not None and name in domains and not quiet and (parent is None or parent.name != src.name):
            fix = f"expand into {' or '.join(below)}" if below else f"declare a child of {src.name} under domains:"
            origin = f"expand from a {parent.name!r} step" if parent else "no step expands into the root"
            self.bad(path, f"{s.label}: into: {name!r} is not a child of {src.name!r}, the domain the step "
                           f"reads; {fix} ({origin})")
        return src.child(name or "?") if src is not None else None

    def _locate(self, pipe: cu.Pipeline, port: cu.Port, path: tuple) -> None:
        pipe.nodes[port.node] = replace(pipe.nodes[port.node], where=self.lines.at(path))

    def outputs(self, pipe: cu.Pipeline | None, ids: dict) -> bool:
        raw = self.section("outputs", dict)
        if not raw:
            self.bad(("outputs",), "no outputs; name the steps whose values the run keeps, "
                                   "e.g. outputs: {books: final_step_id}")
        for i, (name, ref) in enumerate(raw.items()):
            why = name_problem(name)
            if why is not None:  # declared under a stand-in name, so the rest is still compiled
                self.bad(("outputs", name), f"output name {name!r} {why}; use a name such as "
                                            f"{suggest_name(name, 'pages')!r} (it becomes the directory "
                                            "<output_dir>/<name>/)", key=True)
            options = {}
            if isinstance(ref, dict):  # {step: ID, schema: {...}, files: {...}}
                self.unknown_keys(("outputs", name), ref, OUTPUT_KEYS, f"output {name!r}")
                options = {k: ref[k] for k in ("schema", "files") if k in ref}
                ref = ref.get("step")
            if not isinstance(ref, str) or (ref != "source" and ref not in ids):
                self.bad(("outputs", name), f"output {name!r}: unknown step id {ref!r}; "
                                            f"{hint_known(ref, ['source', *ids], 'use a step id')}")
            elif pipe is not None and ref in self.ports:
                pipe.output(str(name) if why is None else f"invalid{i}", self.ports[ref],
                            where=self.lines.at(("outputs", name)), **options)
        return bool(raw) and pipe is not None and len(pipe.outputs) == len(raw)

    def dedup(self) -> tuple[dict, ...]:
        """`dedup:`: a list of `curate.dedup.dedup` options, each naming one of the outputs."""
        from curate.dedup.options import check_entry

        outputs = self.data.get("outputs") if isinstance(self.data.get("outputs"), dict) else None
        entries = self.section("dedup", list)
        for i, entry in enumerate(entries):
            for sub, message in check_entry(entry, outputs):
                self.bad(("dedup", i, *sub), message, key=bool(sub))
        return tuple(e for e in entries if isinstance(e, dict))

    def compile(self, pipe: cu.Pipeline) -> None:
        """The compiler's own checks, reported at the recipe lines of the steps (their `where`)."""
        try:
            cu.compile_plan(pipe)
        except PlanError as exc:
            for p in exc.problems:
                if p.split(": ", 1)[0] in self.tainted:
                    continue  # a consequence of a stand-in domain, whose cause is reported
                if isinstance(p, Problem):  # the compiler's fix in recipe terms, where it differs
                    p = p.for_recipe()
                self.problems.append(p if p.startswith(self.lines.file + ":") else f"{self.lines.at(())}: {p}")
