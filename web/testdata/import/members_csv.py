#!/usr/bin/python3
"""Writes medlemmer-1252.csv with Python's csv module, as a Windows program set to Norwegian
would save a member list: semicolons between fields (the comma is the decimal sign there),
Windows-1252 (no byte-order mark), CRLF line ends. The browser test of the import page for CSV
(web/import_browser_test.go, TestImportCSVFromTheBrowser) uploads it: the encoding and the
delimiter to be found, letters outside ASCII that must arrive whole, a column ("Notat") to be
ignored by hand, and a row whose e-mail address is no address. Run: /usr/bin/python3 members_csv.py"""
import csv
import sys

rows = [
    ("E-post", "Fornavn", "Etternavn", "Postnummer", "Notat"),
    ("bjorn@example.no", "Bjørn", "Ødegård", "0150", "ringte i mai"),
    ("aase@example.no", "Åse", "Bækkelund", "5003", "vil ha papir"),
    ("ikke-en-epost", "Per", "Feil", "9999", ""),
    ("lise@example.no", "Lise", "Berg", "7010", "styremedlem"),
]

with open("medlemmer-1252.csv", "w", encoding="cp1252", newline="") as f:
    w = csv.writer(f, delimiter=";", lineterminator="\r\n")
    w.writerows(rows)
print("python", sys.version.split()[0], "csv module")
