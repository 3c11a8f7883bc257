"""curate.modalities.text: each signal on hand-made texts whose values are counted by hand in the
comments, the stages on real records (a PDF page, a clip's caption, a dict), and the filter's
reasons, bounds, languages and score_only."""

from __future__ import annotations

import pytest

import curate as cu
from curate.io.rows import payload_fields
from curate.modalities.pdf.records import PageMarkdown
from curate.modalities.text import signals as S
from curate.modalities.text.filters import AT_LEAST, AT_MOST, Signed, TextFilter, TextSignals, unwrap
from curate.modalities.video.records import ClipCaption

pytest.importorskip("numpy", reason="the n-gram signals use numpy")
pytest.importorskip("pycld2", reason="the language signal is CLD2's")

PROSE = ("The river rose slowly during the night. By morning the lower fields were under water, and the farmers "
         "moved their animals to the hill. Nobody in the village could remember a flood like it.")


def test_words_are_tokens_without_edge_punctuation():
    assert S.words_of("(see) the end. — don't “quote” 3.5%") == ["see", "the", "end", "don't", "quote", "3.5"]
    assert S.mean_word_length(["ab", "abcd"]) == 3.0 and S.mean_word_length([]) is None
    assert S.alpha_words(["abc", "123", "a1"]) == pytest.approx(2 / 3)  # "123" has no letter


def test_symbols_per_word_count_hashes_and_ellipses():
    text = "#tag #tag2 wait... what…"  # 2 hashes, "..." and "…": 4 symbols over 4 words
    assert S.symbol_word_ratio(text, len(S.words_of(text))) == 1.0
    assert S.symbol_word_ratio("plain words here", 3) == 0.0 and S.symbol_word_ratio("", 0) is None


def test_line_shares():
    lines = S.lines_of("• one\n- two.\n\n  three...  \nfour…\n")  # the blank line is no line
    assert lines == ["• one", "- two.", "three...", "four…"]
    assert S.bullet_lines(lines) == 0.5  # "•", "-"
    assert S.ellipsis_lines(lines) == 0.5  # "...", "…"
    assert S.lines_end_punct(lines) == 0.75  # "." and both ellipses end a sentence; "one" does not
    assert S.lines_end_punct(["Fin.", "Kein Satz", "終わり。", "Why?"]) == 0.75
    assert S.short_lines(["x" * 30, "x" * 31]) == 0.5  # FineWeb's short line: at most 30 characters
    assert S.bullet_lines([]) is None


def test_duplicate_lines_and_paragraphs_count_repeats_not_first_occurrences():
    assert S.duplicates(["a", "bb", "a", "a"]) == (0.5, 0.4)  # 2 of 4 repeat; 2 of 5 characters
    assert S.duplicates(["x", "y"]) == (0.0, 0.0) and S.duplicates([]) == (None, None)
    text = "First para.\n\nSecond one here.\n\nFirst para."
    assert S.paragraphs_of(text) == ["First para.", "Second one here.", "First para."]
    assert S.duplicates(S.paragraphs_of(text)) == (pytest.approx(1 / 3), pytest.approx(11 / 38))


def test_top_ngram_share_covers_each_word_once():
    words = "x y z x y w".split()  # "x y" twice: words 0, 1, 3, 4 of 6 one-letter words
    assert S.top_ngram_frac(words, 2) == pytest.approx(4 / 6)
    assert S.top_ngram_frac("x y x y x".split(), 2) == 0.8  # "x y" at 0 and 2 (or "y x" at 1, 3): 4 of 5 words
    assert S.top_ngram_frac("a b c d".split(), 2) == 0.0  # nothing repeats
    # words of different lengths: "aaaa bb" twice covers 12 of the 14 characters
    assert S.top_ngram_frac("aaaa bb c aaaa bb d".split(), 2) == pytest.approx(12 / 14)


def test_repeated_ngram_share_counts_only_repeats():
    assert S.dup_ngram_frac("a b c d e a b c d e".split(), 5) == 0.5  # the second copy
    line = "one two three four five six seven eight nine ten".split()
    assert S.dup_ngram_frac(line * 3, 5) == pytest.approx(2 / 3)  # the second and third copies
    assert S.dup_ngram_frac(line * 3, 10) == pytest.approx(2 / 3)
    # "alpha be c d e" again, then 3 new words: 10 of 29 characters repeated
    words = "alpha be c d e alpha be c d e xyz uvw rst".split()
    assert S.dup_ngram_frac(words, 5) == pytest.approx(10 / 29)
    assert S.dup_ngram_frac(words, 6) == 0.0  # no 6-gram repeats
    assert S.dup_ngram_frac(["a"] * 3, 5) == 0.0 and S.dup_ngram_frac([], 5) is None


def test_markdown_syntax_is_not_text():
    md = "# Title\n\n| a | b |\n|---|:---:|\n| 1 | 2 |\n\n![figure]()\n\n<table><tr><td>c</td></tr></table>\n\n- item"
    text = S.markdown_text(md)
    assert S.words_of(text) == ["Title", "a", "b", "1", "2", "c", "item"]
    assert "#" not in text and "|" not in text and S.lines_of(text)[-1] == "- item"  # the bullet stays


def test_text_signals_gives_every_column_and_none_over_nothing():
    sig = S.text_signals(PROSE)
    assert list(sig) == list(S.SIGNALS)
    assert sig["words"] == 34 and sig["lines_end_punct"] == 1.0 and sig["dup_line_frac"] == 0.0
    assert sig["dup_ngram_frac_5"] == 0.0 and 4 < sig["mean_word_length"] < 5
    empty = S.text_signals("")
    assert empty["words"] == 0 and empty["mean_word_length"] is None and empty["dup_ngram_frac_5"] is None
    assert S.text_signals(PROSE, ngrams=False)["top_ngram_frac_2"] is None


# ---- the stages ----------------------------------------------------------------------------------
def _page(markdown: str, language: str = "en", score: float | None = 0.97) -> PageMarkdown:
    return PageMarkdown(markdown=markdown, route="text_layer", chars=len(markdown), language=language,
                        language_score=score)


def test_signals_of_a_page_keep_its_language_and_its_columns():
    (signed,) = TextSignals()([_page(PROSE, language="fr", score=0.5)])
    assert isinstance(signed, Signed) and signed.value.markdown == PROSE
    assert (signed.signals["language"], signed.signals["language_score"]) == ("fr", 0.5)  # the page's own
    row = payload_fields(signed)
    assert row["route"] == "text_layer" and row["words"] == 34 and row["language"] == "fr"
    assert unwrap([signed, "other"]) == [signed.value, "other"]
    # in Python it reads as its record with its signals (result.values("pages") gives Signed)
    assert (signed.markdown, signed.route, signed.words, signed.language) == (PROSE, "text_layer", 34, "fr")
    with pytest.raises(AttributeError):
        signed.no_such_field
    import pickle

    assert pickle.loads(pickle.dumps(signed)) == signed  # crosses Ray's object store whole


def test_signals_of_a_caption_and_a_dict_detect_the_language():
    clip = ClipCaption(caption=PROSE, model="m", prompt="p", frames=4, start_s=0.0, end_s=2.0)
    signed, of_dict = TextSignals(column="caption", markdown=False)([clip, {"caption": PROSE}])
    assert signed.signals["language"] == "en" and signed.signals["language_score"] > 0.9
    assert of_dict.signals == signed.signals
    assert payload_fields(signed)["start_s"] == 0.0  # the clip's columns, then the signals
    (off,) = TextSignals(column="caption", language=False)([clip])
    assert off.signals["language"] is None


def test_a_record_without_the_text_field_fails_alone_naming_it():
    (failed,) = TextSignals(column="caption")([_page(PROSE)])
    assert isinstance(failed, cu.ItemFailure)
    assert "'caption'" in str(failed.cause) and "markdown" in str(failed.cause)


def test_signals_need_pycld2_only_for_the_language():
    assert TextSignals.requires({}) == ("pycld2", "numpy")
    assert TextSignals.requires({"language": False, "ngrams": False}) == ()


# ---- the filter ----------------------------------------------------------------------------------
def _signed(text: str, language: str = "en") -> Signed:
    return TextSignals()([_page(text, language=language)])[0]


def test_the_reason_names_every_failed_check_with_its_value_and_bound():
    text = "Buy now.\nBuy now.\nCheap watches here today"  # 8 words; 1 of 3 lines repeats
    keep, why = TextFilter(at_least={"words": 50}, at_most={"dup_line_frac": 0.3})([_signed(text)])[0]
    assert not keep and why == "words 8 < 50; dup_line_frac 0.3333 > 0.3"
    assert TextFilter(at_least={"words": 5}, at_most={"dup_line_frac": 0.5})([_signed(text)]) == [(True, "")]


def test_score_only_keeps_what_it_would_drop():
    bad = _signed("spam spam spam")
    assert not TextFilter()([bad])[0][0]
    assert TextFilter(score_only=True)([bad]) == [(True, "")]


def test_default_bounds_are_gophers_and_prose_passes_them():
    assert AT_LEAST["words"] == 50 and AT_MOST["dup_line_frac"] == 0.3 and AT_MOST["dup_ngram_frac_10"] == 0.1
    assert AT_MOST["top_ngram_frac_2"] == 0.2 and AT_MOST["symbol_word_ratio"] == 0.1
    text = PROSE + "\n" + PROSE.replace("river", "stream").replace("night", "week")  # 68 words, lines differ
    keep, why = TextFilter(at_most={**AT_MOST, "dup_ngram_frac_5": None, "dup_ngram_frac_6": None,
                                    "dup_ngram_frac_7": None, "dup_ngram_frac_8": None, "dup_ngram_frac_9": None,
                                    "dup_ngram_frac_10": None, "top_ngram_frac_2": None, "top_ngram_frac_3": None,
                                    "top_ngram_frac_4": None})([_signed(text)])[0]
    assert keep, why
    keep, why = TextFilter()([_signed(text)])[0]  # the same sentences twice: repeated 5-grams
    assert not keep and "dup_ngram_frac_5" in why and "words" not in why


def test_languages_and_their_confidence():
    signed = _signed(PROSE, language="en")
    assert TextFilter(at_least={}, at_most={}, languages=["fr", "de"])([signed]) == \
        [(False, "language en not in ['de', 'fr']")]
    assert TextFilter(at_least={}, at_most={}, min_language_score=0.99)([signed]) == \
        [(False, "language_score 0.97 < 0.99")]
    unknown = _signed(PROSE, language="")
    assert TextFilter(at_least={}, at_most={}, languages=["en"])([unknown]) == [(False, "language unknown not in ['en']")]


def test_word_checks_are_skipped_for_languages_without_spaces():
    zh = _signed("河水在夜里慢慢上涨。 早上田地都被淹了。", language="zh")  # 2 "words" of 9 and 8 characters
    assert zh.signals["words"] == 2 and zh.signals["mean_word_length"] == 8.5
    assert TextFilter(at_least={"words": 50}, at_most={"mean_word_length": 5})([zh]) == [(True, "")]
    assert TextFilter(at_least={}, at_most={"lines_end_punct": 0.5})([zh]) == [(False, "lines_end_punct 1 > 0.5")]


def test_a_null_bound_is_off_and_bad_options_say_what_to_give():
    assert TextFilter(at_least={"words": None}, at_most={})([_signed("one")]) == [(True, "")]
    with pytest.raises(cu.CurateError, match="'wordz'.*not signals"):
        TextFilter(at_least={"wordz": 3})
    with pytest.raises(cu.CurateError, match="words='many' not numbers"):
        TextFilter(at_most={"words": "many"})
    with pytest.raises(cu.CurateError, match="languages"):
        TextFilter(languages="en")
    with pytest.raises(cu.InputError, match="Signed records of TextSignals"):
        TextFilter()([_page(PROSE)])
