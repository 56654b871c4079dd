#!/usr/bin/python3
"""Writes medlemmer.xlsx with openpyxl, as a Python user exporting a member register would:
a "Medlemmer" sheet with a title row and a blank row above the header, then the members.
The browser test of the import page (web/import_browser_test.go) uploads it: a header on row
3 to be found, a column ("Arbeidsgiver") no mapping knows by name, a row with an e-mail address
that is no address and a phone that is no phone (a reject with two reasons), and a member whose
name is markup (it must show as text). Run: /usr/bin/python3 members_book.py"""
import openpyxl

rows = [
    ("kari.nordmann@example.no", "Kari", "Nordmann", "+4791234567", "Nordmann Rør AS"),
    ("ola@example.no", "Ola", "Hansen", "", "Fjord Fisk"),
    ("ikke-en-epost", "Per", "Feil", "12ab", "Feil & Co"),
    ("aase@example.no", "Åse", "Bækkelund", "+4740000001", ""),
    ("hacker@example.no", "<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "", "<b>Bold</b> AS"),
    ("lise@example.no", "Lise", "Berg", "+4798765432", "Berg Bygg"),
]

wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Medlemmer"
ws.append(["Medlemsliste, eksportert fra medlemsregisteret"])
ws.append([])
ws.append(["E-post", "Fornavn", "Etternavn", "Mobil", "Arbeidsgiver"])
for r in rows:
    ws.append([v if v != "" else None for v in r])
wb.save("medlemmer.xlsx")
print("openpyxl", openpyxl.__version__)
