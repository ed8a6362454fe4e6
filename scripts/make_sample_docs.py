#!/usr/bin/env python3
"""Writes the binary sample documents in knowledge/guides/ (a PDF and a DOCX)
with the standard library only, so they can be regenerated and reviewed.

The PDF draws some lines with the `'` operator, as older exporters do, to
exercise Kea's normalisation of it.
"""
import zipfile
from pathlib import Path

GUIDES = Path(__file__).resolve().parent.parent / "knowledge" / "guides"

PDF_PAGES = [
    [
        "Choosing and setting up a parrot cage",
        "",
        "Size matters more than shape. The bird must be able to spread and flap",
        "its wings without touching the sides, and long cages allow short flights.",
        "",
        "Bar spacing must suit the species: about 1.2 cm for budgerigars and",
        "lovebirds, 1.5 to 2 cm for cockatiels and conures, and 2.5 cm or more",
        "with heavy gauge wire for macaws and large cockatoos.",
    ],
    [
        "Perches, toys and cleaning",
        "",
        "Use natural wood perches of several diameters to exercise the feet and",
        "avoid sore spots. Sandpaper perch covers hurt the feet and should be avoided.",
        "",
        "Clean food and water dishes every day, change cage paper every two days,",
        "and scrub the whole cage weekly with a bird-safe cleaner.",
    ],
]


def pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(path: Path) -> None:
    contents = []
    for lines in PDF_PAGES:
        ops = ["BT", "/F1 12 Tf", "16 TL", "56 780 Td", f"({pdf_escape(lines[0])}) Tj"]
        # Every following line uses the ' operator (next line, show text).
        ops += [f"({pdf_escape(line)}) '" for line in lines[1:]]
        ops.append("ET")
        contents.append("\n".join(ops).encode("latin-1"))
    write_pdf(path, contents)


def write_pdf(path: Path, contents: list) -> None:
    """A minimal PDF of one page per content stream, in Helvetica (F1)."""
    objects = []
    page_ids = []
    font_id = 3
    next_id = 4
    for content in contents:
        content_id, page_id = next_id, next_id + 1
        next_id += 2
        page_ids.append(page_id)
        objects.append((content_id, b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream"))
        objects.append((page_id, (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {content_id} 0 R "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>"
        ).encode()))
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects += [
        (1, b"<< /Type /Catalog /Pages 2 0 R >>"),
        (2, f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode()),
        (font_id, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"),
    ]
    objects.sort()
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for oid, body in objects:
        offsets[oid] = len(out)
        out += f"{oid} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for oid in range(1, len(objects) + 1):
        out += f"{offsets[oid]:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))


DOCX_BODY = [
    ("Title", "鹦鹉新手饲养指南"),
    ("Heading1", "带鸟回家的第一周"),
    (None, "新鸟到家后先让它在笼子里安静适应几天，不要频繁伸手抓它。把笼子放在家人常活动但不靠窗、不靠厨房的位置。"),
    (None, "观察它是否正常进食、饮水和排便，精神不好时尽快联系熟悉鸟类的兽医。"),
    ("Heading1", "每日照料清单"),
    ("List", "更换干净的饮水和新鲜蔬果"),
    ("List", "检查粪便的颜色和形状"),
    ("List", "至少一小时的出笼互动时间"),
    ("Heading1", "常见品种对比"),
    ("Table", [["品种", "体长", "寿命"], ["虎皮鹦鹉", "18 厘米", "5–10 年"], ["玄凤鹦鹉", "30 厘米", "15–20 年"], ["非洲灰鹦鹉", "33 厘米", "40–60 年"]]),
    ("Heading1", "什么时候该看兽医"),
    (None, "鹦鹉会本能地掩饰病痛。如果发现它蓬松着羽毛长时间不动、尾巴随呼吸上下摆动、眼鼻有分泌物或突然不吃东西，应当立即就医。"),
]

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{text}</w:t></w:r>'


def paragraph(style, text) -> str:
    if style == "List":
        props = '<w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr>'
    elif style:
        props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>'
    else:
        props = ""
    return f"<w:p>{props}{run(text)}</w:p>"


def table(rows) -> str:
    cells = lambda row: "".join(f"<w:tc><w:p>{run(c)}</w:p></w:tc>" for c in row)
    return "<w:tbl>" + "".join(f"<w:tr>{cells(r)}</w:tr>" for r in rows) + "</w:tbl>"


def make_docx(path: Path) -> None:
    body = "".join(table(t) if s == "Table" else paragraph(s, t) for s, t in DOCX_BODY)
    document = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {W}><w:body>{body}</w:body></w:document>'
    content_types = (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
        "</Types>"
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
        "</Relationships>"
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in [("[Content_Types].xml", content_types), ("_rels/.rels", rels), ("word/document.xml", document)]:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)


if __name__ == "__main__":
    make_pdf(GUIDES / "cage-setup.pdf")
    make_docx(GUIDES / "鹦鹉新手饲养指南.docx")
    print(f"wrote {GUIDES}/cage-setup.pdf and 鹦鹉新手饲养指南.docx")
