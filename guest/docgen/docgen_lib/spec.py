"""Loading and validating a docgen spec.

validate() checks the whole spec and returns a normalised copy; every problem is reported as a
SpecError whose `path` is a JSON path into the spec (``blocks[3].rows[1]``) and whose message says
why. The normalised form is what the writers consume:

  Spec.title: str
  Spec.metadata: {"author": str|None, "subject": str|None, "keywords": [str]}
  Spec.blocks: list of dicts, each with "type" and:
    heading    level (1-3), text
    paragraph  runs: [{"text", "bold", "italic"}]
    list       ordered, items: [{"runs", "list": nested list dict or None}]
    table      header: [str], rows: [[str]], caption: str|None
    image      data: bytes, kind: "png"|"jpeg", width_px, height_px, width_cm: float|None,
               caption: str|None, source: str (the path or "base64 data", for messages)
    page_break (nothing else)
  Spec.sheets: list of {"name", "rows": [[cell]], "column_widths": [float|None], "header": bool}
    cell: None or {"type": "string"|"number"|"bool"|"date"|"formula", "value", "number_format",
                   "bold"}  (a date's value is a datetime.date or datetime.datetime)
"""

import base64
import binascii
import datetime
import json
import math
import os
import re
import struct

MAX_HEADING_LEVEL = 3
MAX_LIST_DEPTH = 3
MAX_IMAGE_WIDTH_CM = 50.0
MAX_COLUMN_WIDTH = 255.0
CELL_TYPES = ("string", "number", "bool", "date", "formula")
BLOCK_TYPES = ("heading", "paragraph", "list", "table", "image", "page_break")
SHEET_NAME_FORBIDDEN = set('[]:*?/\\')


class SpecError(Exception):
    """An invalid spec: `path` is where (a JSON path, "" for the whole spec), `reason` is why."""

    def __init__(self, path, reason):
        super().__init__(f"{path or '(spec)'}: {reason}")
        self.path = path
        self.reason = reason


class SpecErrors(Exception):
    """Every problem found in one spec, in document order."""

    def __init__(self, errors):
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


class Spec:
    def __init__(self, title, metadata, blocks, sheets, base_dir):
        self.title = title
        self.metadata = metadata
        self.blocks = blocks
        self.sheets = sheets
        self.base_dir = base_dir


def load(path):
    """Reads a spec file ("-" for stdin) and returns (parsed JSON, directory for relative paths)."""
    try:
        if path == "-":
            import sys
            text = sys.stdin.read()
            base_dir = os.getcwd()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            base_dir = os.path.dirname(os.path.abspath(path))
    except FileNotFoundError:
        raise SpecErrors([SpecError("", f"spec file {path} not found")])
    except (OSError, UnicodeDecodeError) as e:
        raise SpecErrors([SpecError("", f"cannot read spec file {path}: {e}")])
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise SpecErrors([SpecError("", f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}")])
    except ValueError as e:
        raise SpecErrors([SpecError("", f"not valid JSON: {e}")])
    return data, base_dir


def _reject_constant(name):
    raise ValueError(f"{name} is not allowed in a spec")


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Validator:
    def __init__(self, base_dir, fmt):
        self.base_dir = base_dir
        self.fmt = fmt
        self.errors = []

    def error(self, path, reason):
        self.errors.append(SpecError(path, reason))

    # --- helpers -----------------------------------------------------------------------------
    def check_fields(self, obj, path, required, optional):
        ok = True
        for key in required:
            if key not in obj:
                self.error(_join(path, key), "required field is missing")
                ok = False
        allowed = set(required) | set(optional)
        for key in obj:
            if key not in allowed:
                self.error(_join(path, key),
                           f"unknown field (allowed here: {', '.join(sorted(allowed))})")
                ok = False
        return ok

    def string(self, obj, key, path, required=False, nonempty=False, default=None):
        if key not in obj:
            if required:
                self.error(_join(path, key), "required field is missing")
            return default
        value = obj[key]
        if not isinstance(value, str):
            self.error(_join(path, key), f"must be a string, not {_type_name(value)}")
            return default
        if nonempty and not value.strip():
            self.error(_join(path, key), "must not be empty")
            return default
        return value

    def boolean(self, obj, key, path, default=False):
        if key not in obj:
            return default
        value = obj[key]
        if not isinstance(value, bool):
            self.error(_join(path, key), f"must be true or false, not {_type_name(value)}")
            return default
        return value

    def array(self, obj, key, path, required=False):
        if key not in obj:
            if required:
                self.error(_join(path, key), "required field is missing")
            return None
        value = obj[key]
        if not isinstance(value, list):
            self.error(_join(path, key), f"must be an array, not {_type_name(value)}")
            return None
        return value

    # --- top level -----------------------------------------------------------------------------
    def spec(self, data):
        if not isinstance(data, dict):
            self.error("", f"the spec must be a JSON object, not {_type_name(data)}")
            return None
        self.check_fields(data, "", ["title"], ["$schema", "metadata", "blocks", "sheets"])
        title = self.string(data, "title", "", nonempty=True)
        metadata = self.metadata(data.get("metadata"), "metadata")
        blocks = []
        raw_blocks = self.array(data, "blocks", "")
        if raw_blocks is not None:
            for i, block in enumerate(raw_blocks):
                b = self.block(block, f"blocks[{i}]")
                if b is not None:
                    blocks.append(b)
        sheets = []
        raw_sheets = self.array(data, "sheets", "")
        if raw_sheets is not None:
            names = {}
            for i, sheet in enumerate(raw_sheets):
                s = self.sheet(sheet, f"sheets[{i}]")
                if s is None:
                    continue
                key = s["name"].lower()
                if key in names:
                    self.error(f"sheets[{i}].name",
                               f"duplicate sheet name {s['name']!r} (also sheets[{names[key]}]; "
                               "names are compared without case)")
                else:
                    names[key] = i
                sheets.append(s)
        if self.fmt == "xlsx" and not self.errors:
            if raw_sheets is not None and not raw_sheets:
                self.error("sheets", "must hold at least one sheet for .xlsx output")
            elif raw_sheets is None:
                sheets = _sheets_from_tables(blocks)
                if not sheets:
                    self.error("sheets", "required for .xlsx output (or at least one table block "
                                         "to turn into sheets)")
        if self.errors:
            return None
        return Spec(title, metadata, blocks, sheets, self.base_dir)

    def metadata(self, meta, path):
        out = {"author": None, "subject": None, "keywords": []}
        if meta is None:
            return out
        if not isinstance(meta, dict):
            self.error(path, f"must be an object, not {_type_name(meta)}")
            return out
        self.check_fields(meta, path, [], ["author", "subject", "keywords"])
        out["author"] = self.string(meta, "author", path)
        out["subject"] = self.string(meta, "subject", path)
        if "keywords" in meta:
            kw = meta["keywords"]
            if isinstance(kw, str):
                out["keywords"] = [k.strip() for k in kw.split(",") if k.strip()]
            elif isinstance(kw, list):
                for i, k in enumerate(kw):
                    if not isinstance(k, str):
                        self.error(f"{path}.keywords[{i}]", f"must be a string, not {_type_name(k)}")
                    elif k.strip():
                        out["keywords"].append(k.strip())
            else:
                self.error(f"{path}.keywords",
                           f"must be an array of strings or a comma-separated string, not {_type_name(kw)}")
        return out

    # --- blocks --------------------------------------------------------------------------------
    def block(self, block, path):
        if not isinstance(block, dict):
            self.error(path, f"a block must be an object, not {_type_name(block)}")
            return None
        btype = block.get("type")
        if "type" not in block:
            self.error(f"{path}.type", f"required field is missing (one of: {', '.join(BLOCK_TYPES)})")
            return None
        if btype not in BLOCK_TYPES:
            self.error(f"{path}.type",
                       f"unknown block type {btype!r} (expected one of: {', '.join(BLOCK_TYPES)})")
            return None
        n_errors = len(self.errors)
        out = getattr(self, "block_" + btype)(block, path)
        if len(self.errors) != n_errors:
            return None
        out["type"] = btype
        return out

    def block_heading(self, block, path):
        self.check_fields(block, path, ["type", "level", "text"], [])
        level = block.get("level")
        if "level" in block and not (isinstance(level, int) and not isinstance(level, bool)
                                     and 1 <= level <= MAX_HEADING_LEVEL):
            self.error(f"{path}.level", f"must be 1, 2 or 3, not {json.dumps(level)}")
        text = self.string(block, "text", path, nonempty=True)
        return {"level": level, "text": _one_line(text or "")}

    def block_paragraph(self, block, path):
        self.check_fields(block, path, ["type"], ["text", "runs"])
        return {"runs": self.runs(block, path)}

    def runs(self, obj, path):
        """Reads `text` or `runs` (exactly one) of a paragraph or list item."""
        if ("text" in obj) == ("runs" in obj):
            self.error(path, "needs exactly one of 'text' (a string) or 'runs' (an array of runs)")
            return []
        if "text" in obj:
            text = self.string(obj, "text", path)
            return [] if text is None else [{"text": text, "bold": False, "italic": False}]
        runs = self.array(obj, "runs", path)
        if runs is None:
            return []
        if not runs:
            self.error(f"{path}.runs", "must hold at least one run")
        out = []
        for i, run in enumerate(runs):
            rpath = f"{path}.runs[{i}]"
            if isinstance(run, str):
                out.append({"text": run, "bold": False, "italic": False})
                continue
            if not isinstance(run, dict):
                self.error(rpath, f"a run must be an object or a string, not {_type_name(run)}")
                continue
            self.check_fields(run, rpath, ["text"], ["bold", "italic"])
            text = self.string(run, "text", rpath)
            out.append({"text": text or "", "bold": self.boolean(run, "bold", rpath),
                        "italic": self.boolean(run, "italic", rpath)})
        return out

    def block_list(self, block, path):
        self.check_fields(block, path, ["type", "items"], ["ordered"])
        return self.list_body(block, path, 1)

    def list_body(self, obj, path, depth):
        ordered = self.boolean(obj, "ordered", path)
        items = self.array(obj, "items", path, required=True)
        out_items = []
        if items is not None:
            if not items:
                self.error(f"{path}.items", "must hold at least one item")
            for i, item in enumerate(items):
                ipath = f"{path}.items[{i}]"
                if isinstance(item, str):
                    out_items.append({"runs": [{"text": item, "bold": False, "italic": False}],
                                      "list": None})
                    continue
                if not isinstance(item, dict):
                    self.error(ipath, f"a list item must be a string or an object, not {_type_name(item)}")
                    continue
                self.check_fields(item, ipath, [], ["text", "runs", "list"])
                runs = self.runs(item, ipath)
                sub = None
                if "list" in item:
                    lpath = f"{ipath}.list"
                    if depth >= MAX_LIST_DEPTH:
                        self.error(lpath, f"lists nest at most {MAX_LIST_DEPTH} levels deep")
                    elif not isinstance(item["list"], dict):
                        self.error(lpath, f"must be an object with 'items', not {_type_name(item['list'])}")
                    else:
                        self.check_fields(item["list"], lpath, ["items"], ["ordered"])
                        sub = self.list_body(item["list"], lpath, depth + 1)
                out_items.append({"runs": runs, "list": sub})
        return {"ordered": ordered, "items": out_items}

    def block_table(self, block, path):
        self.check_fields(block, path, ["type", "header", "rows"], ["caption"])
        caption = self.string(block, "caption", path)
        header = self.array(block, "header", path)
        out_header = []
        if header is not None:
            if not header:
                self.error(f"{path}.header", "must hold at least one column")
            out_header = [self.table_cell(c, f"{path}.header[{j}]") for j, c in enumerate(header)]
        rows = self.array(block, "rows", path)
        out_rows = []
        if rows is not None:
            for i, row in enumerate(rows):
                rpath = f"{path}.rows[{i}]"
                if not isinstance(row, list):
                    self.error(rpath, f"a row must be an array of cells, not {_type_name(row)}")
                    continue
                if header is not None and header and len(row) != len(header):
                    self.error(rpath, f"row has {len(row)} cell{'s' if len(row) != 1 else ''}, "
                                      f"the header has {len(header)}")
                    continue
                out_rows.append([self.table_cell(c, f"{rpath}[{j}]") for j, c in enumerate(row)])
        return {"header": out_header, "rows": out_rows, "caption": caption}

    def table_cell(self, cell, path):
        if cell is None:
            return ""
        if isinstance(cell, bool):
            return "true" if cell else "false"
        if isinstance(cell, str):
            return cell
        if _is_number(cell):
            return _format_number(cell)
        self.error(path, f"a table cell must be a string, number, boolean or null, not {_type_name(cell)}")
        return ""

    def block_image(self, block, path):
        self.check_fields(block, path, ["type"], ["path", "data", "width_cm", "caption"])
        caption = self.string(block, "caption", path)
        width = None
        if "width_cm" in block:
            width = block["width_cm"]
            if not _is_number(width) or not 0 < width <= MAX_IMAGE_WIDTH_CM:
                self.error(f"{path}.width_cm",
                           f"must be a number above 0 and at most {MAX_IMAGE_WIDTH_CM:g}, not {json.dumps(width)}")
                width = None
        out = {"caption": caption, "width_cm": None if width is None else float(width)}
        if ("path" in block) == ("data" in block):
            self.error(path, "needs exactly one of 'path' (an image file) or 'data' (a base64 PNG)")
            return out
        if "path" in block:
            rel = self.string(block, "path", path, nonempty=True)
            if rel is None:
                return out
            full = os.path.join(self.base_dir, rel)
            try:
                with open(full, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                self.error(f"{path}.path", f"image file not found: {full}")
                return out
            except OSError as e:
                self.error(f"{path}.path", f"cannot read image file {full}: {e.strerror}")
                return out
            source = rel
            kinds = ("png", "jpeg")
        else:
            encoded = self.string(block, "data", path, nonempty=True)
            if encoded is None:
                return out
            try:
                data = base64.b64decode(re.sub(r"\s+", "", encoded), validate=True)
            except (binascii.Error, ValueError) as e:
                self.error(f"{path}.data", f"not valid base64: {e}")
                return out
            source = "base64 data"
            kinds = ("png",)
        info = image_info(data)
        where = f"{path}.path" if "path" in block else f"{path}.data"
        if info is None or info[0] not in kinds:
            expected = " or ".join(k.upper() for k in kinds)
            self.error(where, f"not a {expected} image")
            return out
        kind, w, h = info
        if w <= 0 or h <= 0:
            self.error(where, f"image has an invalid size {w}x{h}")
            return out
        out.update({"data": data, "kind": kind, "width_px": w, "height_px": h, "source": source})
        return out

    def block_page_break(self, block, path):
        self.check_fields(block, path, ["type"], [])
        return {}

    # --- sheets --------------------------------------------------------------------------------
    def sheet(self, sheet, path):
        if not isinstance(sheet, dict):
            self.error(path, f"a sheet must be an object, not {_type_name(sheet)}")
            return None
        n_errors = len(self.errors)
        self.check_fields(sheet, path, ["name", "rows"], ["column_widths", "header"])
        name = self.string(sheet, "name", path, nonempty=True)
        if name is not None:
            bad = sorted(set(name) & SHEET_NAME_FORBIDDEN)
            if len(name) > 31:
                self.error(f"{path}.name", f"sheet names are at most 31 characters ({len(name)} given)")
            elif bad:
                self.error(f"{path}.name", f"sheet names cannot contain {' '.join(bad)}")
            elif name.startswith("'") or name.endswith("'"):
                self.error(f"{path}.name", "sheet names cannot start or end with an apostrophe")
        header = self.boolean(sheet, "header", path)
        widths = []
        raw_widths = self.array(sheet, "column_widths", path)
        if raw_widths is not None:
            for i, w in enumerate(raw_widths):
                if w is None:
                    widths.append(None)
                elif _is_number(w) and 0 < w <= MAX_COLUMN_WIDTH:
                    widths.append(float(w))
                else:
                    self.error(f"{path}.column_widths[{i}]",
                               f"must be null or a number above 0 and at most {MAX_COLUMN_WIDTH:g} "
                               f"(characters), not {json.dumps(w)}")
        rows = []
        raw_rows = self.array(sheet, "rows", path)
        if raw_rows is not None:
            for i, row in enumerate(raw_rows):
                rpath = f"{path}.rows[{i}]"
                if not isinstance(row, list):
                    self.error(rpath, f"a row must be an array of cells, not {_type_name(row)}")
                    continue
                rows.append([self.sheet_cell(c, f"{rpath}[{j}]") for j, c in enumerate(row)])
        if len(self.errors) != n_errors:
            return None
        return {"name": name, "rows": rows, "column_widths": widths, "header": header}

    def sheet_cell(self, cell, path):
        if cell is None:
            return None
        if isinstance(cell, bool):
            return _cell("bool", cell)
        if _is_number(cell):
            return _cell("number", cell)
        if isinstance(cell, str):
            return _cell("formula" if cell.startswith("=") and len(cell) > 1 else "string", cell)
        if not isinstance(cell, dict):
            self.error(path, f"a cell must be null, a boolean, a number, a string or an object "
                             f"with 'type' and 'value', not {_type_name(cell)}")
            return None
        self.check_fields(cell, path, ["type", "value"], ["number_format", "bold"])
        ctype = cell.get("type")
        if "type" in cell and ctype not in CELL_TYPES:
            self.error(f"{path}.type", f"unknown cell type {json.dumps(ctype)} "
                                       f"(expected one of: {', '.join(CELL_TYPES)})")
            return None
        if "type" not in cell or "value" not in cell:
            return None
        value = cell["value"]
        vpath = f"{path}.value"
        if ctype == "string":
            if not isinstance(value, str):
                self.error(vpath, f"a string cell needs a string value, not {_type_name(value)}")
        elif ctype == "number":
            if not _is_number(value):
                self.error(vpath, f"a number cell needs a finite number, not {_type_name(value)}")
        elif ctype == "bool":
            if not isinstance(value, bool):
                self.error(vpath, f"a bool cell needs true or false, not {_type_name(value)}")
        elif ctype == "formula":
            if not isinstance(value, str) or not value.startswith("=") or len(value) < 2:
                self.error(vpath, "a formula cell needs a string starting with '=' (e.g. \"=SUM(B2:B9)\")")
        elif ctype == "date":
            parsed = _parse_date(value)
            if parsed is None:
                self.error(vpath, "a date cell needs an ISO date string: YYYY-MM-DD or "
                                  f"YYYY-MM-DDTHH:MM[:SS], not {json.dumps(value)}")
            value = parsed
        number_format = self.string(cell, "number_format", path, nonempty=True)
        bold = self.boolean(cell, "bold", path)
        return _cell(ctype, value, number_format, bold)


def _cell(ctype, value, number_format=None, bold=False):
    return {"type": ctype, "value": value, "number_format": number_format, "bold": bold}


def _parse_date(value):
    if not isinstance(value, str):
        return None
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return datetime.date.fromisoformat(value)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?", value):
            return datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return None


def _sheets_from_tables(blocks):
    """XLSX output without `sheets`: one sheet per table block, header row in bold."""
    sheets = []
    used = set()
    for n, b in enumerate(x for x in blocks if x["type"] == "table"):
        base = (b["caption"] or f"Table {n + 1}")
        base = "".join("_" if ch in SHEET_NAME_FORBIDDEN else ch for ch in base).strip("'")[:31] \
            or f"Table {n + 1}"
        name, k = base, 2
        while name.lower() in used:
            suffix = f" ({k})"
            name = base[:31 - len(suffix)] + suffix
            k += 1
        used.add(name.lower())
        rows = [[_table_text_cell(c) for c in b["header"]]]
        rows += [[_table_text_cell(c) for c in r] for r in b["rows"]]
        sheets.append({"name": name, "rows": rows, "column_widths": [], "header": True})
    return sheets


# Table text that is plainly a number ("1200", "-3.5", "1,200"; not "007" or "1.2.3") becomes a
# number cell when tables are turned into sheets.
_NUMBER_TEXT = re.compile(r"-?(0|[1-9]\d{0,2}(,\d{3})+|[1-9]\d*)(\.\d+)?")


def _table_text_cell(text):
    if text == "":
        return None
    if _NUMBER_TEXT.fullmatch(text):
        plain = text.replace(",", "")
        return _cell("number", float(plain) if "." in plain else int(plain))
    return _cell("string", text)


def _format_number(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def _one_line(text):
    return " ".join(text.split())


def _join(path, key):
    return f"{path}.{key}" if path else key


def image_info(data):
    """Returns (kind, width, height) for PNG and JPEG data, or None."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24 and data[12:16] == b"IHDR":
        w, h = struct.unpack(">II", data[16:24])
        return ("png", w, h)
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                return None
            marker = data[i + 1]
            if marker == 0xFF:
                i += 1
                continue
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            length = struct.unpack(">H", data[i + 2:i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return ("jpeg", w, h)
            i += 2 + length
        return None
    return None


def validate(data, base_dir, fmt=None):
    """Validates parsed spec JSON; returns a Spec or raises SpecErrors. `fmt` is the output format
    ("docx", "pptx", "xlsx", "pdf") for format-specific checks, or None."""
    v = _Validator(base_dir, fmt)
    spec = v.spec(data)
    if v.errors:
        raise SpecErrors(v.errors)
    return spec
