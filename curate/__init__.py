"""curate: hierarchical data preparation for foundation models.

Declare domains and a pipeline, then `run` it; see README.md. Importing curate loads no Ray,
torch, pyarrow or media library: those load only where a stage needs them."""

from curate.core.outcome import GroupFailure, Issue, Item, ItemFailure, Status
from curate.core.plan import compile_plan
from curate.errors import (
                           Cause,
                           ClusterLostError,
                           CurateError,
                           EngineError,
                           InputError,
                           PlanError,
                           RootKeyError,
                           TransientError,
                           UserCodeError,
                           WorkerDied,
)
from curate.io.objects import local_copy
from curate.io.rows import PayloadError
from curate.metrics import RunMetrics
from curate.pipeline import Domain, Pipeline, Pool, Port, Stage, stage, zip
from curate.resources import Resources
from curate.run import RunResult, run
from curate.session import Session

__version__ = "0.1.0"

__all__ = [
    "Cause", "ClusterLostError", "CurateError", "Domain", "EngineError", "GroupFailure", "InputError", "Issue", "Item",
    "ItemFailure", "PayloadError", "Pipeline", "PlanError", "Pool", "Port", "Resources", "RootKeyError", "RunMetrics", "RunResult", "Session", "Stage",
    "Status", "TransientError", "UserCodeError", "WorkerDied", "compile_plan", "local_copy", "run", "stage",
    "zip",
]
