"""docgen command line: docgen --spec SPEC.json --out FILE.{docx,pptx,xlsx,pdf}

Exit status: 0 written; 2 invalid spec or usage (a message per problem on stderr, each starting
with the JSON path of the field); 1 the document could not be produced (e.g. pandoc failed, the
output directory is not writable). Nothing is left at --out unless the status is 0: the document
is written to a temporary file in the same directory and renamed over --out when complete.
"""

import argparse
import os
import signal
import sys
import tempfile
import time

from . import spec as specmod

FORMATS = {".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx", ".pdf": "pdf"}
EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Usage(message)


def _parser():
    p = _Parser(
        prog="docgen",
        description="Generates a DOCX, PPTX, XLSX or PDF document from a JSON spec "
                    "(see spec.schema.json and README.md next to this program).",
        epilog="Exit status: 0 written, 1 generation failed, 2 invalid spec or usage. "
               "No output file is left behind unless the status is 0.")
    p.add_argument("--spec", required=True, metavar="SPEC.json", help="the spec file ('-' for stdin)")
    p.add_argument("--out", metavar="FILE",
                   help="output file; its extension (.docx .pptx .xlsx .pdf) picks the format")
    p.add_argument("--check", action="store_true",
                   help="only validate the spec (for the format of --out when given)")
    p.add_argument("--timing", action="store_true", help="print the generation time on stderr")
    return p


def _writer(fmt):
    if fmt == "docx":
        from . import docx_writer as w
    elif fmt == "pdf":
        from . import pdf_writer as w
    elif fmt == "xlsx":
        from . import xlsx_writer as w
    else:
        from . import pptx_writer as w
    return w.write


def _invalid(messages):
    for m in messages:
        print(f"docgen: invalid spec: {m}", file=sys.stderr)
    return EXIT_INVALID


def _on_signal(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None):
    try:
        args = _parser().parse_args(argv)
    except _Usage as e:
        print(f"docgen: {e} (see docgen --help)", file=sys.stderr)
        return EXIT_INVALID
    if not args.out and not args.check:
        print("docgen: --out is required (or --check)", file=sys.stderr)
        return EXIT_INVALID
    fmt = None
    if args.out:
        ext = os.path.splitext(args.out)[1].lower()
        fmt = FORMATS.get(ext)
        if fmt is None:
            print(f"docgen: --out: unsupported extension {ext or '(none)'!r} "
                  "(expected .docx, .pptx, .xlsx or .pdf)", file=sys.stderr)
            return EXIT_INVALID

    start = time.monotonic()
    try:
        data, base_dir = specmod.load(args.spec)
        spec = specmod.validate(data, base_dir, fmt)
    except specmod.SpecErrors as e:
        return _invalid(str(err) for err in e.errors)
    if args.check:
        return EXIT_OK

    out = os.path.abspath(args.out)
    out_dir = os.path.dirname(out)
    if os.path.isdir(out):
        print(f"docgen: --out: {args.out} is a directory", file=sys.stderr)
        return EXIT_INVALID
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    tmp = None
    try:
        # The stop signals wait while the temporary file is made and named: one that came between
        # mkstemp's create and the assignment would leave a file `finally` does not know of.
        stops = {signal.SIGTERM, signal.SIGHUP}
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        try:
            fd, tmp = tempfile.mkstemp(dir=out_dir, prefix="." + os.path.basename(out) + ".",
                                       suffix=".tmp")
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        os.close(fd)
        _writer(fmt)(spec, tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
        tmp = None
    except FileNotFoundError as e:
        if not os.path.isdir(out_dir):
            print(f"docgen: --out: directory {out_dir} does not exist", file=sys.stderr)
        else:
            print(f"docgen: {fmt} generation failed: {e}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as e:
        print(f"docgen: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as e:  # a writer failed: report it in one line, no traceback
        print(f"docgen: {fmt} generation failed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    if args.timing:
        print(f"docgen: wrote {args.out} ({fmt}) in {time.monotonic() - start:.2f} s", file=sys.stderr)
    return EXIT_OK
