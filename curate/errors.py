"""Errors typed by who must act, and the picklable `Cause` that travels with a failed item.

- `PlanError`: the pipeline declaration is wrong; raised before anything runs, listing every problem.
- `UserCodeError`: a stage raised; the item is retried, then FAILED with this cause.
- `InputError`: a stage says its input is bad (encrypted PDF, truncated video); not retried.
- `TransientError`: a stage says the failure may pass (a flaky mount); retried like any exception.
- `WorkerDied`: the process running a batch went away; the batch is retried.
- `StageSetupError`: a stage's class could not be built (missing weights): its items FAIL, unretried.
- `RootKeyError`: `key=` gave no usable stable key for an input (None, a duplicate, it raised).
- `EngineError`: a bug in curate itself; please report it.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # terminal colour and cursor codes (Ray colours tracebacks)


def plain_text(text: str) -> str:
    """`text` without terminal escape codes: causes are read in files, tables and logs."""
    return _ANSI.sub("", text) if "\x1b" in text else text


class CurateError(Exception):
    """Base class of every error curate raises."""


class Problem(str):
    """One problem of a declaration, as text (`where: what; fix`), that also keeps its parts, so
    a recipe can say the fix in recipe terms (`recipe_fix`) instead of Python's."""

    def __new__(cls, where: str, what: str, fix: str, recipe_fix: str | None = None):
        self = super().__new__(cls, f"{where + ': ' if where else ''}{what}; {fix}")
        self.where, self.what, self.fix, self.recipe_fix = where, what, fix, recipe_fix
        return self

    def for_recipe(self) -> str:
        """The problem with its fix in recipe terms."""
        fix = self.recipe_fix or self.fix
        return f"{self.where + ': ' if self.where else ''}{self.what}; {fix}"


class PlanError(CurateError):
    """The pipeline cannot run; `problems` lists every reason, each with a fix."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  {i}. {p}" for i, p in enumerate(self.problems, 1))
        super().__init__(f"the pipeline has {len(self.problems)} problem(s):\n{lines}")


class UserCodeError(CurateError):
    """A stage's own code raised an exception."""


class InputError(CurateError):
    """Raise from a stage when the input itself is bad; the item FAILS without retries."""


class TransientError(CurateError):
    """Raise from a stage when a retry may succeed (network blip, busy device)."""


class WorkerDied(CurateError):
    """The worker that held a batch died before reporting it."""


class RootKeyError(CurateError):
    """`key=` gave no usable stable key for an input: it raised, returned None or a type other
    than str / int, or returned a key another input already has."""


class StageSetupError(CurateError):
    """A stage's class could not be built on its worker: its constructor raised a CurateError
    (missing weights, bad options, a missing dependency). Every item sent to it FAILS at once,
    with this cause, without retries (raise TransientError from a constructor that may succeed
    on a second try)."""


class EngineError(CurateError):
    """An internal invariant of curate broke: a bug to report, not a user mistake."""


@dataclass(frozen=True, slots=True)
class Cause:
    """Why an item is not PRESENT: who must act (`kind`), a message, and where it came from."""

    # "user_code" | "input" | "transient" | "worker_died" | "timeout" | "setup" | "group" | "item" | "lost"
    # | "storage" (the output location refused an item's payload file: curate.io.staged_files)
    kind: str
    message: str
    call: str = ""  # name of the Call where it happened
    error_type: str = ""  # exception class name, when an exception caused it
    traceback: str = ""

    def __post_init__(self):
        if not self.kind:
            raise EngineError("Cause.kind must be set")
        for name in ("message", "traceback"):
            text = getattr(self, name)
            if "\x1b" in text:
                object.__setattr__(self, name, plain_text(text))

    def __str__(self) -> str:
        where = f" in {self.call}" if self.call else ""
        et = f"{self.error_type}: " if self.error_type else ""
        return f"[{self.kind}{where}] {et}{self.message}"

    @staticmethod
    def from_text(kind: str | None, text: str) -> Cause:
        """The cause that `str(cause)` wrote as `text` (an output's `cause` column), with `kind`
        from its `cause_kind` column: kind, Call, error type and message as `__str__` lays them
        out, so `str()` of it gives `text` back. The traceback is not stored in rows: it is
        empty. A text in another layout becomes the whole message; so does a message that
        starts like an error type ("ValueError: ...") in a cause that had none."""
        kind = kind or UNKNOWN_KIND
        m = _CAUSE_TEXT.fullmatch(text)
        if m is None or m["kind"] != kind:
            return Cause(kind, text)
        et, message = m["error_type"] or "", m["message"]
        if et and not _names_an_exception(et):  # a message of its own that starts "Note: ..."
            et, message = "", f"{et}: {message}"
        return Cause(kind, message, m["call"] or "", et)

    @staticmethod
    def from_exception(exc: BaseException, call: str = "") -> Cause:
        """A cause that records the exception type, message and traceback text."""
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return Cause(_kind_of(exc), str(exc), call, type(exc).__name__, tb)

    @staticmethod
    def of(value: object, kind: str, call: str = "") -> Cause:
        """Normalise what a user passed as a cause (text, exception or Cause). An exception
        keeps its own kind when it has one (`ItemFailure(InputError(...))` is "input")."""
        if isinstance(value, Cause):
            return value if not call or value.call else Cause(value.kind, value.message, call,
                                                                value.error_type, value.traceback)
        if isinstance(value, BaseException):
            c = Cause.from_exception(value, call)
            own = c.kind if isinstance(value, (InputError, TransientError, WorkerDied)) else kind
            return Cause(own, c.message, call, c.error_type, c.traceback)
        return Cause(kind, str(value), call)


UNKNOWN_KIND = "unknown"  # a row written without a cause_kind: the kind of its cause is not known
# `Cause.__str__`: "[kind in Call] ErrorType: message"; an error type is a class name, no spaces
_CAUSE_TEXT = re.compile(r"\[(?P<kind>[^\]\s]+)(?: in (?P<call>[^\]]*))?\] "
                         r"(?:(?P<error_type>[A-Z][A-Za-z0-9_.]*): )?(?P<message>.*)", re.DOTALL)


_ERROR_ENDINGS = ("Error", "Exception", "Warning", "Exit", "Interrupt", "Died")  # Died: WorkerDied


def _names_an_exception(name: str) -> bool:
    """Whether `name` (before ': ' in a cause's text) is an exception class's name rather than
    the first word of a message: the endings Python's and curate's exception names have, or a
    builtin exception (StopIteration)."""
    import builtins

    last = name.rsplit(".", 1)[-1]
    obj = getattr(builtins, last, None)
    return last.endswith(_ERROR_ENDINGS) or (isinstance(obj, type) and issubclass(obj, BaseException))


def _kind_of(exc: BaseException) -> str:
    for cls, kind in ((InputError, "input"), (TransientError, "transient"), (WorkerDied, "worker_died"),
                      (StageSetupError, "setup")):
        if isinstance(exc, cls):
            return kind
    return "user_code"


def build_stage(target, init: dict, name: str):
    """`target(**init)` on a worker; a CurateError (not a TransientError) or a TypeError (init
    keywords the constructor does not take) becomes a StageSetupError, so its items fail at once
    instead of being retried."""
    try:
        return target(**init)
    except TransientError:
        raise
    except CurateError as exc:
        raise StageSetupError(f"{name} could not be built on its worker: {exc}") from exc
    except TypeError as exc:  # wrong init keywords: the same on every try, so never retried
        raise StageSetupError(f"{name} could not be built on its worker: TypeError: {exc}; check its init "
                              "against the class's constructor") from exc


class ClusterLostError(CurateError):
    """The Ray cluster a run was using stopped answering: the run ended at once, every input
    committed before stays committed, and a resumed run on a live cluster continues it."""
