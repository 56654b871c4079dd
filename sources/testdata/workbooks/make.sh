#!/bin/sh
# Rebuilds the corpus: rows.csv from rows.json, then each workbook with the program it
# stands for, and versions.txt with the version of each. Run it from this directory, as
# root on a Debian machine (see README.md). The files are committed: tests never run this.
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

apt-get install -y -qq --no-install-recommends python3-openpyxl python3-xlsxwriter libreoffice-calc-nogui >/dev/null
(cd "$work" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent xlsx@0.18.5 exceljs@4.4.0)

/usr/bin/python3 rows_csv.py
{
	/usr/bin/python3 openpyxl_book.py
	/usr/bin/python3 xlsxwriter_book.py
	NODE_PATH="$work/node_modules" TZ=UTC node sheetjs_book.js
	NODE_PATH="$work/node_modules" TZ=UTC node exceljs_book.js
	go run ./excelize
	sh libreoffice.sh "$work"
	echo "Node $(node --version)"
} >versions.txt
chmod 644 *.xlsx
cat versions.txt
