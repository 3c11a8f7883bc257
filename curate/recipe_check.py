"""Check a parsed recipe and build its Pipeline, collecting every problem with its recipe line.

Nothing stops at the first problem: a step whose stage does not import, or whose parameter has
the wrong type, is built with a stand-in (and the default), so the rest of the recipe is still
checked and, when every step could be built, compiled. See `curate.recipe` for the format."""

from __future__ import annotations

import difflib
import importlib
import os
from dataclasses import dataclass, field, replace
from typing import Any

import curate as cu
from curate.errors import PlanError
from curate.recipe_params import (CHECKS, INPUT_KINDS, OP_KEYS, OPS, POOL_CALL_KEYS, POOL_KEYS,
                                  RUN_KEYS, STAGE_KEYS, TOP_KEYS, Lines, check_input, hint_known)

# The compiler's hints speak Python; a recipe author fixes the same things in YAML.
COMPILER_WORDING = (("pipe.output(name, port)", "outputs: {name: step_id}"),
                    ("pipe.output(...)", "an entry under outputs:"),
                    ("a port that comes from .expand(...)", "a step that comes from an expand step"))


@dataclass
class Checked:
    """What `check` found: the pipeline (None if it could not be built), the input spec
    (kind, value), the run options, and every problem, each starting with FILE:LINE:."""

    pipeline: cu.Pipeline | None
    input_spec: tuple[str, Any] | None
    run_options: dict
    problems: list[str]


@dataclass
class _Step:
    sid: str | None
    kind: str | None
    path: tuple
    deps: list[tuple[str, tuple]] = field(default_factory=list)  # (step id, path of the reference)
    stage: Any = None
    into: str | None = None
    on_child_failure: str = "suppress"

    @property
    def label(self) -> str:
        name = repr(self.sid) if self.sid else f"#{self.path[-1]}"
        return f"step {name}" + (f" ({self.kind})" if self.kind else "")


class _AnyMethod(type):
    """Metaclass of the stand-in for a class or function that did not import: it has every
    method, so the compiler checks the rest of the pipeline without repeating that problem."""

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda self, batch: batch


def _stand_in(name: str) -> type:
    return _AnyMethod(name or "unresolved", (), {"__init__": lambda self, **kw: None})


def check(data: dict, lines: Lines, base_dir: str) -> Checked:
    """Check every part of the recipe, then compile its pipeline if every step could be built."""
    c = _Checker(data, lines, base_dir)
    c.top_level()
    root, domains = c.domains()
    pools = c.pools()
    steps = [c.step(i, raw, pools) for i, raw in enumerate(c.seq("steps"))]
    order, ids = c.graph(steps)
    pipe, complete = c.build(root, domains, steps, order)
    complete = c.outputs(pipe, ids) and complete
    input_spec = check_input(data.get("input"), lines, base_dir, c.problems)
    run_options = c.params(("run",), c.mapping("run"), RUN_KEYS, "run")
    if pipe is not None and complete:
        c.compile(pipe)
    return Checked(pipe if complete else None, input_spec, run_options, c.problems)


class _Checker:
    def __init__(self, data: dict, lines: Lines, base_dir: str):
        self.data, self.lines, self.base_dir = data, lines, base_dir
        self.problems: list[str] = []
        self.tainted: set[str] = set()  # where of steps built on a stand-in domain
        self.ports: dict[str, cu.Port] = {}

    def bad(self, path: tuple, message: str, key: bool = False) -> None:
        self.problems.append(f"{self.lines.at(path, key)}: {message}")

    def mapping(self, name: str) -> dict:
        v = self.data.get(name)
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.bad((name,), f"{name}: must be a mapping (key: value, ...), not {type(v).__name__}; "
                              f"write it as {name}: {{...}}")
            return {}
        return v

    def seq(self, name: str) -> list:
        v = self.data.get(name)
        if v is None or isinstance(v, list):
            return v or []
        self.bad((name,), f"{name}: must be a list, not {type(v).__name__}; write one `- ...` entry per item")
        return []

    def top_level(self) -> None:
        for k in self.data:
            if k not in TOP_KEYS:
                self.bad((k,), f"unknown top-level key {k!r}; {hint_known(k, TOP_KEYS)}", key=True)
        name = self.data.get("name")
        if name is not None and not isinstance(name, str):
            self.bad(("name",), f"name: {name!r} must be text; write e.g. name: books")

    # ---- domains and pools ------------------------------------------------------------------
    def domains(self) -> tuple[cu.Domain | None, dict[str, cu.Domain]]:
        raw = self.mapping("domains")
        if not raw:
            self.bad(("domains",) if "domains" in self.data else (),
                     "no domains: declared; declare the levels, e.g. domains: {book: null, chapter: book}")
            return None, {}
        parents = {}
        for name, parent in raw.items():
            if not isinstance(name, str) or (parent is not None and not isinstance(parent, str)):
                self.bad(("domains", name), f"domain {name!r}: {parent!r} must be NAME: PARENT (text, or "
                                            "null for the root); write e.g. chapter: book")
            else:
                parents[name] = parent
        roots = [n for n, p in parents.items() if p is None]
        if not roots:
            self.bad(("domains",), "no root domain; give the top level null as its parent, e.g. book: null")
        elif len(roots) > 1:
            self.bad(("domains", roots[1]), f"several root domains ({', '.join(roots)}); a pipeline has one "
                                            f"root: give the others a parent, e.g. {roots[1]}: {roots[0]}")
        for n, p in parents.items():
            if p is not None and p not in parents:
                self.bad(("domains", n), f"domain {n!r} has parent {p!r}, which is not declared; "
                                         f"declare {p} under domains: or use one of {sorted(parents)}")
        self._domain_cycles(parents)
        return self._declare_domains(roots[0], parents) if roots else (None, {})

    def _domain_cycles(self, parents: dict[str, str | None]) -> None:
        reported: set[frozenset] = set()
        for start in parents:
            chain, n = [], start
            while n in parents and n not in chain:
                chain.append(n)
                n = parents[n]
            if n in chain and frozenset(chain[chain.index(n):]) not in reported:
                loop = chain[chain.index(n):]
                reported.add(frozenset(loop))
                self.bad(("domains", loop[0]), f"domains {' -> '.join(loop + [loop[0]])} are each other's "
                                               "parents; each chain of parents must end at the root (null)")

    def _declare_domains(self, root_name: str, parents: dict) -> tuple[cu.Domain, dict[str, cu.Domain]]:
        root = cu.Domain(root_name)
        doms, frontier = {root_name: root}, [root]
        while frontier:
            d = frontier.pop(0)
            for n, p in parents.items():
                if p == d.name and n not in doms:
                    doms[n] = d.child(n)
                    frontier.append(doms[n])
        return root, doms

    def pools(self) -> dict[str, cu.Pool]:
        out = {}
        for name, spec in self.mapping("pools").items():
            path = ("pools", name)
            if not isinstance(spec, dict):
                self.bad(path, f"pool {name!r} must be a mapping; write e.g. {name}: "
                               "{class: \"module:Class\", replicas: 2}")
                spec = {}
            self.unknown_keys(path, spec, POOL_KEYS, f"pool {name!r}")
            cls = None
            if "class" not in spec:
                self.bad(path, f"pool {name!r} has no class:; add class: \"module:Class\" (built once per worker)")
            else:
                cls = self.resolve(path + ("class",), spec["class"], f"pool {name!r}")
                if cls is not None and not isinstance(cls, type):
                    self.bad(path + ("class",), f"pool {name!r}: {spec['class']!r} is not a class; a pool "
                                                "shares one object built from a class: use stage: for a function")
                    cls = None
            params = self.params(path, spec, POOL_KEYS, f"pool {name!r}", skip=("class",))
            out[name] = cu.Pool(cls or _stand_in(str(spec.get("class"))), name=str(name),
                                where=self.lines.at(path), **params)
        return out

    # ---- steps ----------------------------------------------------------------------------
    def step(self, i: int, raw: Any, pools: dict[str, cu.Pool]) -> _Step:
        path = ("steps", i)
        if not isinstance(raw, dict):
            self.bad(path, f"step #{i} must be a mapping; write e.g. "
                           "- {id: NAME, map: {from: source, stage: \"module:function\"}}")
            return _Step(None, None, path)
        sid = raw.get("id")
        if not isinstance(sid, str) or not sid:
            self.bad(path, f"step #{i} has no id (text); add id: NAME, the name other steps and outputs use")
            sid = None
        elif sid == "source":
            self.bad(path + ("id",), "step id 'source' is reserved for the pipeline's inputs; rename the step")
        ops = [k for k in raw if k in OPS]
        s = _Step(sid, ops[0] if len(ops) == 1 else None, path)
        self.unknown_keys(path, raw, ("id",) + OPS, s.label)
        if len(ops) != 1:
            what = f"several operations ({', '.join(ops)})" if ops else "no operation"
            self.bad(path, f"{s.label} has {what}; give exactly one of {', '.join(OPS)}")
            return s
        body, bpath = raw[s.kind], path + (s.kind,)
        if s.kind == "zip":
            return self._zip(s, body, bpath)
        if not isinstance(body, dict):
            self.bad(bpath, f"{s.label}: {s.kind}: must be a mapping; write e.g. {s.kind}: {{from: source, ...}}")
            s.kind = None
            return s
        for ref in ("from", "onto") if s.kind == "broadcast" else ("from",):
            self._ref(s, body, bpath, ref)
        if s.kind == "broadcast":
            self.unknown_keys(bpath, body, OP_KEYS["broadcast"], s.label)
            return s
        self._stage_step(s, body, bpath, pools)
        return s

    def _zip(self, s: _Step, body: Any, bpath: tuple) -> _Step:
        if not isinstance(body, list) or not body or not all(isinstance(r, str) for r in body):
            self.bad(bpath, f"{s.label}: zip: must be a list of step ids; write e.g. zip: [titles, chapters]")
            s.kind = None
        else:
            s.deps = [(r, bpath + (j,)) for j, r in enumerate(body)]
        return s

    def _ref(self, s: _Step, body: dict, bpath: tuple, ref: str) -> None:
        v = body.get(ref)
        if isinstance(v, str) and v:
            s.deps.append((v, bpath + (ref,)))
            return
        self.bad(bpath + (ref,) if ref in body else bpath,
                 f"{s.label}: {'missing ' + ref + ':' if v is None else ref + ': ' + repr(v) + ' is not a step id'}; "
                 f"name the step it reads, e.g. {ref}: source")
        s.kind = None

    def _stage_step(self, s: _Step, body: dict, bpath: tuple, pools: dict[str, cu.Pool]) -> None:
        kind = s.kind
        by_pool = "pool" in body and "stage" not in body
        self.unknown_keys(bpath, body, OP_KEYS[kind] + (POOL_CALL_KEYS if by_pool else STAGE_KEYS), s.label,
                          pool=body.get("pool") if by_pool else None)
        if kind == "expand":
            s.into = body.get("into")
            if not isinstance(s.into, str):
                self.bad(bpath, f"{s.label}: {'missing into:' if s.into is None else 'into: must be a domain name'}; "
                                "name the child domain the items expand into, e.g. into: chapter")
                s.into = None
        if kind == "reduce":
            p = self.params(bpath, body, ("on_child_failure",), s.label)
            s.on_child_failure = p.get("on_child_failure", "suppress")
        if "stage" in body and "pool" in body:
            self.bad(bpath, f"{s.label} has both stage: and pool:; keep stage: for its own workers, "
                            "or pool: to share a declared pool's workers")
        if by_pool:
            s.stage = self._pool_stage(s, body, bpath, pools)
        elif "stage" in body:
            target = self.resolve(bpath + ("stage",), body["stage"], s.label)
            params = self.params(bpath, body, STAGE_KEYS, s.label, skip=("stage",))
            s.stage = cu.stage(target or _stand_in(str(body["stage"]).rpartition(":")[2]), **params)
        else:
            self.bad(bpath, f"{s.label}: missing stage:; give stage: \"module:function\" (or \"module:Class\"), "
                            "or pool: NAME to use a pool declared under pools:")
            s.stage = cu.stage(_stand_in("missing"))
        s.stage.where = self.lines.at(s.path)

    def _pool_stage(self, s: _Step, body: dict, bpath: tuple, pools: dict[str, cu.Pool]) -> cu.Stage:
        name = body["pool"]
        params = self.params(bpath, body, POOL_CALL_KEYS, s.label, skip=("pool",))
        if name not in pools:
            self.bad(bpath + ("pool",), f"{s.label}: unknown pool name {name!r}; "
                                        f"{hint_known(name, list(pools), 'declare it under pools:')}")
            params.pop("method", None)
            return cu.stage(_stand_in(str(name)), **params)
        return pools[name].stage(**params)

    def unknown_keys(self, path: tuple, spec: dict, known, label: str, pool: Any = None) -> None:
        for k in spec:
            if k in known:
                continue
            if pool is not None and k in STAGE_KEYS:
                self.bad(path + (k,), f"{label}: {k} is a setting of pool {pool!r}'s workers, not of a step "
                                      f"that uses it; set it under pools: {pool}: {k}: ...", key=True)
            else:
                self.bad(path + (k,), f"{label}: unknown key {k!r}; {hint_known(k, known)}", key=True)

    def params(self, path: tuple, spec: dict, names, label: str, skip=()) -> dict:
        """The valid values among `names` in `spec`; each bad one is reported (and left out, so
        its default stands in while the rest of the recipe is checked)."""
        out = {}
        for name in names:
            if name not in spec or name in skip:
                continue
            ok, what, example = CHECKS[name]
            v = spec[name]
            if ok(v):
                out[name] = v
            else:
                self.bad(path + (name,), f"{label}: {name} is {v!r}, not {what}; write e.g. {example}")
        return out

    def resolve(self, path: tuple, spec: Any, label: str) -> Any:
        """Import `module:attribute`, or report why not (naming the module and the attribute)."""
        if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
            self.bad(path, f"{label}: {spec!r} is not an import path; write module:attribute, "
                           "e.g. stage: \"books:split_chapters\"")
            return None
        mod_name, attr = spec.split(":")
        try:
            obj = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name and (mod_name == exc.name or mod_name.startswith(exc.name + ".")):
                self.bad(path, f"{label}: {spec!r}: module {mod_name!r} is not found (looking for "
                               f"attribute {attr!r}); put {mod_name.replace('.', '/')}.py next to the "
                               "recipe or in the working directory, or install the package that has it")
            else:
                self.bad(path, f"{label}: {spec!r}: importing module {mod_name!r} failed: {exc}; "
                               f"install {exc.name!r} where the recipe runs")
            return None
        except Exception as exc:  # the module itself is broken: say so, with its error
            self.bad(path, f"{label}: {spec!r}: importing module {mod_name!r} raised "
                           f"{type(exc).__name__}: {exc}; fix that module")
            return None
        for part in attr.split("."):
            if not hasattr(obj, part):
                names = [n for n in dir(obj) if not n.startswith("_")]
                self.bad(path, f"{label}: {spec!r}: module {mod_name!r} has no attribute {attr!r}; "
                               f"{hint_known(part, names, f'define {part} in {mod_name}')}")
                return None
            obj = getattr(obj, part)
        return obj

    # ---- the graph --------------------------------------------------------------------------
    def graph(self, steps: list[_Step]) -> tuple[list[_Step], dict[str, _Step]]:
        """Steps in an order where each comes after the steps it reads (file order otherwise)."""
        ids: dict[str, _Step] = {}
        for s in steps:
            if s.sid in ids:
                first = self.lines.line(ids[s.sid].path)
                self.bad(s.path + ("id",), f"step id {s.sid!r} is used twice (first on line {first}); "
                                           "give each step its own id")
                s.kind = None
            elif s.sid:
                ids[s.sid] = s
        for s in steps:
            for dep, where in s.deps:
                if dep != "source" and dep not in ids:
                    self.bad(where, f"{s.label}: unknown step id {dep!r}; "
                                    f"{hint_known(dep, ['source', *ids], 'use source or a step id')}")
        done, order, pending = {"source"}, [], [s for s in steps if s.sid and s.sid in ids and ids[s.sid] is s]
        progress = True
        while progress:
            ready = [s for s in pending if all(d in done for d, _ in s.deps)]
            progress = bool(ready)
            for s in ready:
                order.append(s)
                done.add(s.sid)
                pending.remove(s)
        self._step_cycles(pending)
        return order, ids

    def _step_cycles(self, pending: list[_Step]) -> None:
        left = {s.sid: s for s in pending}
        state: dict[str, int] = {}  # 1: on the current path, 2: finished
        reported: set[frozenset] = set()

        def visit(sid: str, trail: list[str]) -> None:
            state[sid] = 1
            for dep, _ in left[sid].deps:
                if state.get(dep) == 1:
                    loop = trail[trail.index(dep):] + [sid] if dep in trail else [sid]
                    if frozenset(loop) not in reported:
                        reported.add(frozenset(loop))
                        self.bad(left[loop[0]].path, f"steps {' -> '.join([*loop, loop[0]])} read each other "
                                                     "in a cycle; a step can only read steps that do not read it")
                elif dep in left and dep not in state:
                    visit(dep, trail + [sid])
            state[sid] = 2

        for s in pending:
            if s.sid not in state:
                visit(s.sid, [])

    def build(self, root, domains, steps, order) -> tuple[cu.Pipeline | None, bool]:
        """Declare the steps on a Pipeline; True when every step could be declared."""
        if root is None:
            for s in order:
                if s.kind == "expand":
                    self._into(s, None, domains)
            return None, False
        pipe = cu.Pipeline(root)
        self._locate(pipe, pipe.source, ("input",))
        self.ports = {"source": pipe.source}
        for s in order:
            ins = [self.ports.get(d) for d, _ in s.deps]
            if s.kind is None or None in ins:
                continue
            port = self._declare(s, ins, domains)
            self._locate(pipe, port, s.path)
            self.ports[s.sid] = port
            if s.kind == "expand" and port.domain is not domains.get(s.into) or any(
                    pipe.nodes[p.node].where in self.tainted for p in ins):
                self.tainted.add(self.lines.at(s.path))
        return pipe, len(self.ports) == len(steps) + 1

    def _declare(self, s: _Step, ins: list[cu.Port], domains: dict) -> cu.Port:
        if s.kind == "zip":
            return cu.zip(*ins)
        if s.kind == "broadcast":
            return ins[0].broadcast(onto=ins[1])
        if s.kind == "expand":
            return ins[0].expand(s.stage, into=self._into(s, ins[0].domain, domains))
        if s.kind == "reduce":
            return ins[0].reduce(s.stage, on_child_failure=s.on_child_failure)
        return getattr(ins[0], s.kind)(s.stage)  # map, filter

    def _into(self, s: _Step, src: cu.Domain | None, domains: dict) -> cu.Domain | None:
        """The declared domain `into:` names if it is a child of `src`; else report it and
        return a stand-in child of `src`, so the steps below are still checked."""
        name, path = s.into, s.path + (s.kind, "into")
        declared = self.mapping("domains")
        below = [n for n, d in domains.items() if src is not None and d.parent is not None
                 and d.parent.name == src.name]
        if name is None:
            pass
        elif name not in declared:
            self.bad(path, f"{s.label}: into: {name!r} is not a declared domain; "
                           f"{hint_known(name, below or list(declared), f'declare it under domains: ({name}: ...)')}")
        elif src is not None and name in domains and domains[name].parent is src:
            return domains[name]
        elif src is not None and name in domains and domains[name].parent.name != src.name:
            fix = f"expand into {' or '.join(below)}" if below else f"declare a child of {src.name} under domains:"
            self.bad(path, f"{s.label}: into: {name!r} is not a child of {src.name!r}, the domain the step "
                           f"reads; {fix}, or expand from a {domains[name].parent.name!r} step")
        return src.child(name or "?") if src is not None else None

    def _locate(self, pipe: cu.Pipeline, port: cu.Port, path: tuple) -> None:
        pipe.nodes[port.node] = replace(pipe.nodes[port.node], where=self.lines.at(path))

    def outputs(self, pipe: cu.Pipeline | None, ids: dict) -> bool:
        raw = self.mapping("outputs")
        if not raw:
            self.bad(("outputs",) if "outputs" in self.data else (),
                     "no outputs; name the steps whose values the run keeps, e.g. outputs: {books: final_step_id}")
            return False
        ok = True
        for name, ref in raw.items():
            if not isinstance(ref, str) or (ref != "source" and ref not in ids):
                self.bad(("outputs", name), f"output {name!r}: unknown step id {ref!r}; "
                                            f"{hint_known(str(ref), ['source', *ids], 'use a step id')}")
                ok = False
            elif pipe is not None and ref in self.ports:
                pipe.output(str(name), self.ports[ref])
            else:
                ok = False
        return ok

    def compile(self, pipe: cu.Pipeline) -> None:
        """The compiler's own checks, reported at the recipe lines of the steps (`where`)."""
        try:
            cu.compile_plan(pipe)
        except PlanError as exc:
            for p in exc.problems:
                if p.split(": ", 1)[0] in self.tainted:
                    continue  # a consequence of a stand-in domain already reported
                for python, yaml_words in COMPILER_WORDING:
                    p = p.replace(python, yaml_words)
                self.problems.append(p if p.startswith(self.lines.file + ":") else f"{self.lines.at(('steps',))}: {p}")
