"""PDF output with ReportLab (platypus), DejaVu Sans embedded when installed."""

import io
import os
from xml.sax.saxutils import escape

from reportlab.lib import colors
from reportlab.lib.enums import TA_CENTER
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.platypus import (Image, KeepTogether, ListFlowable, ListItem, PageBreak, Paragraph,
                                SimpleDocTemplate, Spacer, Table, TableStyle)

FONT_DIRS = ("/usr/share/fonts/truetype/dejavu",)
FONT_FILES = {
    "regular": "DejaVuSans.ttf",
    "bold": "DejaVuSans-Bold.ttf",
    "italic": "DejaVuSans-Oblique.ttf",
    "boldItalic": "DejaVuSans-BoldOblique.ttf",
}
MARGIN = 2.2 * cm

_fonts = None


def _register_fonts():
    """Registers DejaVu Sans (Unicode text) as a family when all four faces exist; otherwise the
    built-in Helvetica family (Latin-1 only) is used."""
    global _fonts
    if _fonts is not None:
        return _fonts
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.lib.fonts import addMapping
    for d in FONT_DIRS:
        paths = {k: os.path.join(d, f) for k, f in FONT_FILES.items()}
        if all(os.path.isfile(p) for p in paths.values()):
            names = {k: "DocgenSans" + ("" if k == "regular" else "-" + k) for k in paths}
            for k, p in paths.items():
                pdfmetrics.registerFont(TTFont(names[k], p))
            addMapping("DocgenSans", 0, 0, names["regular"])
            addMapping("DocgenSans", 1, 0, names["bold"])
            addMapping("DocgenSans", 0, 1, names["italic"])
            addMapping("DocgenSans", 1, 1, names["boldItalic"])
            _fonts = names
            return _fonts
    _fonts = {"regular": "Helvetica", "bold": "Helvetica-Bold", "italic": "Helvetica-Oblique",
              "boldItalic": "Helvetica-BoldOblique"}
    return _fonts


def _styles(fonts):
    base = getSampleStyleSheet()
    regular, bold = fonts["regular"], fonts["bold"]
    s = {
        "title": ParagraphStyle("DocTitle", parent=base["Title"], fontName=bold, fontSize=22,
                                leading=27, spaceAfter=14),
        "h1": ParagraphStyle("H1", parent=base["Heading1"], fontName=bold, fontSize=17, leading=21,
                             spaceBefore=14, spaceAfter=7),
        "h2": ParagraphStyle("H2", parent=base["Heading2"], fontName=bold, fontSize=14, leading=18,
                             spaceBefore=11, spaceAfter=5),
        "h3": ParagraphStyle("H3", parent=base["Heading3"], fontName=bold, fontSize=12, leading=15,
                             spaceBefore=9, spaceAfter=4),
        "body": ParagraphStyle("Body", parent=base["BodyText"], fontName=regular, fontSize=10.5,
                               leading=14, spaceAfter=6),
        "cell": ParagraphStyle("Cell", parent=base["BodyText"], fontName=regular, fontSize=9.5,
                               leading=12),
        "cellhead": ParagraphStyle("CellHead", parent=base["BodyText"], fontName=bold, fontSize=9.5,
                                   leading=12),
        "caption": ParagraphStyle("Caption", parent=base["BodyText"], fontName=fonts["italic"],
                                  fontSize=9, leading=11, alignment=TA_CENTER, spaceBefore=3,
                                  spaceAfter=10),
        "item": ParagraphStyle("Item", parent=base["BodyText"], fontName=regular, fontSize=10.5,
                               leading=14, spaceAfter=2),
    }
    return s


def _markup(runs):
    parts = []
    for r in runs:
        t = escape(r["text"]).replace("\n", "<br/>")
        if r["bold"]:
            t = f"<b>{t}</b>"
        if r["italic"]:
            t = f"<i>{t}</i>"
        parts.append(t)
    return "".join(parts)


def write(spec, out):
    fonts = _register_fonts()
    st = _styles(fonts)
    meta = spec.metadata
    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf, pagesize=A4, leftMargin=MARGIN, rightMargin=MARGIN, topMargin=MARGIN,
        bottomMargin=MARGIN, title=spec.title, author=meta["author"] or "",
        subject=meta["subject"] or "", keywords=", ".join(meta["keywords"]),
        creator="carapace docgen",
        # Reproducible output (fixed dates and document ID) when SOURCE_DATE_EPOCH is set.
        invariant=1 if os.environ.get("SOURCE_DATE_EPOCH") else 0)
    width = doc.width
    story = [Paragraph(escape(spec.title), st["title"])]
    for block in spec.blocks:
        t = block["type"]
        if t == "heading":
            story.append(Paragraph(escape(block["text"]), st["h%d" % block["level"]]))
        elif t == "paragraph":
            story.append(Paragraph(_markup(block["runs"]), st["body"]))
        elif t == "list":
            story.append(_list(block, st, 0))
            story.append(Spacer(1, 4))
        elif t == "table":
            story.extend(_table(block, st, width))
        elif t == "image":
            story.append(_image(block, st, width, doc.height))
        elif t == "page_break":
            story.append(PageBreak())

    def footer(canvas, d):
        canvas.saveState()
        canvas.setFont(fonts["regular"], 8.5)
        canvas.setFillColor(colors.grey)
        canvas.drawCentredString(A4[0] / 2, MARGIN / 2, str(d.page))
        canvas.restoreState()

    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    with open(out, "wb") as f:
        f.write(buf.getvalue())


def _list(lst, st, depth):
    items = []
    for item in lst["items"]:
        flow = [Paragraph(_markup(item["runs"]), st["item"])]
        if item["list"] is not None:
            flow.append(_list(item["list"], st, depth + 1))
        items.append(ListItem(flow))
    if lst["ordered"]:
        fmt = ("1", "a", "i")[depth % 3]
        return ListFlowable(items, bulletType=fmt, bulletFontName=st["item"].fontName,
                            bulletFontSize=st["item"].fontSize, bulletFormat="%s.", leftIndent=18,
                            start=1)
    bullet = ("\u2022", "\u2013", "\u25e6")[depth % 3]
    return ListFlowable(items, bulletType="bullet", start=bullet, bulletFontName=st["item"].fontName,
                        bulletFontSize=st["item"].fontSize, leftIndent=14)


def _table(block, st, width):
    ncols = len(block["header"])
    data = [[Paragraph(escape(c), st["cellhead"]) for c in block["header"]]]
    for row in block["rows"]:
        data.append([Paragraph(escape(c), st["cell"]) for c in row])
    table = Table(data, colWidths=[width / ncols] * ncols, repeatRows=1)
    table.setStyle(TableStyle([
        ("GRID", (0, 0), (-1, -1), 0.5, colors.HexColor("#9a9a9a")),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e4e9f2")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("TOPPADDING", (0, 0), (-1, -1), 3),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
    ]))
    out = [Spacer(1, 4), table]
    if block["caption"]:
        out.append(Paragraph(escape(block["caption"]), st["caption"]))
    else:
        out.append(Spacer(1, 8))
    return out


def _image(block, st, width, height):
    natural = block["width_px"] * 72.0 / 96.0  # points at 96 dpi
    w = min(block["width_cm"] * cm if block["width_cm"] else natural, width)
    h = w * block["height_px"] / block["width_px"]
    max_h = height - 40
    if h > max_h:
        w, h = w * max_h / h, max_h
    img = Image(io.BytesIO(block["data"]), width=w, height=h)
    img.hAlign = "CENTER"
    parts = [img]
    if block["caption"]:
        parts.append(Paragraph(escape(block["caption"]), st["caption"]))
    return KeepTogether(parts)
