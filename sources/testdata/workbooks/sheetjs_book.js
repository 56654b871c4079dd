// Writes sheetjs-sst.xlsx (with a shared-string table, bookSST: true) and sheetjs.xlsx
// (SheetJS's default: strings written in the cells) from rows.json, with SheetJS (the npm
// package "xlsx"): each cell typed, dates as serial numbers with a date format, as
// XLSX.utils.aoa_to_sheet makes them from Date values.
// Run: NODE_PATH=<dir with node_modules> TZ=UTC node sheetjs_book.js
const fs = require("fs");
const XLSX = require("xlsx");

const data = JSON.parse(fs.readFileSync("rows.json", "utf8"));
const formats = { date: "yyyy-mm-dd", datetime: "yyyy-mm-dd hh:mm:ss" };

function value(kind, v) {
  if (v === null) return null;
  if (kind === "date" || kind === "datetime") return new Date(v + (kind === "date" ? "T00:00:00Z" : "Z"));
  return v;
}

const aoa = [data.columns.map((c) => c.name)];
for (const row of data.rows) aoa.push(row.map((v, i) => value(data.columns[i].type, v)));
const ws = XLSX.utils.aoa_to_sheet(aoa, { cellDates: false });
// aoa_to_sheet gives every date the format m/d/yy; the date-times get one with the time.
data.rows.forEach((row, r) => {
  data.columns.forEach((c, col) => {
    const cell = ws[XLSX.utils.encode_cell({ r: r + 1, c: col })];
    if (cell && formats[c.type]) cell.z = formats[c.type];
  });
});
const wb = XLSX.utils.book_new();
XLSX.utils.book_append_sheet(wb, ws, data.sheet);
XLSX.writeFile(wb, "sheetjs-sst.xlsx", { bookSST: true });
XLSX.writeFile(wb, "sheetjs.xlsx", { bookSST: false });
console.log("SheetJS (xlsx)", XLSX.version);
