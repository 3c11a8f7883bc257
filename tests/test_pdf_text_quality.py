"""The text-quality score (`text_quality.score`) on strings and on the shared PDFs' real pages,
and the page route it drives (`textlayer.judge`)."""

from __future__ import annotations

import pytest
from curate.modalities.pdf.text_quality import MIN_QUALITY, is_cipher_token, score
from curate.modalities.pdf.textlayer import judge
from pdf_samples import REAL

PROSE = "The quick brown fox jumps over the lazy dog, twice: 1 2. " * 3
REDBOOK = REAL / "docling_redp5110_sampled.pdf"
CIPHER_PAGE = 2  # redbook's "DB2 for i Center of Excellence" brief: its Highlights in a shifted font


@pytest.mark.parametrize("token, cipher", [
    ("]üìÆüéê", True), ("•ìê", True), ("°ê£ë†£ûÜüéê", True), ("êØ°ê£•", True), ("Ã©tÃ©", True),
    ("été", False), ("Größe", False), ("ação", False), ("Ärzte", False), ("được", False), ("naïve", False),
    ("AT&T", False), ("f(x)", False), ("x86_64", False), ("well–known", False), ("表，数据", False),
    ("αβγ", False), ("DB2®", False), ("25°C", False), ("(ÜBER)", False),
])
def test_a_token_is_a_shifted_cipher_word_or_a_word(token, cipher):
    assert is_cipher_token(token) is cipher


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
