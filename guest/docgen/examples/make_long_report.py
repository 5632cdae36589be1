#!/usr/bin/python3
"""Writes a docgen spec for a long report (about 10,000 words by default), for load tests:

    make_long_report.py [--words N] [--rows N] [--out FILE]     (default: stdout)

The text is pseudo-random but deterministic (fixed seed). The report has level-1 sections with
level-2/3 subsections, paragraphs with bold and italic runs, bullet and numbered lists (nested), a
table per section, the example chart (embedded as base64) every third section, page breaks, and a
`sheets` list with a data sheet of N typed rows (strings, numbers, booleans, dates, formulas).
The word count (of all text in blocks) is printed on stderr.
"""

import argparse
import base64
import datetime
import json
import os
import random
import sys

WORDS = (
    "sandbox agent kernel virtual machine snapshot restore memory page guest host device queue "
    "request response latency throughput median percentile budget policy network egress proxy "
    "credential token document report spreadsheet slide table figure chart summary analysis "
    "result measure sample baseline regression pool warm cold start boot image file system "
    "overlay layer read write isolation boundary syscall filter namespace cgroup limit quota "
    "schedule cluster region tenant customer workload task session pause resume clone fork "
    "the a of and to in for with on by from under over across within between during after "
    "before while because although quickly reliably safely cheaply carefully consistently "
    "improves reduces increases measures validates copies destroys starts stops tracks reports "
    "fast small large secure isolated disposable shared private stable predictable efficient"
).split()


def sentence(rng, n):
    words = [rng.choice(WORDS) for _ in range(n)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def paragraph(rng, n_words):
    """A paragraph of about n_words words, with a bold and an italic run."""
    sentences, count = [], 0
    while count < n_words:
        k = rng.randint(8, 18)
        sentences.append(sentence(rng, k))
        count += k
    text = " ".join(sentences)
    words = text.split(" ")
    if len(words) > 12:
        i = rng.randint(1, len(words) // 2)
        j = rng.randint(len(words) // 2 + 1, len(words) - 3)
        return {"type": "paragraph", "runs": [
            {"text": " ".join(words[:i]) + " "},
            {"text": " ".join(words[i:i + 2]), "bold": True},
            {"text": " " + " ".join(words[i + 2:j]) + " "},
            {"text": " ".join(words[j:j + 2]), "italic": True},
            {"text": " " + " ".join(words[j + 2:])},
        ]}
    return {"type": "paragraph", "text": text}


def build(target_words, n_rows, chart_b64):
    rng = random.Random(20261130)
    blocks = []
    section = 0
    while count_words(blocks) < target_words:
        section += 1
        blocks.append({"type": "heading", "level": 1, "text": f"Section {section}: " + sentence(rng, 4)[:-1]})
        blocks.append(paragraph(rng, 120))
        for sub in range(1, 4):
            blocks.append({"type": "heading", "level": 2, "text": f"{section}.{sub} " + sentence(rng, 3)[:-1]})
            blocks.append(paragraph(rng, 110))
            blocks.append(paragraph(rng, 90))
            if sub == 2:
                blocks.append({"type": "list", "ordered": bool(section % 2), "items": [
                    sentence(rng, 7),
                    {"text": sentence(rng, 6), "list": {"ordered": False, "items": [
                        sentence(rng, 5), sentence(rng, 5)]}},
                    sentence(rng, 8),
                ]})
            if sub == 3:
                blocks.append({"type": "heading", "level": 3, "text": "Details " + sentence(rng, 2)[:-1]})
                blocks.append(paragraph(rng, 70))
        blocks.append({
            "type": "table", "caption": f"Table {section}: measurements",
            "header": ["Run", "Sandboxes", "Median (ms)", "p99 (ms)", "Notes"],
            "rows": [[f"R{section}-{r}", rng.randint(100, 9999), round(rng.uniform(20, 80), 1),
                      round(rng.uniform(80, 300), 1), sentence(rng, 3)] for r in range(1, 9)],
        })
        if chart_b64 and section % 3 == 1:
            blocks.append({"type": "image", "data": chart_b64, "width_cm": 10,
                           "caption": f"Figure {section}: sandboxes per quarter"})
        if section % 4 == 0:
            blocks.append({"type": "page_break"})

    start = datetime.date(2026, 1, 1)
    rows = [["Day", "Region", "Sandboxes", "Median start (ms)", "Healthy", "Per hour"]]
    for i in range(n_rows):
        r = i + 2
        rows.append([
            {"type": "date", "value": (start + datetime.timedelta(days=i)).isoformat()},
            rng.choice(["eu-west", "us-east", "ap-south"]),
            rng.randint(1000, 90000),
            round(rng.uniform(20, 90), 2),
            rng.random() > 0.05,
            f"=C{r}/24",
        ])
    last = n_rows + 1
    rows.append(["Total", None, f"=SUM(C2:C{last})", f"=AVERAGE(D2:D{last})",
                 f"=COUNTIF(E2:E{last},TRUE)", f"=SUM(F2:F{last})"])
    spec = {
        "title": "Sandbox Fleet Annual Review",
        "metadata": {"author": "docgen load test", "subject": "A long generated report",
                     "keywords": ["load test", "long report"]},
        "blocks": blocks,
        "sheets": [{"name": "Daily", "header": True, "column_widths": [12, 10, 12, 18, 9, 10],
                    "rows": rows}],
    }
    return spec


def count_words(blocks):
    n = 0
    for b in blocks:
        n += _words_in(b)
    return n


def _words_in(obj):
    if isinstance(obj, str):
        return len(obj.split())
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return 1
    if isinstance(obj, list):
        return sum(_words_in(x) for x in obj)
    if isinstance(obj, dict):
        return sum(_words_in(v) for k, v in obj.items() if k in ("text", "runs", "items", "list",
                                                                   "header", "rows", "caption"))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--words", type=int, default=10000, help="target word count (default 10000)")
    p.add_argument("--rows", type=int, default=2000, help="rows in the data sheet (default 2000)")
    p.add_argument("--out", help="output file (default: stdout)")
    args = p.parse_args()
    chart = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chart.png")
    chart_b64 = None
    if os.path.isfile(chart):
        with open(chart, "rb") as f:
            chart_b64 = base64.b64encode(f.read()).decode("ascii")
    spec = build(args.words, args.rows, chart_b64)
    text = json.dumps(spec, indent=1) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print(f"make_long_report: {count_words(spec['blocks'])} words in {len(spec['blocks'])} blocks, "
          f"{args.rows} sheet rows", file=sys.stderr)


if __name__ == "__main__":
    main()
