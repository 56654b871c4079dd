// Writes exceljs.xlsx (ExcelJS's document writer, workbook.xlsx.writeFile) and
// exceljs-stream.xlsx and exceljs-stream-inline.xlsx (its streaming writer,
// stream.xlsx.WorkbookWriter, with and without shared strings)
// from rows.json: dates as Date values with a number format, numbers as numbers.
// Run: NODE_PATH=<dir with node_modules> TZ=UTC node exceljs_book.js
const fs = require("fs");
const ExcelJS = require("exceljs");

const data = JSON.parse(fs.readFileSync("rows.json", "utf8"));
const formats = { date: "yyyy-mm-dd", datetime: "yyyy-mm-dd hh:mm:ss" };

function value(kind, v) {
  if (v === null) return null;
  if (kind === "date" || kind === "datetime") return new Date(v + (kind === "date" ? "T00:00:00Z" : "Z"));
  return v;
}

function fill(ws, commit) {
  ws.addRow(data.columns.map((c) => c.name));
  for (const row of data.rows) {
    const r = ws.addRow(row.map((v, i) => value(data.columns[i].type, v)));
    data.columns.forEach((c, i) => {
      if (formats[c.type] && row[i] !== null) r.getCell(i + 1).numFmt = formats[c.type];
    });
    if (commit) r.commit();
  }
}

async function main() {
  const book = new ExcelJS.Workbook();
  fill(book.addWorksheet(data.sheet), false);
  await book.xlsx.writeFile("exceljs.xlsx");

  const stream = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: "exceljs-stream.xlsx", useSharedStrings: true, useStyles: true });
  const ws = stream.addWorksheet(data.sheet);
  fill(ws, true);
  ws.commit();
  await stream.commit();

  const inline = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: "exceljs-stream-inline.xlsx", useSharedStrings: false, useStyles: true });
  const wsi = inline.addWorksheet(data.sheet);
  fill(wsi, true);
  wsi.commit();
  await inline.commit();
  console.log("ExcelJS", require("exceljs/package.json").version);
}
main().catch((e) => { console.error(e); process.exit(1); });
