"""Write your own modality: Book -> Chapter -> Paragraph, with the public curate API alone.

    python examples/books.py        (or scripts/example, which sets up .venv first)

Each bundled book (examples/data/books/*.txt) expands into its chapters and each chapter into
its paragraphs; short paragraphs are dropped with a reason; a class stage (a stand-in for a
model, built once per worker) computes word statistics in batches of 8 on 2 replicas; the
paragraphs reduce back, in order, into their chapter, and the chapters into a table of contents
per book. `missing_chapters.txt` has no CHAPTER line: it comes back as one FAILED book with an
InputError, and every other book runs to completion.
"""

from __future__ import annotations

import collections
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

try:
    import curate as cu
except ImportError:  # run with a Python that lacks curate: say how to get it
    sys.exit("curate is not installed here; run scripts/example, or `pip install -e .` in the repo root")

DATA_DIR = Path(__file__).resolve().parent / "data" / "books"
CHAPTER_MARK = "CHAPTER"  # a line starting with this opens a chapter
MIN_WORDS = 8  # shorter paragraphs ("Down, down, down.") are too short to be a training example
STOPWORDS = ("a", "an", "and", "as", "at", "be", "but", "by", "for", "had", "he", "her", "his", "i",
             "in", "is", "it", "me", "my", "of", "on", "or", "said", "she", "so", "that", "the",
             "their", "them", "there", "this", "to", "was", "were", "what", "with", "you")


# ---- records: frozen, one per entity ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ChapterText:
    """One chapter as split from its book: the heading line and the text below it."""

    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class Paragraph:
    """One paragraph, carrying the book title (broadcast from the book) and chapter heading."""

    book: str
    chapter: str
    text: str


@dataclass(frozen=True, slots=True)
class ParagraphStats:
    """What the word-statistics stage says about one paragraph."""

    book: str
    chapter: str
    words: int
    top_words: tuple[str, ...]
    text: str


@dataclass(frozen=True, slots=True)
class ChapterDigest:
    """A chapter's kept paragraphs joined in order, with their counts."""

    paragraphs: int
    words: int
    text: str


@dataclass(frozen=True, slots=True)
class TocEntry:
    """One line of a book's table of contents."""

    heading: str
    paragraphs: int
    words: int


@dataclass(frozen=True, slots=True)
class BookSummary:
    """The root-level output: a book's title and its table of contents."""

    title: str
    chapters: tuple[TocEntry, ...]

    @property
    def words(self) -> int:
        return sum(c.words for c in self.chapters)


# ---- stages: each takes a batch (list) and returns one result per item -------------------------
def read_titles(paths: list[str | Path]) -> list[str]:
    """Book -> its title: the `Title:` line, else the file name."""
    out = []
    for path in map(Path, paths):
        lines = path.read_text(encoding="utf-8").splitlines()
        title = next((ln[len("Title:"):].strip() for ln in lines if ln.startswith("Title:")), path.stem)
        out.append(title)
    return out


def split_chapters(paths: list[str | Path]) -> list:
    """Book -> its chapters in order. A file with no chapter line is bad input: that book alone
    FAILS with an InputError that says how to fix the file; the rest of the batch goes on."""
    return [_chapters(Path(path)) for path in paths]


def _chapters(path: Path) -> list[ChapterText] | cu.ItemFailure:
    parts = re.split(rf"(?m)^(?={CHAPTER_MARK})", path.read_text(encoding="utf-8"))
    chapters = []
    for part in parts[1:]:  # parts[0] is the front matter (title, author)
        heading, _, body = part.partition("\n")
        chapters.append(ChapterText(heading.strip(), body.strip()))
    if not chapters:
        return cu.ItemFailure(cu.InputError(
            f"{path.name}: no line starts with {CHAPTER_MARK!r}, so the book cannot be split into "
            f"chapters; mark each chapter with a line such as '{CHAPTER_MARK} I. Title'"))
    return chapters


def split_paragraphs(chapters: list[tuple[str, ChapterText]]) -> list[list[Paragraph]]:
    """Chapter (with its book's title) -> its paragraphs in order: blocks between blank lines."""
    return [[Paragraph(title, ch.heading, " ".join(block.split()))
             for block in re.split(r"\n\s*\n", ch.text) if block.strip()]
            for title, ch in chapters]


def long_enough(paragraphs: list[Paragraph]) -> list[tuple[bool, str | None]]:
    """Keep paragraphs of at least MIN_WORDS words; a dropped one says why."""
    out = []
    for p in paragraphs:
        n = len(p.text.split())
        out.append((True, None) if n >= MIN_WORDS else (False, f"too short: {n} words < {MIN_WORDS}"))
    return out


class WordStats:
    """Stands in for a model: `init=` builds its state once per worker, then it scores batches."""

    def __init__(self, stopwords: tuple[str, ...], top: int = 3):
        self.stopwords = frozenset(stopwords)  # the "weights": loaded once, reused for every batch
        self.top = top

    def __call__(self, paragraphs: list[Paragraph]) -> list[ParagraphStats]:
        return [self._score(p) for p in paragraphs]

    def _score(self, p: Paragraph) -> ParagraphStats:
        words = re.findall(r"[a-z]+(?:'[a-z]+)?", p.text.lower())
        counts = collections.Counter(w for w in words if w not in self.stopwords)
        top = tuple(w for w, _ in counts.most_common(self.top))
        return ParagraphStats(p.book, p.chapter, len(p.text.split()), top, p.text)


def join_chapter(chapters: list[list[ParagraphStats]]) -> list[ChapterDigest]:
    """Chapter <- its kept paragraphs, in paragraph order (dropped ones are not passed in)."""
    return [ChapterDigest(len(ps), sum(p.words for p in ps), "\n\n".join(p.text for p in ps))
            for ps in chapters]


def table_of_contents(books: list[list[tuple[ChapterText, ChapterDigest]]]) -> list[tuple[TocEntry, ...]]:
    """Book <- its chapters, in chapter order: one table-of-contents line per chapter."""
    return [tuple(TocEntry(ch.heading, d.paragraphs, d.words) for ch, d in chapters) for chapters in books]


def make_book(books: list[tuple[str, tuple[TocEntry, ...]]]) -> list[BookSummary]:
    """Book: its title and its table of contents, side by side."""
    return [BookSummary(title, toc) for title, toc in books]


# ---- the pipeline ----------------------------------------------------------------------------
def build_pipeline() -> cu.Pipeline:
    """Declare the Book -> Chapter -> Paragraph dataflow (declaring runs nothing)."""
    Book = cu.Domain("book")
    Chapter = Book.child("chapter")
    Paragraph_ = Chapter.child("paragraph")

    pipe = cu.Pipeline(Book)  # pipe.source: one file path per book
    titles = pipe.source.map(read_titles)
    chapters = pipe.source.expand(cu.stage(split_chapters, batch_size=2), into=Chapter)
    located = cu.zip(titles.broadcast(onto=chapters), chapters)  # (book title, chapter) per chapter
    paragraphs = located.expand(split_paragraphs, into=Paragraph_)
    kept = paragraphs.filter(cu.stage(long_enough, batch_size=16))
    stats = kept.map(cu.stage(WordStats, init={"stopwords": STOPWORDS}, batch_size=8, replicas=2))
    digests = stats.reduce(cu.stage(join_chapter, batch_size=4))  # back to Chapter, in order
    tocs = cu.zip(chapters, digests).reduce(table_of_contents)  # back to Book, in order
    books = cu.zip(titles, tocs).map(make_book)

    pipe.output("books", books)
    pipe.output("paragraphs", stats)
    return pipe


def book_paths() -> list[Path]:
    """The bundled books, in file-name order (the input order)."""
    return sorted(DATA_DIR.glob("*.txt"))


def book_key(path: Path) -> str:
    """A root's stable key: file name plus content hash, the same on every run."""
    return f"{path.name}:{hashlib.sha256(path.read_bytes()).hexdigest()[:12]}"


# ---- printing --------------------------------------------------------------------------------
def print_books(paths: list[Path], values: list) -> None:
    print("books (root level, one row per input, in input order):")
    for i, (path, v) in enumerate(zip(paths, values)):
        if isinstance(v, cu.Issue):
            print(f"  [{i}] {path.name}: {v.status.name} {v.cause}")
            continue
        print(f"  [{i}] {path.name}: PRESENT {v.title!r}, {len(v.chapters)} chapters, {v.words} words")
        for c in v.chapters:
            print(f"        {c.heading:<44}{c.words:>4} words in {_plural(c.paragraphs, 'paragraph')}")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def print_paragraphs(items: list[cu.Item], n: int = 6) -> None:
    print(f"\nparagraphs (child level, lineage = (book, chapter, paragraph)), first {n} of {len(items)}:")
    for it in items[:n]:
        if it.status is cu.Status.PRESENT:
            s = it.value
            text = s.text if len(s.text) <= 40 else s.text[:37] + "..."
            print(f"  {it.lineage} PRESENT {s.words:>3} words, top {', '.join(s.top_words)}: {text!r}")
        else:
            print(f"  {it.lineage} {it.status.name} {it.cause}")


def print_counts(result: cu.RunResult) -> None:
    print("\nrows per status:")
    for name in ("books", "paragraphs"):
        counts = collections.Counter(it.status for it in result.items(name))
        print(f"  {name:<11}" + "  ".join(f"{s.name} {counts[s]}" for s in cu.Status))


def main() -> int:
    paths = book_paths()
    result = cu.run(build_pipeline(), paths, input_batch_size=2, inflight=2, key=book_key)
    print_books(paths, result.values("books"))
    print_paragraphs(result.items("paragraphs"))
    print_counts(result)
    print("\nmetrics:")
    print(result.metrics.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
