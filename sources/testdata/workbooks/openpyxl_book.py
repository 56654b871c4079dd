#!/usr/bin/python3
"""Writes openpyxl.xlsx (a normal workbook) and openpyxl-write-only.xlsx (openpyxl's
write-only mode, which streams rows) from rows.json, as a Python user would: dates and
date-times as datetime values with a number format, numbers as numbers, text as str."""
import datetime, json
import openpyxl
from openpyxl.cell import WriteOnlyCell

data = json.load(open("rows.json", encoding="utf-8"))
FORMATS = {"date": "yyyy-mm-dd", "datetime": "yyyy-mm-dd hh:mm:ss"}

def value(kind, v):
    if v is None:
        return None
    if kind == "date":
        return datetime.date.fromisoformat(v)
    if kind == "datetime":
        return datetime.datetime.fromisoformat(v)
    return v

def normal(path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = data["sheet"]
    ws.append([c["name"] for c in data["columns"]])
    for row in data["rows"]:
        ws.append([value(c["type"], v) for c, v in zip(data["columns"], row)])
        for c, cell in zip(data["columns"], ws[ws.max_row]):
            if cell.value is not None and c["type"] in FORMATS:
                cell.number_format = FORMATS[c["type"]]
    wb.save(path)

def write_only(path):
    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet(data["sheet"])
    ws.append([c["name"] for c in data["columns"]])
    for row in data["rows"]:
        cells = []
        for c, v in zip(data["columns"], row):
            cell = WriteOnlyCell(ws, value=value(c["type"], v))
            if v is not None and c["type"] in FORMATS:
                cell.number_format = FORMATS[c["type"]]
            cells.append(cell)
        ws.append(cells)
    wb.save(path)

normal("openpyxl.xlsx")
write_only("openpyxl-write-only.xlsx")
print("openpyxl", openpyxl.__version__)
