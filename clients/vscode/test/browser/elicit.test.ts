/** An MCP server's question in the chat page (headless Chromium): the form's inputs, defaults, checks and answers. */
import * as path from "node:path";
import type { Page } from "playwright-core";
import { beforeEach, describe, expect, it } from "vitest";
import type { FromWebview, ToWebview } from "../../src/messages/chat";
import type { ElicitRequest } from "../../src/messages/elicit";
import { browserRig, postAll } from "../support/page";

const ARTIFACTS = path.resolve(__dirname, "../artifacts");
const SESSION = "s-elicit";
const rig = browserRig();
let page: Page;
const problems: string[] = [];

beforeEach(async () => {
  problems.length = 0;
  page = await rig.browser.newPage({ viewport: { width: 420, height: 900 } });
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(rig.server.url);
  await page.waitForFunction(() => (window as unknown as { __posted: FromWebview[] }).__posted.some((m) => m.type === "ready"));
});

const posted = (): Promise<FromWebview[]> => page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted);
const answers = async () => (await posted()).filter((m) => m.type === "elicitAnswer");

/** A running call of the asking server's tool, in a turn under way. */
function running(): ToWebview[] {
  const item = {
    type: "toolCall", id: "call-1", callId: "call-1", tool: "mcp__asking__book", arguments: "{}", header: "⚙ mcp__asking__book [MCP: asking]",
    preview: "{}", needsApproval: false, status: "running", output: null, isError: false, effectStatus: null, fileChange: null,
    verdict: null, judgeVerdict: null, autoApproved: true, autoApproveReason: null, originalArguments: null, sandbox: null,
  };
  return [
    { type: "daemon", state: "ready" },
    { type: "features", perCallDecisions: true, editReview: true, editArguments: true },
    { type: "reset", sessionId: SESSION, title: "book a table", items: [], running: true },
    { type: "event", event: { method: "turn/started", params: { sessionId: SESSION, turnId: "turn-1" } } },
    { type: "event", event: { method: "item/started", params: { sessionId: SESSION, turnId: "turn-1", itemId: "call-1", item, parentCallId: null } } },
  ] as unknown as ToWebview[];
}

const REQUEST: ElicitRequest = {
  id: "elicit-1",
  params: {
    sessionId: SESSION, server: "asking", message: "Who is the booking for?",
    requestedSchema: {
      type: "object",
      properties: {
        name: { type: "string", title: "Name", description: "Who the table is for" },
        email: { type: "string", format: "email" },
        seats: { type: "integer", title: "Seats", default: 2, minimum: 1, maximum: 12 },
        budget: { type: "number" },
        window: { type: "boolean", title: "Window", default: true },
        time: { type: "string", enum: ["early", "late"], enumNames: ["Early (18:00)", "Late (21:00)"], default: "late" },
        room: { type: "string", oneOf: [{ const: "main", title: "Main room" }, { const: "garden", title: "Garden" }] },
      },
      required: ["name", "room"],
    },
  },
};

describe("an MCP server's question in the chat", () => {
  it("a form under the running call: inputs by type, defaults, required checked, Submit posts the content", async () => {
    await postAll(page, [...running(), { type: "elicit", request: REQUEST }]);
    const card = page.locator(".entry.tool[data-id='call-1'] .elicit");
    await card.waitFor({ state: "visible", timeout: 5000 });
    expect(await card.locator(".elicit-server").innerText()).toContain("asking");
    expect(await card.locator(".elicit-message").innerText()).toBe("Who is the booking for?");

    const field = (name: string) => card.locator(`.elicit-field[data-field='${name}']`);
    expect(await field("name").locator("input[type=text]").inputValue()).toBe("");
    expect(await field("name").locator(".required").count()).toBe(1);
    expect(await field("room").locator(".required").count()).toBe(1);
    expect(await field("seats").locator(".required").count()).toBe(0);
    expect(await field("name").locator(".elicit-description").innerText()).toBe("Who the table is for");
    expect(await field("email").locator(".elicit-hint").innerText()).toContain("email");
    expect(await field("seats").locator("input").inputValue()).toBe("2");
    expect(await field("window").locator("input[type=checkbox]").isChecked()).toBe(true);
    expect(await field("time").locator("select option").allInnerTexts()).toEqual(["Early (18:00)", "Late (21:00)"]);
    expect(await field("time").locator("select option:checked").innerText()).toBe("Late (21:00)");
    expect(await field("room").locator("select option").allInnerTexts()).toEqual(["Choose…", "Main room", "Garden"]);
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-elicit.png") });

    // Required fields and numbers are checked before anything goes.
    await field("seats").locator("input").fill("2.5");
    await field("budget").locator("input").fill("lots");
    await card.locator("button[data-elicit=accept]").click();
    expect(await field("name").locator(".elicit-error").innerText()).toBe("Required.");
    expect(await field("room").locator(".elicit-error").innerText()).toBe("Required.");
    expect(await field("seats").locator(".elicit-error").innerText()).toBe("Not a whole number.");
    expect(await field("budget").locator(".elicit-error").innerText()).toBe("Not a number.");
    expect(await answers()).toEqual([]);
    await field("seats").locator("input").fill("20");
    await card.locator("button[data-elicit=accept]").click();
    expect(await field("seats").locator(".elicit-error").innerText()).toBe("At most 12.");

    await field("name").locator("input").fill("Ada");
    await field("seats").locator("input").fill("4");
    await field("budget").locator("input").fill("");
    await field("window").locator("input").uncheck();
    await field("room").locator("select").selectOption({ label: "Garden" });
    await card.locator("button[data-elicit=accept]").click();
    expect(await answers()).toEqual([{ type: "elicitAnswer", id: "elicit-1", response: { action: "accept", content: { name: "Ada", seats: 4, window: false, time: "late", room: "garden" } } }]);

    await postAll(page, [{ type: "elicitCleared", id: "elicit-1" }]);
    expect(await page.locator(".elicit").count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it("Decline and Cancel answer without content; a withdrawn question's form goes; typing survives redraws", async () => {
    await postAll(page, [...running(), { type: "elicit", request: REQUEST }, { type: "elicit", request: { ...REQUEST, id: "elicit-2" } }]);
    const first = page.locator(".elicit[data-elicit-id='elicit-1']");
    const second = page.locator(".elicit[data-elicit-id='elicit-2']");
    await first.locator("input[name=name]").fill("Grace");
    // The call's output streams in: the card is drawn again, the form stays as typed.
    await postAll(page, [{ type: "event", event: { method: "item/toolCall/outputDelta", params: { sessionId: SESSION, turnId: "turn-1", itemId: "call-1", callId: "call-1", delta: "asking…", parentCallId: null } } } as unknown as ToWebview]);
    expect(await first.locator("input[name=name]").inputValue()).toBe("Grace");

    await first.locator("button[data-elicit=decline]").click();
    await second.locator("button[data-elicit=cancel]").click();
    expect((await answers()).map((m) => m.type === "elicitAnswer" && [m.id, m.response])).toEqual([
      ["elicit-1", { action: "decline" }], ["elicit-2", { action: "cancel" }],
    ]);

    // Answered by another client: the daemon withdraws it, the form goes.
    await postAll(page, [{ type: "elicit", request: { ...REQUEST, id: "elicit-3" } }]);
    await page.locator(".elicit[data-elicit-id='elicit-3']").waitFor({ timeout: 5000 });
    await postAll(page, [{ type: "elicitCleared", id: "elicit-3" }]);
    expect(await page.locator(".elicit[data-elicit-id='elicit-3']").count()).toBe(0);
    expect(problems).toEqual([]);
  });
});
