"""XLSX output with openpyxl: one worksheet per entry of `sheets`, typed cells."""

import datetime

from openpyxl import Workbook
from openpyxl.cell.cell import TYPE_STRING
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

DATE_FORMAT = "yyyy-mm-dd"
DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
BOLD = Font(bold=True)


def write(spec, out):
    wb = Workbook()
    wb.remove(wb.active)
    props = wb.properties
    props.title = spec.title
    props.creator = spec.metadata["author"] or None
    props.lastModifiedBy = spec.metadata["author"] or None
    props.subject = spec.metadata["subject"] or None
    props.keywords = ", ".join(spec.metadata["keywords"]) or None

    for sheet in spec.sheets:
        ws = wb.create_sheet(title=sheet["name"])
        for r, row in enumerate(sheet["rows"], start=1):
            for c, cell in enumerate(row, start=1):
                if cell is None:
                    continue
                _set(ws.cell(row=r, column=c), cell, bold=sheet["header"] and r == 1)
        widths = sheet["column_widths"]
        if not widths and sheet["rows"]:
            widths = _auto_widths(sheet["rows"])
        for c, w in enumerate(widths, start=1):
            if w is not None:
                ws.column_dimensions[get_column_letter(c)].width = w
        if sheet["header"] and sheet["rows"]:
            ws.freeze_panes = "A2"
    wb.save(out)


def _set(target, cell, bold):
    t, v = cell["type"], cell["value"]
    if t == "string":
        target.value = v
        target.data_type = TYPE_STRING  # a string that starts with '=' stays text
    elif t == "date":
        target.value = v
        target.number_format = DATETIME_FORMAT if isinstance(v, datetime.datetime) else DATE_FORMAT
    else:  # number, bool, formula ('=...' is stored as a formula by openpyxl)
        target.value = v
    if cell["number_format"]:
        target.number_format = cell["number_format"]
    if bold or cell["bold"]:
        target.font = BOLD


def _auto_widths(rows):
    """Column widths from the longest value (capped), when the spec gives none."""
    widths = {}
    for row in rows[:500]:
        for c, cell in enumerate(row):
            if cell is None:
                continue
            v = cell["value"]
            if cell["type"] == "formula":
                n = 12
            elif cell["type"] == "date":
                n = 19 if isinstance(v, datetime.datetime) else 11
            else:
                n = len(str(v))
            widths[c] = max(widths.get(c, 8), min(n + 2, 60))
    return [widths.get(c) for c in range(max(widths, default=-1) + 1)]
