"""The text-quality score (`text_quality.score`) on strings and on the shared PDFs' real pages,
and the page route it drives (`textlayer.judge`)."""

from __future__ import annotations

import pytest
from curate.modalities.pdf.text_quality import MIN_QUALITY, is_cipher_token, score
from curate.modalities.pdf.textlayer import judge
from pdf_samples import REAL
from prose_samples import PROSE as LANGUAGES

PROSE = "The quick brown fox jumps over the lazy dog, twice: 1 2. " * 3
REDBOOK = REAL / "docling_redp5110_sampled.pdf"
CIPHER_PAGE = 2  # redbook's "DB2 for i Center of Excellence" brief: its Highlights in a shifted font


@pytest.mark.parametrize("token, cipher", [
    ("]üìÆüéê", True), ("•ìê", True), ("°ê£ë†£ûÜüéê", True), ("êØ°ê£•", True), ("Ã©tÃ©", True),
    ("été", False), ("Größe", False), ("ação", False), ("Ärzte", False), ("được", False), ("naïve", False),
    ("AT&T", False), ("f(x)", False), ("x86_64", False), ("well–known", False), ("表，数据", False),
    ("αβγ", False), ("DB2®", False), ("25°C", False), ("(ÜBER)", False),
    # words whose letters are mostly Latin-1 accented (issue 38): Icelandic, Turkish, Portuguese,
    # French and Catalan with their own apostrophes and middle dots, Irish with its prefix
    ("þú", False), ("Þjóð", False), ("íbúð", False), ("á", False), ("üç", False), ("küçük", False),
    ("é", False), ("l’été", False), ("d’après", False), ("col·lecció", False), ("hÉireann", False),
    ("„Þú", False), ("Ñòàðûé", False),  # Windows-1251 read as Latin-1: a cipher only on a cipher line
])
def test_a_token_is_a_shifted_cipher_word_or_a_word(token, cipher):
    assert is_cipher_token(token) is cipher


def test_an_accent_heavy_token_is_a_cipher_word_on_a_line_of_them():
    assert is_cipher_token("Ñòàðûé", cipher_line=True) and is_cipher_token("ìåëüíèê", cipher_line=True)
    assert not is_cipher_token("Größe", cipher_line=True)  # not accent-heavy: a word on any line


def _wrapped(text: str, width: int = 60) -> str:
    """`text` in lines of about `width` characters, as a page's text layer gives it."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + len(word) >= width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join(lines + [line])


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_prose_in_any_language_or_script_is_not_garbage(language):
    """Issue 38: Icelandic prose scored 0.855-0.899 (its "á", "í", "þú", "þjóð" were cipher
    words) and its good text layer went to OCR; Turkish ("küçük", "üç"), Catalan ("col·lecció")
    and French ("l’été") lost points the same way. Prose in every script scores 1.0, as one
    line (a region) or in lines (a page)."""
    text = LANGUAGES[language]
    assert score(text) == (1.0, "")
    assert score(_wrapped(text)) == (1.0, "")
    assert judge(_wrapped(text)).route == "text_layer"


LEGACY = {"russian": "cp1251", "ukrainian": "cp1251", "greek": "cp1253", "hebrew": "cp1255", "arabic": "cp1256",
          "thai": "cp874"}


@pytest.mark.parametrize("language", sorted(LEGACY))
def test_a_legacy_code_page_read_as_latin1_is_garbage(language):
    """A font whose encoding is a national code page shown as Latin-1 (`Ñòàðûé ìåëüíèê`): the
    shifted cipher of a whole line, whatever its words look like alone."""
    garbage = LANGUAGES[language].encode(LEGACY[language]).decode("latin-1")
    value, reason = score(_wrapped(garbage))
    assert value < MIN_QUALITY and reason, (garbage[:40], value)


@pytest.mark.parametrize("language", sorted(set(LANGUAGES) - {"icelandic_dialogue"}))
def test_utf8_read_as_latin1_is_garbage(language):
    """Mojibake (`Ã©` for é, `Ð¿` for п): UTF-8 through a broken ToUnicode map."""
    garbage = LANGUAGES[language].encode("utf-8").decode("cp1252", errors="replace")
    value, reason = score(_wrapped(garbage))
    assert value < MIN_QUALITY and reason, (garbage[:40], value)


def test_cid_codes_are_unmapped_glyphs():
    """pdfminer writes a glyph without a Unicode mapping as `(cid:12)`; a text layer made from its
    output carries them as text (letters and digits: the symbol floor alone missed them)."""
    value, reason = score("".join(f"(cid:{k})" for k in range(3, 40)))
    assert value == 0.0 and "(cid:N) codes" in reason
    value, reason = score("The (cid:3)(cid:4) quick (cid:12)(cid:13)(cid:14) brown fox")
    assert value < MIN_QUALITY and reason.startswith("70% of its characters are U+FFFD")
    assert score("pdfminer writes (cid:12) for a glyph it cannot map. " + PROSE)[0] >= MIN_QUALITY  # a mention


def test_readable_text_scores_one_and_garbage_scores_under_the_threshold():
    assert score(PROSE) == (1.0, "")
    assert score("Das Wetter ist schön, la fête a été très agréable, tiếng Việt, 日本語の文章です。") == (1.0, "")
    assert score("def f(x): return x[0] + y.z  # 3.5 ≤ 4") == (1.0, "")
    assert score("]üìÆ") == (1.0, "")  # too short to judge
    for text, why in [("\ufffd" * 30 + "abc", "91% of its characters are U+FFFD"),
                      ("\ue000\ue001\ue002 " * 10 + "word", "88% of its characters are U+FFFD, private-use"),
                      ("]üìÆüéê •ìê °ê£ë†£ûÜüéê †ë ∞†¶£ èÜ•ÜáÜ§ê", "89% of its characters are in tokens that are not words"),
                      ("#$%&'()*+,-./:;<=>?@[]^_`{|}~" * 2 + "ab", "only 3% of its characters are letters")]:
        value, reason = score(text)
        assert value < MIN_QUALITY and reason.startswith(why), (text, value, reason)
    half = PROSE + " ]üìÆüéê •ìê °ê£ë†£ûÜüéê" * 4
    assert 0.5 < score(half)[0] < MIN_QUALITY


def test_the_redbook_s_cipher_page_goes_to_ocr_and_its_cipher_regions_score_low():
    """Found in issue 23: the shifted-cipher bullets (`]üìÆüéê •ìê …`) of redbook p3 passed the
    garbage check (only U+FFFD, private use and symbol soup were caught)."""
    import pymupdf

    page = pymupdf.open(REDBOOK)[CIPHER_PAGE]
    verdict = judge(page.get_text("text"))
    assert verdict.route == "ocr" and "not words" in verdict.reason and verdict.quality < MIN_QUALITY
    blocks = [b[4] for b in page.get_text("blocks") if b[4].strip()]
    low = [b for b in blocks if score(b)[0] < MIN_QUALITY]
    assert len(low) >= 6 and all("†" in b or "Ü" in b for b in low)  # the cipher bullets, and only them
    assert any("Highlights" in b for b in blocks if b not in low)


def test_every_other_real_page_scores_above_the_threshold():
    import pymupdf

    scores = {}
    for path in sorted(REAL.glob("*.pdf")):
        try:
            doc = pymupdf.open(path)
        except pymupdf.FileDataError:
            continue  # the not-a-PDF sample
        if doc.needs_pass:
            doc.authenticate("openpassword")
        for i, page in enumerate(doc):
            if (text := page.get_text("text")).strip():
                scores[(path.name, i)] = score(text)[0]
    low = {k: v for k, v in scores.items() if v < MIN_QUALITY}
    assert low.keys() == {(REDBOOK.name, CIPHER_PAGE)}, low
    assert len(scores) > 300


def test_text_layers_in_many_scripts_keep_the_text_layer_route(tmp_path):
    """The prose of every language as a PDF's text layer (PyMuPDF's own fonts, embedded: no font
    of the machine's), one page each: each page is read from its text layer, not sent to OCR."""
    import pymupdf

    doc = pymupdf.open()
    for language in sorted(LANGUAGES):
        doc.new_page(width=420, height=595).insert_htmlbox(pymupdf.Rect(40, 40, 380, 555), LANGUAGES[language])
    doc.save(tmp_path / "languages.pdf")
    pages = pymupdf.open(tmp_path / "languages.pdf")
    verdicts = {language: judge(page.get_text("text")) for language, page in zip(sorted(LANGUAGES), pages)}
    assert {k: v.reason for k, v in verdicts.items() if v.route != "text_layer"} == {}
