/**
 * An MCP server's question (`mcpServer/elicit`) as a form: the fields of its flat schema, and
 * what the user typed read back into the answer's content. Shared by the host and the page.
 */
import type { McpElicitParams } from "../protocol";

/** A pending question as the chat shows it (`id` names it between the host and the page). */
export interface ElicitRequest {
  id: string;
  params: McpElicitParams;
}

export interface ElicitOption {
  value: unknown;
  label: string;
}

export type FieldKind = "string" | "number" | "integer" | "boolean" | "enum";

export interface ElicitField {
  name: string;
  label: string;
  description: string;
  kind: FieldKind;
  required: boolean;
  /** A string's format (email, uri, date, date-time), shown as a hint. */
  format: string;
  /** What the form starts with: the schema's default, as the input holds it. */
  initial: string | boolean;
  /** An enum's choices, in order. */
  options: ElicitOption[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}

const record = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** An enum's choices: `enum` (labelled by `enumNames` when given) or `oneOf`/`anyOf` of `{const, title}`. */
function optionsOf(prop: Record<string, unknown>): ElicitOption[] {
  if (Array.isArray(prop.enum)) {
    const names = Array.isArray(prop.enumNames) ? prop.enumNames : [];
    return prop.enum.map((value, i) => ({ value, label: typeof names[i] === "string" ? (names[i] as string) : String(value) }));
  }
  const variants = Array.isArray(prop.oneOf) ? prop.oneOf : Array.isArray(prop.anyOf) ? prop.anyOf : [];
  const consts = variants.map(record).filter((v) => "const" in v);
  return consts.map((v) => ({ value: v.const, label: str(v.title) || String(v.const) }));
}

/**
 * The form's fields in the server's order: `order` (the request's `propertyOrder`) first, for
 * names a JavaScript object puts first ("1", "2"), then any it does not name.
 */
export function formFields(schema: Record<string, unknown> | undefined, order: readonly string[] = []): ElicitField[] {
  const s = record(schema);
  const required = new Set(Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === "string") : []);
  const properties = record(s.properties);
  const names = [...order.filter((n) => Object.hasOwn(properties, n)), ...Object.keys(properties).filter((n) => !order.includes(n))];
  return names.map((name) => {
    const raw = properties[name];
    const prop = record(raw);
    const options = optionsOf(prop);
    const type = str(prop.type);
    const kind: FieldKind = options.length ? "enum" : type === "boolean" || type === "number" || type === "integer" ? type : "string";
    const fallback = prop.default;
    let initial: string | boolean = kind === "boolean" ? fallback === true : "";
    if (kind === "enum") {
      const at = options.findIndex((o) => o.value === fallback);
      initial = at >= 0 ? String(at) : "";
    } else if (kind !== "boolean" && (typeof fallback === "string" || typeof fallback === "number")) initial = String(fallback);
    const field: ElicitField = {
      name, label: str(prop.title) || name, description: str(prop.description), kind, required: required.has(name),
      format: kind === "string" ? str(prop.format) : "", initial, options,
    };
    const bounds = { minimum: num(prop.minimum), maximum: num(prop.maximum), minLength: num(prop.minLength), maxLength: num(prop.maxLength) };
    for (const [key, value] of Object.entries(bounds)) if (value !== undefined) field[key as keyof typeof bounds] = value;
    return field;
  });
}

/** The hint under a field: its format, its bounds. */
export function fieldHint(field: ElicitField): string {
  const parts: string[] = [];
  if (field.format) parts.push(field.format === "uri" ? "a URL" : field.format === "email" ? "an email address" : field.format === "date" ? "a date (YYYY-MM-DD)" : field.format === "date-time" ? "a date and time" : field.format);
  if (field.kind === "integer") parts.push("a whole number");
  else if (field.kind === "number") parts.push("a number");
  if (field.minimum !== undefined && field.maximum !== undefined) parts.push(`${field.minimum} to ${field.maximum}`);
  else if (field.minimum !== undefined) parts.push(`at least ${field.minimum}`);
  else if (field.maximum !== undefined) parts.push(`at most ${field.maximum}`);
  if (field.minLength !== undefined) parts.push(`at least ${field.minLength} characters`);
  if (field.maxLength !== undefined) parts.push(`at most ${field.maxLength} characters`);
  return parts.join(", ");
}

export type FormRead = { content: Record<string, unknown>; errors: null } | { content: null; errors: Record<string, string> };

/**
 * The answer's content from the form's values (text inputs' strings, checkboxes' booleans, a
 * select's option index); an empty optional field is left out, so the server's default holds.
 */
export function readForm(fields: readonly ElicitField[], values: Record<string, string | boolean | undefined>): FormRead {
  const content: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const raw = values[field.name];
    if (field.kind === "boolean") {
      content[field.name] = raw === true;
      continue;
    }
    const text = typeof raw === "string" ? raw.trim() : "";
    if (!text) {
      if (field.required) errors[field.name] = "Required.";
      continue;
    }
    if (field.kind === "enum") {
      const option = field.options[Number(text)];
      if (option) content[field.name] = option.value;
      else errors[field.name] = "Pick one of the choices.";
      continue;
    }
    if (field.kind === "number" || field.kind === "integer") {
      const value = Number(text);
      if (!Number.isFinite(value)) errors[field.name] = "Not a number.";
      else if (field.kind === "integer" && !Number.isInteger(value)) errors[field.name] = "Not a whole number.";
      else if (field.minimum !== undefined && value < field.minimum) errors[field.name] = `At least ${field.minimum}.`;
      else if (field.maximum !== undefined && value > field.maximum) errors[field.name] = `At most ${field.maximum}.`;
      else content[field.name] = value;
      continue;
    }
    const value = typeof raw === "string" ? raw : "";
    if (field.minLength !== undefined && value.length < field.minLength) errors[field.name] = `At least ${field.minLength} characters.`;
    else if (field.maxLength !== undefined && value.length > field.maxLength) errors[field.name] = `At most ${field.maxLength} characters.`;
    else content[field.name] = value;
  }
  return Object.keys(errors).length ? { content: null, errors } : { content, errors: null };
}
