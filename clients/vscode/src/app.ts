/** Wires the extension together over a Host; `extension.ts` calls `startApp` and nothing else. */
import { ApprovalBroker } from "./approvals";
import { attachment } from "./messages/attachments";
import { ChatController } from "./chat";
import { daemonFeatures, type DaemonFeatures } from "./client";
import { rpcError } from "./connection";
import { API_KEY_SECRET, Daemon, RESTART_SHARED } from "./daemon";
import { EditorServices } from "./editor";
import type { Host, TreeNode } from "./host";
import { manageGrants } from "./grants";
import { describeChanges, McpLogins, mcpPickItems } from "./mcp";
import { managePolicies } from "./policies";
import { PreviewController } from "./previews";
import type { PreviewOpen, SessionInfo, SessionNotice } from "./protocol";
import { PROPOSAL_SCHEME, PROPOSED_SCHEME, ReviewController, type Proposal } from "./review";
import { sessionNodes } from "./sessions";
import { RESTART_KEYS } from "./settings";
import { modePickItems, modeStatus, statusView, type ContextFill } from "./status";
import { manageWatches } from "./watches";
import { modelPickItems, offerLocalModel } from "./models";

export interface App {
  dispose(): Promise<void>;
}

/** Where things from the daemon are shown to the user. */
interface Shown {
  host: Host;
  chat: ChatController;
  previews: PreviewController;
  sessionTitle(sessionId: string): Promise<string>;
}

/** The chat's session's previews open beside it; another session's are offered. */
async function previewOpened(to: Shown, event: PreviewOpen): Promise<void> {
  if (event.sessionId === to.chat.currentSession) {
    await to.previews.opened(event);
    return;
  }
  const from = (await to.sessionTitle(event.sessionId)) || event.sessionId.slice(0, 8);
  if ((await to.host.info(`Session “${from}” opened a preview: ${event.title}`, "Show Preview")) === "Show Preview") await to.previews.opened(event);
}

/**
 * The model's `notify` becomes a notification with its title, whichever session sent it; a
 * watch that fired in a session the chat does not show is told too (the chat shows its own).
 */
async function noticed(to: Shown, event: SessionNotice): Promise<void> {
  const elsewhere = event.sessionId !== to.chat.currentSession;
  const text = (key: string) => (typeof event.data?.[key] === "string" ? (event.data[key] as string).trim() : "");
  let message: string;
  if (event.kind === "notify") message = `${text("title") || "turnstoned"}: ${event.text}`;
  else if (event.kind === "watch" && elsewhere) message = `Watch “${text("name")}” fired in session “${(await to.sessionTitle(event.sessionId)) || event.sessionId.slice(0, 8)}”: ${text("reason")}`;
  else return;
  const choice = await to.host.info(message, ...(elsewhere ? ["Show in Chat"] : []));
  if (choice === "Show in Chat") await to.chat.resume(event.sessionId);
}

function sessionArg(arg: unknown): string | undefined {
  if (typeof arg === "string") return arg;
  if (arg && typeof arg === "object" && typeof (arg as TreeNode).id === "string") return (arg as TreeNode).id;
  return undefined;
}

export function startApp(host: Host): App {
  const broker = new ApprovalBroker();
  const editor = new EditorServices(host);
  const daemon = new Daemon(host, broker, editor);
  let sessions: SessionInfo[] = [];

  /** The running client, for a read that cannot do without it. */
  const running = async () => {
    const client = await daemon.ready();
    if (!client) throw new Error("the daemon is not running");
    return client;
  };
  const readProposal = async (sessionId: string, callId: string): Promise<Proposal> => (await running()).readFileChange(sessionId, callId);
  const features = () => (daemon.status.state === "ready" ? daemonFeatures(daemon.status.health) : null);
  const perCall = () => features()?.perCallDecisions ?? false;
  /** The running client if the daemon has `feature`; else the user is told to update it. */
  const having = async (feature: keyof DaemonFeatures, what: string, revision: string) => {
    const client = await daemon.ready();
    if (!client) return null;
    if (features()?.[feature]) return client;
    void host.info(`This daemon has no ${what} (it predates protocol revision ${revision}): update turnstoned.`);
    return null;
  };
  /** The running client and the chat's session, for a command about that session. */
  const inChat = async (feature: keyof DaemonFeatures, what: string, revision: string) => {
    const client = await having(feature, what, revision);
    const sessionId = chat.currentSession;
    if (client && !sessionId) void host.info(`Start or resume a chat first: ${what} belong to a chat's session.`);
    return client && sessionId ? { client, sessionId } : null;
  };
  const logins = new McpLogins(host, () => having("mcpLogin", "MCP login", "1.14"));
  const review = new ReviewController(host, broker, readProposal, perCall);
  /** The editor chip, while the daemon takes the editor state (1.12): an older one is sent none. */
  const chip = () => (features()?.editor ? editor.chip() : null);
  let listing: Promise<void> | null = null;
  const refreshSessions = (): Promise<void> => (listing ??= (async () => {
    const client = daemon.client;
    if (!client) return;
    try {
      sessions = await client.listSessions();
    } catch (err) {
      host.log(`session/list: ${rpcError(err).message}`);
    }
    tree.refresh();
  })().finally(() => (listing = null)));
  const sessionTitle = async (sessionId: string): Promise<string> => {
    if (!sessions.some((s) => s.sessionId === sessionId)) await refreshSessions();
    return sessions.find((s) => s.sessionId === sessionId)?.title?.trim() ?? "";
  };
  const previews = new PreviewController(host, async (sessionId, previewId, offset, length) => (await running()).readPreview(sessionId, previewId, offset, length));
  const tree = host.registerTree("turnstoned.sessions", () => sessionNodes(sessions, chat.currentSession));
  const chat = new ChatController(host, daemon, broker, {
    review: (sessionId, callId) => review.open(sessionId, callId),
    sessionsChanged: () => {
      void refreshSessions();
      showStatus();
    },
    openPreview: (sessionId, previewId) => previews.show(sessionId, previewId),
    sessionTitle,
    modeChanged: () => showMode(),
    editorState: () => editor.state(),
    editorChip: () => chip(),
    pickModel: () => pickModel(),
    pickMode: async () => { await commands["turnstoned.setApprovalMode"]?.(); },
    modelChanged: () => showStatus(),
  });

  /** The header's model and the status bar: pick from `model/list`, for this chat and this folder's new chats. */
  const pickModel = async (): Promise<void> => {
    const client = await having("composer", "model picker", "1.13");
    if (!client) return;
    let list;
    try {
      list = await client.listModels();
    } catch (err) {
      void host.warn(`model/list: ${rpcError(err).message}`);
      return;
    }
    if (!list.configured) {
      if (await offerLocalModel(host, client, list)) await daemon.refreshHealth();
      return;
    }
    const info = chat.modelInfo();
    if (list.error) void host.warn(`The model server did not list its models: ${list.error}`);
    const picked = await host.pick(modelPickItems(list, info.model), { title: info.pending ? "Model of the next chat" : "Model of this chat", placeHolder: "Kept for new chats in this folder" });
    if (picked) await chat.setModel(picked.name);
  };
  /** A first run: no model configured; once per daemon start. */
  let offered = false;
  const firstRun = async (): Promise<void> => {
    const status = daemon.status;
    if (offered || status.state !== "ready" || status.health.model || !features()?.composer) return;
    offered = true;
    const client = daemon.client;
    if (!client) return;
    try {
      if (await offerLocalModel(host, client, await client.listModels())) await daemon.refreshHealth();
    } catch (err) {
      host.log(`model/list: ${rpcError(err).message}`);
    }
  };
  editor.onChip(() => chat.showEditorChip(chip()));
  chat.attachView(host.registerChatView({ onMessage: (m) => void chat.handle(m) }));
  const shown: Shown = { host, chat, previews, sessionTitle };
  host.registerDocuments(PROPOSAL_SCHEME, (uri) => review.provide(uri));
  host.registerEditableDocuments(PROPOSED_SCHEME, (uri) => review.provide(uri));

  // How full each session's context is; the status bar shows the chat's session.
  const contexts = new Map<string, ContextFill>();
  const showStatus = () => {
    const current = chat.currentSession;
    const view = statusView(daemon.status, (current && contexts.get(current)) || null, features()?.composer ? chat.modelInfo().model : null);
    host.setStatus(view.text, view.tooltip, "turnstoned.statusMenu");
    host.setModelStatus(features()?.composer ? `$(hubot) ${chat.modelInfo().model ?? "no model"}` : null, "The chat's model: click to pick another (kept for new chats in this folder)", "turnstoned.pickModel");
  };
  /** The second status bar item: the chat's approval mode, while the daemon has modes. */
  const showMode = () => {
    const view = features()?.approvalModes ? modeStatus(chat.modeInfo()) : null;
    host.setModeStatus(view?.text ?? null, view?.tooltip ?? "", "turnstoned.setApprovalMode");
  };
  const setContext = (sessionId: string, context: ContextFill) => {
    contexts.set(sessionId, context);
    if (sessionId === chat.currentSession) showStatus();
  };
  daemon.onState((state) => {
    showStatus();
    showMode();
    chat.showEditorChip(chip());
    if (state.state === "ready") {
      void refreshSessions();
      void firstRun();
    } else offered = false;
  });
  daemon.onEvent((event) => {
    review.observe(event);
    if (event.method === "mcpServer/statusChanged") {
      logins.observe(event.params);
      void daemon.refreshHealth();
      return;
    }
    if (event.method === "workspace/filesChanged") {
      void editor.filesChanged(event.params).catch((err: unknown) => host.log(`workspace/filesChanged: ${String(err)}`));
      return;
    }
    // A session this window has not listed yet (a coordinator's child, just spawned).
    if (!sessions.some((s) => s.sessionId === event.params.sessionId)) void refreshSessions();
    if (event.method === "session/usage") setContext(event.params.sessionId, { tokens: event.params.contextTokens, window: event.params.contextWindow });
    else if (event.method === "session/compacted") setContext(event.params.sessionId, { tokens: event.params.contextTokensAfter, window: event.params.contextWindow });
    else if (event.method === "preview/open") void previewOpened(shown, event.params);
    else if (event.method === "session/notice") void noticed(shown, event.params);
  });

  const commands: Record<string, (...args: unknown[]) => unknown> = {
    "turnstoned.newChat": () => chat.newChat(),
    "turnstoned.openChat": () => chat.reveal(),
    "turnstoned.interrupt": () => chat.interrupt(),
    "turnstoned.restart": () => daemon.restart(),
    "turnstoned.restartShared": () => daemon.restartShared(),
    "turnstoned.installDaemon": () => daemon.install(),
    "turnstoned.showOutput": () => host.showOutput(),
    "turnstoned.setApiKey": async () => {
      const key = await host.input({ prompt: "API key of the model server (kept in VS Code's secret storage)", password: true });
      if (key === undefined) return;
      await host.storeSecret(API_KEY_SECRET, key.trim() || undefined);
      // The shared daemon keeps the key it started with: only a new one takes this key.
      const [question, restart, run] = daemon.shared
        ? ["Restart the shared daemon (for every client) to use it?", RESTART_SHARED, () => daemon.restartShared()]
        : ["Restart the daemon to use it?", "Restart", () => daemon.restart()];
      if ((await host.info(`API key saved. ${question}`, restart)) === restart) await run();
    },
    "turnstoned.clearApiKey": async () => {
      await host.storeSecret(API_KEY_SECRET, undefined);
      void host.info("API key removed from secret storage.");
    },
    "turnstoned.addSelection": async () => {
      const excerpt = host.selection();
      if (excerpt) await chat.attach(attachment(excerpt));
      else void host.info("Select some text first.");
    },
    "turnstoned.addFile": async (uri?: unknown) => {
      const excerpt = await host.file(uri);
      if (excerpt) await chat.attach(attachment(excerpt));
    },
    "turnstoned.mcpServers": async () => {
      const client = await daemon.ready();
      if (!client) return;
      const servers = await client.mcpServers();
      logins.remember(servers);
      const picked = await host.pick(mcpPickItems(servers), { title: "MCP servers", placeHolder: "Pick a server to refresh it (one that needs a login: to log in)" });
      if (!picked) return;
      if (picked.kind === "login") return logins.login(picked.name);
      const result = await client.mcpRefresh(picked.kind === "server" ? picked.name : undefined);
      void host.info(`MCP: ${describeChanges(result.changes)}`);
      await daemon.refreshHealth();
    },
    "turnstoned.mcpRefresh": async () => {
      const client = await daemon.ready();
      if (!client) return;
      void host.info(`MCP: ${describeChanges((await client.mcpRefresh()).changes)}`);
      await daemon.refreshHealth();
    },
    "turnstoned.mcpLogin": (name?: unknown) => logins.login(typeof name === "string" ? name : undefined),
    "turnstoned.mcpLogout": (name?: unknown) => logins.logout(typeof name === "string" ? name : undefined),
    "turnstoned.mcpRevokeTrust": async () => {
      const client = await daemon.ready();
      const folder = host.activeFolder();
      if (!client || !folder) return;
      try {
        const result = await client.mcpTrust({ workspace: folder.path, trusted: false });
        void host.info(`MCP: ${result.configPath} is no longer trusted; its servers were stopped.`);
      } catch (err) {
        void host.warn(`MCP: ${rpcError(err).message}`);
      }
      await daemon.refreshHealth();
    },
    "turnstoned.compact": () => chat.compact(),
    "turnstoned.pickModel": () => pickModel(),
    "turnstoned.watches": async () => {
      const client = await having("watches", "watches", "1.3");
      if (client) await manageWatches(host, client, async () => { await refreshSessions(); return sessions; }, (id) => chat.resume(id));
    },
    "turnstoned.grants": async () => {
      const at = await inChat("policies", "grants", "1.5");
      if (at) await manageGrants(host, at.client, at.sessionId);
    },
    "turnstoned.policies": async () => {
      const at = await inChat("policies", "tool policies", "1.5");
      if (at) await managePolicies(host, at.client, at.sessionId);
    },
    "turnstoned.setApprovalMode": async () => {
      if (!(await having("approvalModes", "approval modes", "1.9"))) return;
      const info = chat.modeInfo();
      const mode = await host.pick(modePickItems(info), { title: info.pending ? "Approval mode of the next chat" : "Approval mode of this chat", placeHolder: "What runs without asking" });
      if (mode) await chat.setMode(mode);
    },
    "turnstoned.undoLastTurn": async () => {
      const at = await inChat("checkpoints", "undo and redo", "1.10");
      if (at) await chat.checkpoints.undoTurn(at.sessionId, null);
    },
    "turnstoned.redoLastUndo": async () => {
      const at = await inChat("checkpoints", "undo and redo", "1.10");
      if (at) await chat.checkpoints.redo(at.sessionId, null);
    },
    "turnstoned.sessions.refresh": () => refreshSessions(),
    "turnstoned.sessions.resume": (arg?: unknown) => {
      const id = sessionArg(arg);
      return id ? chat.resume(id) : undefined;
    },
    "turnstoned.sessions.close": async (arg?: unknown) => {
      const id = sessionArg(arg);
      const client = daemon.client;
      if (!id || !client) return;
      await client.closeSession(id);
      broker.withdrawAll(id);
      previews.closeSession(id);
      chat.closed(id);
      await refreshSessions();
    },
    "turnstoned.review.approve": (uri?: unknown) => review.decide("approve", typeof uri === "string" ? uri : undefined),
    "turnstoned.review.deny": (uri?: unknown) => review.decide("deny", typeof uri === "string" ? uri : undefined),
    "turnstoned.statusMenu": async () => {
      const actions: Record<string, string> = {
        "Show Output (protocol trace)": "turnstoned.showOutput",
        // Reconnecting to the shared daemon changes nothing of its settings: stopping it does.
        ...(daemon.shared ? { "Restart the Shared Daemon (for every client)": "turnstoned.restartShared" } : { "Restart the Daemon": "turnstoned.restart" }),
        "MCP Servers": "turnstoned.mcpServers",
        "Compact Conversation": "turnstoned.compact",
        "Watches": "turnstoned.watches",
        "Grants": "turnstoned.grants",
        "Tool Policies": "turnstoned.policies",
        "Set Approval Mode": "turnstoned.setApprovalMode",
        "Pick the Model": "turnstoned.pickModel",
        "Set API Key": "turnstoned.setApiKey",
      };
      const picked = await host.pick(Object.entries(actions).map(([label, id]) => ({ label, value: id })).concat([{ label: "Open Settings", value: "settings" }]), { title: "turnstoned" });
      if (picked === "settings") host.openSettings("turnstoned");
      else if (picked) await commands[picked]?.();
    },
  };
  for (const [id, run] of Object.entries(commands)) host.registerCommand(id, run);

  host.onSettingsChanged((affects) => {
    if (!RESTART_KEYS.some(affects)) return;
    // A daemon that is not running has nothing to lose: start it with the new settings (the
    // usual fix after "not found"). A running one may be in the middle of a turn: ask.
    if (daemon.status.state === "stopped") {
      void daemon.restart();
      return;
    }
    void host.info("turnstoned settings changed. Restart the daemon to apply them?", "Restart").then((choice) => {
      if (choice === "Restart") void daemon.restart();
    });
  });

  void daemon.ready();
  return { dispose: () => daemon.stop() };
}
