"""Text signals on records, and the filter that turns their thresholds into DROPPED rows.

- `TextSignals` (a map) reads one text field of each record (`column`: a page's or a document's
  `markdown`, a clip's `caption`) and gives `Signed(record, signals)`: the record untouched, with
  its language (CLD2, `curate.modalities.pdf.language.detect`; a record that already has
  `language` and `language_score`, a PDF page, keeps its own) and every quality signal of
  `curate.modalities.text.signals`. Its row is the record's columns, then one column per signal
  (`words`, `dup_line_frac`, ...), so the signals sit beside what they describe in every output.
- `TextFilter` (a filter) keeps a Signed record whose signals pass every check: `at_least` and
  `at_most` map a signal to its bound (the defaults are Gopher's and FineWeb's thresholds, each
  named in `signals.py`; a bound of null turns a check off), `languages` keeps only those
  languages (ISO 639-1) and `min_language_score` wants that much of CLD2's confidence. A
  dropped record keeps its row, DROPPED, its reason naming every failed check with its value and
  its bound ("dup_line_frac 0.75 > 0.3; words 12 < 50"), and its signals stay in the row.
  `score_only: true` keeps every record (the signals are still written). A signal that is null
  (no words, no lines) fails no check; the word-based checks (`WORD_CHECKS`) are skipped for
  languages written without spaces between words (`NO_SPACE_LANGUAGES`), where a "word" is a
  whole phrase and Gopher's bounds do not hold.
- `unwrap` (a map) gives the record back, for the stages after the filter that take the
  record itself (a page's document reduce).

What a DROPPED page does to its document: the engine leaves DROPPED children out of a reduce
(docs/concepts/statuses-and-failures.md), so a page a filter drops is not in its document's
Markdown and its document is PRESENT with the pages that passed (`pages` counts those); a
document all of whose pages were dropped has empty Markdown, which the documents filter then
drops for its words. The pages table keeps the dropped page's row and its reason.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from curate.modalities.text.signals import DUP_NGRAMS, SIGNALS, TOP_NGRAMS, text_signals

import curate as cu

LANGUAGE = ("language", "language_score")
# Gopher's bounds (MassiveText), and FineWeb's on lines; `signals.py` says what each measures
AT_LEAST = {"words": 50, "mean_word_length": 3, "alpha_words": 0.8, "lines_end_punct": 0.12}
AT_MOST = {"words": 100_000, "mean_word_length": 10, "symbol_word_ratio": 0.1, "bullet_lines": 0.9,
           "ellipsis_lines": 0.3, "short_lines": 0.67, "dup_line_frac": 0.3, "dup_line_char_frac": 0.2,
           "dup_para_frac": 0.3, "dup_para_char_frac": 0.2,
           **{f"top_ngram_frac_{n}": b for n, b in zip(TOP_NGRAMS, (0.20, 0.18, 0.16))},
           **{f"dup_ngram_frac_{n}": round(0.15 - 0.01 * k, 2) for k, n in enumerate(DUP_NGRAMS)}}
WORD_CHECKS = frozenset({"words", "mean_word_length", "symbol_word_ratio", "alpha_words",
                         *(f"top_ngram_frac_{n}" for n in TOP_NGRAMS), *(f"dup_ngram_frac_{n}" for n in DUP_NGRAMS)})
NO_SPACE_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo"})  # scripts without spaces between words


@dataclasses.dataclass(frozen=True, slots=True)
class Signed:
    """A record with its text's signals (column -> value): what `TextSignals` gives and
    `TextFilter` reads. Its row is the record's columns, then the signals'."""

    value: Any
    signals: dict

    def __post_init__(self):
        missing = [s for s in (*LANGUAGE, *SIGNALS) if s not in self.signals]
        if missing:
            raise ValueError(f"signals of a {type(self.value).__name__} lack {missing}; make them with TextSignals")

    def __curate_row__(self) -> dict:
        return {**row_of(self.value), **self.signals}

    def __getattr__(self, name: str) -> Any:
        """A signal by name, else the record's own field: in Python (`result.values(...)`) a
        Signed reads as its record with its signals, as its row does."""
        if name.startswith("__"):
            raise AttributeError(name)
        signals = object.__getattribute__(self, "signals")
        if name in signals:
            return signals[name]
        return getattr(object.__getattribute__(self, "value"), name)


def row_of(value: Any) -> dict:
    """The columns of a record as its output row would show them (its own `__curate_row__`, a
    dataclass's fields, a dict's items; anything else as `value`)."""
    hook = getattr(type(value), "__curate_row__", None)
    if hook is not None:
        return dict(hook(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return dict(value)
    return {"value": value}


def _text(value: Any, column: str) -> str | None:
    text = value.get(column) if isinstance(value, dict) else getattr(value, column, None)
    return text if isinstance(text, str) else None


class TextSignals:
    """Map: a record -> Signed(record, its text's language and quality signals).

    `column`: the field holding the text; `markdown`: read it as Markdown (`signals.markdown_text`);
    `language`: detect it with CLD2 (false: null columns, and no pycld2 needed); `ngrams`: the
    n-gram repetition signals (false: null columns; they are most of the cost on a long text)."""

    def __init__(self, column: str = "markdown", markdown: bool = True, language: bool = True, ngrams: bool = True):
        bad = [f"{k}={v!r}" for k, v in (("markdown", markdown), ("language", language), ("ngrams", ngrams))
               if not isinstance(v, bool)]
        if bad or not (isinstance(column, str) and column):
            raise cu.CurateError(f"TextSignals {', '.join(bad) or f'column={column!r}'}; give column the name of "
                                 "a text field (markdown, caption) and true or false for markdown, language, ngrams")
        self.column, self.markdown, self.language, self.ngrams = column, markdown, language, ngrams

    @staticmethod
    def requires(init: dict) -> tuple:
        """pycld2 when it detects languages, numpy for the n-grams (checked before a run starts)."""
        return (*(("pycld2",) if init.get("language", True) else ()), *(("numpy",) if init.get("ngrams", True) else ()))

    def __call__(self, items: list) -> list:
        return [self.sign(item) for item in items]

    def sign(self, value: Any) -> Signed | cu.ItemFailure:
        """One record with its signals; an ItemFailure when it has no text field `column`."""
        text = _text(value, self.column)
        if text is None:
            have = sorted(row_of(value))
            return cu.ItemFailure(cu.InputError(
                f"TextSignals reads the text field {self.column!r}, which a {type(value).__name__} does not have "
                f"as text (its fields: {', '.join(have[:12])}); set the stage's init column to one of them"))
        return Signed(value, {**self._language(value, text),
                              **text_signals(text, markdown=self.markdown, ngrams=self.ngrams)})

    def _language(self, value: Any, text: str) -> dict:
        own = row_of(value)
        if all(k in own for k in LANGUAGE):  # a PDF page detected it on the same Markdown already
            return {k: own[k] for k in LANGUAGE}
        if not self.language:
            return {"language": None, "language_score": None}
        from curate.modalities.pdf.language import detect

        language, score = detect(text)
        return {"language": language, "language_score": score}


class TextFilter:
    """Filter: keep a Signed record whose signals pass every check; a dropped one's reason names
    every failed check, its value and its bound. See the module docstring for the options."""

    def __init__(self, at_least: dict | None = None, at_most: dict | None = None, languages: list | None = None,
                 min_language_score: float | None = None, score_only: bool = False):
        self.at_least = _bounds("at_least", AT_LEAST if at_least is None else at_least)
        self.at_most = _bounds("at_most", AT_MOST if at_most is None else at_most)
        if languages is not None and not (isinstance(languages, (list, tuple))
                                          and all(isinstance(c, str) and c for c in languages)):
            raise cu.CurateError(f"TextFilter languages={languages!r}; give ISO 639-1 codes, e.g. languages: [en, fr], "
                                 "or null to keep every language")
        if min_language_score is not None and (isinstance(min_language_score, bool)
                                               or not isinstance(min_language_score, (int, float))):
            raise cu.CurateError(f"TextFilter min_language_score={min_language_score!r}; give a number 0..1 "
                                 "(CLD2's share of the text in its language), or null")
        if not isinstance(score_only, bool):
            raise cu.CurateError(f"TextFilter score_only={score_only!r}; give true (keep every row) or false")
        self.languages = None if languages is None else frozenset(languages)
        self.min_language_score, self.score_only = min_language_score, score_only

    def __call__(self, items: list) -> list:
        return [self.verdict(item) for item in items]

    def verdict(self, item: Any) -> tuple[bool, str]:
        """(keep it, why not): every failed check, in the order at_least, at_most, language."""
        if not isinstance(item, Signed):
            raise cu.InputError(f"TextFilter takes the Signed records of TextSignals, not {type(item).__name__}; "
                                "filter the output of a curate.modalities.text.filters:TextSignals step")
        failed = self.failures(item.signals)
        if self.score_only or not failed:
            return True, ""
        return False, "; ".join(failed)

    def failures(self, signals: dict) -> list[str]:
        """Each failed check as text ("words 12 < 50"), none when all pass."""
        language = signals.get("language") or ""
        skip = WORD_CHECKS if language in NO_SPACE_LANGUAGES else frozenset()
        failed = [f"{name} {_show(signals[name])} < {_show(bound)}" for name, bound in self.at_least.items()
                  if name not in skip and signals.get(name) is not None and signals[name] < bound]
        failed += [f"{name} {_show(signals[name])} > {_show(bound)}" for name, bound in self.at_most.items()
                   if name not in skip and signals.get(name) is not None and signals[name] > bound]
        if self.languages is not None and language not in self.languages:
            failed.append(f"language {language or 'unknown'} not in {sorted(self.languages)}")
        score = signals.get("language_score")
        if self.min_language_score is not None and (score is None or score < self.min_language_score):
            failed.append(f"language_score {_show(score)} < {_show(self.min_language_score)}")
        return failed


def _bounds(name: str, given: Any) -> dict:
    """`given` checked: signal -> number (a null bound is left out: that check is off)."""
    if not isinstance(given, dict):
        raise cu.CurateError(f"TextFilter {name}={given!r}; give a mapping of signal -> bound, "
                             f"e.g. {name}: {{words: 50}}")
    unknown = sorted(k for k in given if k not in SIGNALS)
    bad = sorted(f"{k}={v!r}" for k, v in given.items()
                 if k in SIGNALS and v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))))
    if unknown or bad:
        what = (f"{unknown} not signals (one of {', '.join(SIGNALS)})" if unknown else "") + \
               ("; " if unknown and bad else "") + (f"{', '.join(bad)} not numbers" if bad else "")
        raise cu.CurateError(f"TextFilter {name}: {what}; give each signal a number, or null to turn its check off")
    return {k: v for k, v in given.items() if v is not None}


def _show(value: Any) -> str:
    return "null" if value is None else f"{value:g}" if isinstance(value, (int, float)) else str(value)


def unwrap(items: list) -> list:
    """Map: the record of each Signed item (anything else as it is), for the stages that take
    the record itself after a text filter."""
    return [item.value if isinstance(item, Signed) else item for item in items]


@functools.cache
def _signer(column: str, markdown: bool) -> TextSignals:
    return TextSignals(column=column, markdown=markdown)


def markdown_signals(items: list) -> list:
    """Map: `TextSignals(column="markdown")` as a plain function (every signal on, the text read as
    Markdown). A function shares the light functions worker of its recipe; a class stage would take
    a worker of its own, and the default PDF recipe's workers already fill a 2-CPU machine."""
    return _signer("markdown", True)(items)


def caption_signals(items: list) -> list:
    """Map: `TextSignals(column="caption", markdown=False)` as a plain function (see
    `markdown_signals`): the signals of a clip's caption."""
    return _signer("caption", False)(items)


markdown_signals.requires = caption_signals.requires = ("pycld2", "numpy")
