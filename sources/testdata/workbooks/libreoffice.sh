#!/bin/sh
# Writes libreoffice.xlsx: rows.csv opened in LibreOffice Calc as a person opens a CSV
# (UTF-8, comma-separated, "detect special numbers" on, so ISO dates and date-times become
# dates; the text columns E-post, Fornavn, Etternavn, Mobil, Postnummer and Firma set to
# Text, so the leading zeros stay) and saved as "Excel 2007-365" (the filter
# "Calc MS Excel 2007 XML"). $1 is a scratch directory.
set -eu
work=$1
mkdir -p "$work/lo"
cp rows.csv "$work/lo/Kontakter.csv" # the sheet takes the file's name
soffice -env:UserInstallation="file://$work/lo/profile" --headless \
	--infilter="CSV:44,34,76,1,1/2/2/2/3/2/4/2/5/2/6/1/7/1/8/1/9/1/10/1/11/2,1033,false,true" \
	--convert-to 'xlsx:Calc MS Excel 2007 XML' --outdir "$work/lo" "$work/lo/Kontakter.csv" >/dev/null 2>&1
mv "$work/lo/Kontakter.xlsx" libreoffice.xlsx
soffice --version | head -1
