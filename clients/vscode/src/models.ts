/** The model picker and the first-run offer of a local model, over a Host and the client. */
import type { TurnstonedClient } from "./client";
import { rpcError } from "./connection";
import type { Host, PickItem } from "./host";
import type { ModelListResult, ModelOption } from "./protocol";

/** Where users read about local models, and the settings that name a model server. */
export const LOCAL_MODELS_DOC = "docs/local-models.md";

/** The quick pick of models: the current one first and marked, each with its server. */
export function modelPickItems(list: ModelListResult, current: string | null): PickItem<ModelOption>[] {
  const now = current ?? list.current ?? null;
  const sorted = [...list.models].sort((a, b) => Number(b.name === now) - Number(a.name === now));
  return sorted.map((m) => ({
    label: m.name,
    description: [m.name === now ? "current" : "", m.server === "configured" ? "" : m.server, m.contextWindow ? `${Math.round(m.contextWindow / 1000)}k context` : ""].filter(Boolean).join(" · "),
    detail: m.baseUrl,
    value: m,
  }));
}

/** "qwen2.5-coder on Ollama" */
export function modelLabel(m: ModelOption): string {
  return `${m.name} on ${m.server}`;
}

/**
 * No model is configured: offer what the local servers serve ("Use qwen2.5-coder on Ollama?"),
 * or say where to read how to set one up. True when a model was chosen (and saved).
 */
export async function offerLocalModel(host: Host, client: TurnstonedClient, list: ModelListResult): Promise<ModelOption | null> {
  if (list.configured) return null;
  if (!list.models.length) {
    const choice = await host.info(`turnstoned has no model: none is configured and no local model server (Ollama, llama.cpp, vLLM, LM Studio) answered. See ${LOCAL_MODELS_DOC} to run one, or set turnstoned.baseUrl and turnstoned.model.`, "Open Settings");
    if (choice === "Open Settings") host.openSettings("turnstoned.baseUrl");
    return null;
  }
  const first = list.models[0]!;
  const others = list.models.length > 1 ? ["Choose Another…"] : [];
  const choice = await host.info(`No model is configured. Use ${modelLabel(first)}?`, `Use ${first.name}`, ...others);
  let picked: ModelOption | undefined;
  if (choice === `Use ${first.name}`) picked = first;
  else if (choice === "Choose Another…") picked = await host.pick(modelPickItems(list, null), { title: "Local models on this machine", placeHolder: "The model turnstoned uses (saved to its config.toml)" });
  if (!picked) return null;
  try {
    const result = await client.useModel({ name: picked.name, baseUrl: picked.baseUrl, save: true });
    void host.info(`turnstoned uses ${modelLabel(picked)}${result.savedTo ? ` (saved to ${result.savedTo})` : ""}.`);
    return picked;
  } catch (err) {
    const e = rpcError(err);
    void host.warn(`Could not use ${picked.name}: ${e.message}${e.kind ? ` (${e.kind})` : ""}`);
    return null;
  }
}
