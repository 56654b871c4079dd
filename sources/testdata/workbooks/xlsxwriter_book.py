#!/usr/bin/python3
"""Writes xlsxwriter.xlsx (shared strings) and xlsxwriter-constant-memory.xlsx (XlsxWriter's
constant_memory mode: inline strings, each row flushed as it is written) from rows.json,
with XlsxWriter's typed write methods."""
import datetime, json
import xlsxwriter

data = json.load(open("rows.json", encoding="utf-8"))

def write(path, options):
    wb = xlsxwriter.Workbook(path, options)
    ws = wb.add_worksheet(data["sheet"])
    fmt = {"date": wb.add_format({"num_format": "yyyy-mm-dd"}),
           "datetime": wb.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})}
    for col, c in enumerate(data["columns"]):
        ws.write_string(0, col, c["name"])
    for r, row in enumerate(data["rows"], start=1):
        for col, (c, v) in enumerate(zip(data["columns"], row)):
            kind = c["type"]
            if v is None:
                continue
            if kind == "text":
                ws.write_string(r, col, v)
            elif kind == "number":
                ws.write_number(r, col, v)
            elif kind == "bool":
                ws.write_boolean(r, col, v)
            elif kind == "date":
                ws.write_datetime(r, col, datetime.datetime.fromisoformat(v), fmt[kind])
            elif kind == "datetime":
                ws.write_datetime(r, col, datetime.datetime.fromisoformat(v), fmt[kind])
    wb.close()

write("xlsxwriter.xlsx", {})
write("xlsxwriter-constant-memory.xlsx", {"constant_memory": True})
print("XlsxWriter", xlsxwriter.__version__)
