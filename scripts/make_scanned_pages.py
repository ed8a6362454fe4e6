"""Generates the scanned-page fixtures in tests/fixtures/scanned/: pictures of
printed text with no text layer, in Chinese and English, for the OCR tests.

The outputs are committed; run this again only to change them:
    python3 -m venv /tmp/pil && /tmp/pil/bin/pip install pillow==11.0.0
    /tmp/pil/bin/python scripts/make_scanned_pages.py
It needs the WenQuanYi Micro Hei font (Debian fonts-wqy-microhei).
"""

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "scanned"
# A4 at 150 dpi: small files that Tesseract still reads reliably at this size of type.
PAGE = (1240, 1754)


def page(lines, size=44):
    """A white page with the lines printed from the top, slightly grey like a scan."""
    image = Image.new("L", PAGE, 250)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, size)
    y = 160
    for line in lines:
        draw.text((120, y), line, fill=20, font=font)
        y += int(size * 1.8)
    return image


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    page(["蓝喉金刚鹦鹉生活在玻利维亚的热带草原。", "它们在棕榈树的树洞里筑巢。"], size=48).save(OUT / "scan-zh.png", optimize=True)
    # Page one fills a passage of its own, so page two's text is cited as page 2.
    first = page(
        [
            "Field notes, page one.",
            "The weather was cold and wet all week, and the",
            "river rose over the lower path on Tuesday night.",
            "We counted the nests along the eastern ridge and",
            "found most of them empty after the storm passed.",
            "The volunteers repaired two hides near the lake",
            "and cleared fallen branches from the main track.",
            "Supplies ran low by Friday, so the team walked",
            "back to the village for bread, rope and batteries.",
            "Next week we will survey the western valley and",
            "compare the counts with those of last spring.",
            "Everyone agreed the new boots were worth the cost.",
        ],
        size=40,
    )
    second = page(["The blue-throated macaw nests in palm trees", "in the savannas of Bolivia."])
    first.save(OUT / "scan-en.pdf", save_all=True, append_images=[second], resolution=150)


if __name__ == "__main__":
    main()
