"""Pages whose text a person can read but which have no text layer for it (issue 38), made on the
fly: a handwritten-style letter and a page of notes scanned as one image, a poster whose words
are drawn as vector outlines, a letter's image under a typed heading, and the two that must stay
figures: a photo with a little text in it and a bar chart.

Handwriting is imitated with a slanted font (DejaVu Sans Oblique where it is installed, else
PIL's own font), each word in blue ink, jittered up and down and turned a little, on lined
paper: RapidOCR reads it with lower confidence than print, as it reads real handwriting.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

A4 = (595.0, 842.0)  # points
PX = (1240, 1754)  # A4 at 150 dpi

LETTER = ["Dear Margaret,",
          "Thank you for the lovely parcel which arrived on Tuesday morning.",
          "The garden is full of apples this year and the children",
          "have been picking them every afternoon after school.",
          "Father says the roof will be mended before the winter rains.",
          "We hope to visit you in the spring when the roads are dry.",
          "Please write soon and tell us all your news.",
          "With much love from all of us,",
          "Elizabeth"]
NOTES = ["Meeting notes - budget review",
         "1. printing costs went up again",
         "2. ask Peter about the new supplier",
         "3. library opening hours in winter",
         "call the school before Friday",
         "order paper and ink for March",
         "bring the signed forms to the office"]
POSTER = ["Summer Music Festival",
          "Saturday the twelfth of July in the old market square",
          "Open air concerts from noon until midnight",
          "Local bands and a brass orchestra from the valley",
          "Free entrance for children and students",
          "Food stalls and lemonade all day long"]
EXHIBIT = ["Exhibit 4: the letter of the third of May", "Filed with the county records, second bundle, page 14."]
SIGN = "FIRE EXIT"  # the only words in the photo
CHART_LABELS = ["Apples", "Pears", "Plums", "Cherries"]


def _font(size: int, slanted: bool = True):
    from PIL import ImageFont

    for name in (("DejaVuSans-Oblique.ttf", "DejaVuSerif-Italic.ttf") if slanted else ("DejaVuSans.ttf",)):
        for folder in ("", "/usr/share/fonts/truetype/dejavu/"):
            try:
                return ImageFont.truetype(folder + name, size)
            except OSError:
                continue
    return ImageFont.load_default(size)


def handwriting(lines: list[str], size: tuple[int, int] = PX, font_px: int = 32, seed: int = 7,
                top: int = 160, pitch: int = 80):
    """`lines` written by 'hand' on lined paper: a PIL RGB image."""
    from PIL import Image, ImageDraw, ImageFilter

    rng = random.Random(seed)
    page = Image.new("RGB", size, (250, 246, 232))
    draw = ImageDraw.Draw(page)
    for y in range(top + 12, size[1] - 80, pitch):  # the paper's ruled lines, faint blue
        draw.line([(60, y), (size[0] - 60, y)], fill=(200, 214, 236), width=2)
    font = _font(font_px)
    for i, line in enumerate(lines):
        x, base = 120 + rng.randint(-10, 10), top + i * pitch
        for word in line.split():
            w = int(draw.textlength(word, font=font))
            tile = Image.new("RGBA", (w + 24, font_px * 2), (0, 0, 0, 0))
            ImageDraw.Draw(tile).text((12, font_px // 3), word, font=font, fill=(22, 38, 120, 255))
            tile = tile.rotate(rng.uniform(-3, 3), resample=Image.BICUBIC, expand=False)
            page.paste(tile, (x, base - font_px // 3 + rng.randint(-5, 5)), tile)
            x += w + int(font_px * rng.uniform(0.35, 0.6))
    return page.filter(ImageFilter.GaussianBlur(0.7))


def image_pdf(path: Path, image, page_size: tuple[float, float] = A4, box: tuple | None = None) -> Path:
    """A page holding `image` (full page, or `box` in points), and no text."""
    import pymupdf

    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=85)
    doc = pymupdf.open()
    page = doc.new_page(width=page_size[0], height=page_size[1])
    page.insert_image(pymupdf.Rect(*(box or (0, 0, *page_size))), stream=buf.getvalue())
    doc.save(path)
    return path


def letter_pdf(path: Path) -> Path:
    """A scanned handwritten letter: one full-page image, no text layer."""
    return image_pdf(path, handwriting(LETTER))


def notes_pdf(path: Path) -> Path:
    """A scanned page of handwritten notes: short lines, a wider hand, much paper left blank."""
    return image_pdf(path, handwriting(NOTES, font_px=44, seed=3, top=220, pitch=120))


def exhibit_pdf(path: Path) -> Path:
    """A typed heading over the image of a handwritten letter that covers most of the page, and a
    typed line under it: the page's whole text layer."""
    import pymupdf

    image = handwriting(LETTER, size=(1100, 1300), font_px=28, top=90, pitch=70)
    image_pdf(path, image, box=(40, 150, 555, 710))
    doc = pymupdf.open(path)
    doc[0].insert_text((50, 130), EXHIBIT[0], fontsize=14)  # under the top zone, where a running head would be
    doc[0].insert_text((50, 730), EXHIBIT[1], fontsize=11)
    doc.saveIncr()
    return path


FOOTER = "Tickets at the town hall from the first of June, and at the gate on the day."


def poster_pdf(path: Path, footer: str = "") -> Path:
    """A poster whose words are vector outlines (no text layer): typeset with PyMuPDF, written
    out as SVG with text as paths, and read back as a PDF; `footer`: one line of real text under
    them (then the page has a text layer, with only that line in it)."""
    import pymupdf

    src = pymupdf.open()
    page = src.new_page(width=A4[0], height=A4[1])
    page.draw_rect(pymupdf.Rect(30, 30, A4[0] - 30, A4[1] - 30), color=(0.8, 0.2, 0.1), width=4)
    page.insert_text((60, 140), POSTER[0], fontsize=36, fontname="hebo")
    for i, line in enumerate(POSTER[1:]):
        page.insert_text((60, 240 + 60 * i), line, fontsize=16, fontname="helv")
    svg = page.get_svg_image(text_as_path=True)
    pdf = pymupdf.open(stream=pymupdf.open(stream=svg.encode(), filetype="svg").convert_to_pdf(), filetype="pdf")
    if footer:  # under the drawn lines, above the bottom zone (where it would be a running footer)
        pdf[0].insert_text((60, 620), footer, fontsize=10)
    pdf.save(path)
    return path


def photo_pdf(path: Path) -> Path:
    """A photo (sky, a wall, a door, noise) with one small sign in it: a figure, whatever OCR reads."""
    import numpy as np
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(5)
    w, h = PX
    sky = np.linspace(90, 220, h)[:, None, None] * np.array([0.55, 0.7, 1.0])[None, None, :]
    pixels = np.broadcast_to(sky, (h, w, 3)).copy()
    pixels[h // 2:] = (120, 104, 92)  # a brick wall
    pixels += rng.normal(0, 14, pixels.shape)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype("uint8"))
    draw = ImageDraw.Draw(image)
    draw.rectangle([520, 1000, 760, 1650], fill=(70, 50, 40))  # a door
    draw.ellipse([900, 150, 1080, 330], fill=(250, 230, 150))  # the sun
    draw.rectangle([540, 900, 740, 960], fill=(20, 140, 60))  # the sign over the door
    draw.text((556, 910), SIGN, font=_font(34, slanted=False), fill=(255, 255, 255))
    return image_pdf(path, image)


def chart(size: tuple[int, int] = PX):
    """A bar chart: axes, four bars, tick numbers and labels, a title."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    font = _font(30, slanted=False)
    x0, y0, x1, y1 = 200, 300, size[0] - 120, size[1] - 300
    draw.line([(x0, y0), (x0, y1), (x1, y1)], fill="black", width=4)
    for k, value in enumerate(range(0, 50, 10)):
        y = y1 - (y1 - y0) * value / 40
        draw.line([(x0 - 15, y), (x0, y)], fill="black", width=3)
        draw.text((x0 - 70, y - 18), str(value), font=font, fill="black")
    step = (x1 - x0) // len(CHART_LABELS)
    for k, (label, value) in enumerate(zip(CHART_LABELS, (32, 18, 25, 38))):
        left = x0 + k * step + 40
        draw.rectangle([left, y1 - (y1 - y0) * value / 40, left + step - 80, y1], fill=(60, 110, 180))
        draw.text((left, y1 + 20), label, font=font, fill="black")
    draw.text((x0, y0 - 120), "Fruit sold", font=_font(40, slanted=False), fill="black")
    return image


def chart_pdf(path: Path) -> Path:
    """A page that is one image of a bar chart (a scanned figure page)."""
    return image_pdf(path, chart())
