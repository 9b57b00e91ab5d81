/** The elicitation form's fields and answers, and the broker of pending questions. */
import { describe, expect, it } from "vitest";
import { ElicitBroker } from "../../src/elicit";
import { formFields, readForm } from "../../src/messages/elicit";
import type { CancelToken } from "../../src/connection";

const params = { sessionId: "s1", server: "asking", message: "Who?", requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } };

function token(): CancelToken & { cancel(): void } {
  const listeners: (() => void)[] = [];
  const t = {
    isCancellationRequested: false,
    onCancellationRequested: (l: () => void) => { listeners.push(l); return { dispose: () => undefined }; },
    cancel: () => { t.isCancellationRequested = true; for (const l of listeners) l(); },
  };
  return t as unknown as CancelToken & { cancel(): void };
}

describe("elicitation form", () => {
  it("reads fields by type with defaults; an unknown type is text; enum labels from enumNames or oneOf", () => {
    const fields = formFields({
      properties: {
        a: { type: "string", default: "x", format: "uri" }, b: { type: "integer", default: 3 }, c: { type: "boolean" },
        d: { type: "string", enum: ["p", "q"], enumNames: ["P"] }, e: { oneOf: [{ const: 1, title: "One" }] }, f: { type: "array" },
      },
      required: ["b"],
    });
    expect(fields.map((f) => [f.name, f.kind, f.initial, f.required])).toEqual([
      ["a", "string", "x", false], ["b", "integer", "3", true], ["c", "boolean", false, false], ["d", "enum", "", false], ["e", "enum", "", false], ["f", "string", "", false],
    ]);
    expect(fields[3]!.options.map((o) => o.label)).toEqual(["P", "q"]);
    expect(fields[4]!.options).toEqual([{ value: 1, label: "One" }]);
    expect(formFields(undefined)).toEqual([]);
    // The server's order, where an object would put "2" first.
    expect(formFields({ properties: { b: {}, 2: {}, a: {} } }, ["b", "2", "gone"]).map((f) => f.name)).toEqual(["b", "2", "a"]);
  });

  it("leaves empty optional fields out and checks the required and numeric ones", () => {
    const fields = formFields({ properties: { n: { type: "number", minimum: 0 }, s: { type: "string", minLength: 2 }, r: { type: "string" } }, required: ["r"] });
    expect(readForm(fields, { n: "", s: "", r: "" })).toEqual({ content: null, errors: { r: "Required." } });
    expect(readForm(fields, { n: "-1", s: "a", r: "ok" }).errors).toEqual({ n: "At least 0.", s: "At least 2 characters." });
    expect(readForm(fields, { n: " 1.5 ", s: "", r: "ok" })).toEqual({ content: { n: 1.5, r: "ok" }, errors: null });
  });
});

describe("ElicitBroker", () => {
  it("answers once; accept carries content, the others none", async () => {
    const broker = new ElicitBroker();
    const changes: string[] = [];
    broker.onChange((c) => changes.push(c.kind === "added" ? `added ${c.request.id}` : `${c.reason} ${c.id}`));
    const answer = broker.handle(params);
    const [request] = broker.pending("s1");
    expect(broker.answer(request!.id, { action: "decline", content: { name: "x" } })).toBe(true);
    expect(await answer).toEqual({ action: "decline" });
    expect(broker.answer(request!.id, { action: "accept" })).toBe(false);
    const second = broker.handle(params);
    broker.answer(broker.pending()[0]!.id, { action: "accept" });
    expect(await second).toEqual({ action: "accept", content: {} });
    expect(changes).toEqual(["added elicit-1", "answered elicit-1", "added elicit-2", "answered elicit-2"]);
  });

  it("a withdrawn question ($/cancelRequest) or a session's end clears it", async () => {
    const broker = new ElicitBroker();
    const t = token();
    const withdrawn = broker.handle(params, t);
    const ended = broker.handle({ ...params, sessionId: "s2" });
    t.cancel();
    expect(await withdrawn).toEqual({ action: "cancel" });
    expect(broker.pending().map((r) => r.params.sessionId)).toEqual(["s2"]);
    broker.withdrawAll("s2");
    expect(await ended).toEqual({ action: "cancel" });
    expect(broker.pending()).toEqual([]);
  });
});
