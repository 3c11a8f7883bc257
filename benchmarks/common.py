"""What the Ray benchmarks share: the stages of the 1 -> M -> 1 document workload (render a
document's pages, a sleeping OCR "model", ordered assembly) and the fresh-process runner that
measures each configuration in its own interpreter and its own local Ray.

Ray workers cannot import this file (benchmarks/ is not a package on their path), so it ships
its stages by value, as baselines.py does."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import ray

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

RESULT = "RESULT "  # the line a measuring process prints its result on


class Ocr:
    """The sleeping "model": built once per actor, batches pages from any documents; a batch costs
    `base_s` plus `per_page_s` a page."""

    def __init__(self, base_s: float, per_page_s: float):
        self.base_s, self.per_page_s = base_s, per_page_s

    def __call__(self, pages):
        time.sleep(self.base_s + self.per_page_s * len(pages))
        return [f"d{d}p{p}" for d, p in pages]


class Upload:
    """The per-document upload: sleeps `upload_s` a document, returns (text length, time stamp)."""

    def __init__(self, upload_s: float):
        self.upload_s = upload_s

    def __call__(self, docs):
        out = []
        for text in docs:
            time.sleep(self.upload_s)
            out.append((len(text), time.time()))
        return out


def render(docs):
    """(document, page count) -> its pages (document, page), in order (near-free: no sleep)."""
    return [[(d, p) for p in range(n)] for d, n in docs]


def assemble(texts):
    """A document's page texts, in page order, as one text."""
    return ["\n".join(t) for t in texts]


def expected(d: int, n: int) -> str:
    """What `assemble` makes of document `d`'s `n` pages."""
    return "\n".join(f"d{d}p{p}" for p in range(n))


def print_result(result: dict) -> None:
    """In a measuring process: hand the result to `run_fresh` in the parent."""
    print(RESULT + json.dumps(result), flush=True)


def run_fresh(argv: list[str]) -> tuple[dict | None, str]:
    """Run `python argv...` in a fresh process; (the result it printed or None, its stderr)."""
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)), None)
    return (None if line is None else json.loads(line[len(RESULT):])), proc.stderr
