#!/usr/bin/python3
"""Writes medlemmer.xlsx with openpyxl, as a Python user exporting a member register would:
a "Medlemmer" sheet with a title row and a blank row above the header, then the members.
The browser test of the import page (web/import_browser_test.go) uploads it: a header on row
3 to be found, a column ("Arbeidsgiver") no mapping knows by name, a row with an e-mail address
that is no address and a phone that is no phone (a reject with two reasons), a member whose
name is markup and one whose phone is (both must show as text, the second in a reject), and a
column whose name is markup (not mapped: the run's page names it among the columns not sent). Run: /usr/bin/python3 members_book.py"""
import openpyxl

rows = [
    ("kari.nordmann@example.no", "Kari", "Nordmann", "+4791234567", "Nordmann Rør AS"),
    ("hacker@example.no", "<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "", "<b>Bold</b> AS"),
    ("ola@example.no", "Ola", "Hansen", "", "Fjord Fisk"),
    ("ikke-en-epost", "Per", "Feil", "12ab", "Feil & Co"),
    ("aase@example.no", "Åse", "Bækkelund", "+4740000001", ""),
    ("lise@example.no", "Lise", "Berg", "+4798765432", "Berg Bygg"),
    ("eve@example.no", "Eve", "Angrep", "<img src=x onerror=alert(3)>", ""),
]

wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Medlemmer"
ws.append(["Medlemsliste, eksportert fra medlemsregisteret"])
ws.append([])
ws.append(["E-post", "Fornavn", "Etternavn", "Mobil", "Arbeidsgiver", "<svg onload=alert(4)>"])
for r in rows:
    ws.append([v if v != "" else None for v in r] + ["x"])
wb.save("medlemmer.xlsx")
print("openpyxl", openpyxl.__version__)
