#!/usr/bin/python3
"""Writes rows.csv: the rows of rows.json as text, as a workbook reader should show them
(dates as ISO dates, date-times as ISO date-times, numbers with all their digits, booleans
as TRUE/FALSE, no value as an empty field)."""
import csv, json

def text(kind, v):
    if v is None:
        return ""
    if kind == "bool":
        return "TRUE" if v else "FALSE"
    if kind == "number":
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return format(v, "f").rstrip("0") if isinstance(v, float) and "e" in repr(v) else str(v)
    return v

data = json.load(open("rows.json", encoding="utf-8"))
with open("rows.csv", "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow([c["name"] for c in data["columns"]])
    for row in data["rows"]:
        w.writerow([text(c["type"], v) for c, v in zip(data["columns"], row)])
