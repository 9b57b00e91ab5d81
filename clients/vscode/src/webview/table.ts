/** Table previews: CSV, TSV or JSON text as columns and rows of plain strings (drawn as text). */

export interface Table {
  columns: string[];
  rows: string[][];
  /** Rows in the data; more than `rows.length` when only the first ones are kept. */
  total: number;
}

/**
 * Split delimited text into records: fields may be quoted (`"a, ""b"""`) and then hold the
 * delimiter or line breaks; CRLF and LF both end a record. One pass, so linear in the text.
 */
export function parseDelimited(text: string, delimiter: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = "";
  let quoted = false;
  let i = 0;
  const endField = () => { record.push(field); field = ""; };
  const endRecord = () => { endField(); records.push(record); record = []; };
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i += 2; continue; }
      if (c === '"') quoted = false;
      else field += c;
      i++;
      continue;
    }
    if (c === '"' && field === "") quoted = true;
    else if (c === delimiter) endField();
    else if (c === "\n") endRecord();
    else if (c === "\r" && text[i + 1] === "\n") { endRecord(); i++; }
    else field += c;
    i++;
  }
  if (field !== "" || record.length) endRecord();
  return records;
}

function widest(rows: readonly unknown[][]): number {
  return rows.reduce((most, row) => Math.max(most, row.length), 0);
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** JSON as a table: a list of objects (a column per key), a list of lists, or key/value rows. */
function fromJson(data: unknown): { columns: string[]; rows: string[][] } {
  if (Array.isArray(data) && data.length && data.every(isRecord)) {
    const columns = [...new Set(data.flatMap((row) => Object.keys(row)))];
    return { columns, rows: data.map((row) => columns.map((c) => cell(row[c]))) };
  }
  if (Array.isArray(data) && data.every(Array.isArray)) {
    const width = widest(data);
    return { columns: Array.from({ length: width }, (_, i) => String(i + 1)), rows: data.map((row) => Array.from({ length: width }, (_, i) => cell(row[i]))) };
  }
  if (Array.isArray(data)) return { columns: ["value"], rows: data.map((v) => [cell(v)]) };
  if (isRecord(data)) return { columns: ["key", "value"], rows: Object.entries(data).map(([k, v]) => [k, cell(v)]) };
  return { columns: ["value"], rows: [[cell(data)]] };
}

/** The table a preview's text holds, by its content type; at most `maxRows` rows kept. */
export function parseTable(text: string, contentType: string, maxRows = 2000): Table {
  let columns: string[];
  let rows: string[][];
  if (contentType.includes("json")) {
    ({ columns, rows } = fromJson(JSON.parse(text)));
  } else {
    const records = parseDelimited(text.replace(/^\uFEFF/, ""), contentType.includes("tab-separated") ? "\t" : ",");
    columns = records[0] ?? [];
    rows = records.slice(1);
    const width = Math.max(columns.length, widest(rows));
    columns = Array.from({ length: width }, (_, i) => columns[i] ?? "");
  }
  return { columns, rows: rows.slice(0, maxRows), total: rows.length };
}
