/** The JSON-RPC surface the client needs, typed by the generated protocol tables. */
import type { ClientRequests, DaemonNotifications, DaemonRequests } from "./protocol";

/** A cancellation signal; the shape of both vscode-jsonrpc's and VS Code's tokens. */
export interface CancelToken {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): unknown;
}

export interface Disposable {
  dispose(): void;
}

export type RequestName = keyof ClientRequests;
export type NotificationName = keyof DaemonNotifications;
export type DaemonRequestName = keyof DaemonRequests;
export type ParamsOf<M extends RequestName> = ClientRequests[M]["params"];
export type ResultOf<M extends RequestName> = ClientRequests[M]["result"];

/**
 * A live connection to the daemon. The extension gets one from vscode-languageclient; tests
 * and scripts get one from vscode-jsonrpc over a spawned process.
 */
export interface Connection {
  /** With `token`: cancelling it sends `$/cancelRequest` for the request. */
  sendRequest(method: string, params?: unknown, token?: CancelToken): Promise<unknown>;
  onNotification(method: string, handler: (params: never) => void): Disposable;
  onRequest(method: string, handler: (params: never, token: CancelToken) => Promise<unknown>): Disposable;
}

/** A typed view of a Connection: method names and shapes come from protocol.ts only. */
export class TypedConnection {
  constructor(readonly raw: Connection) {}

  /** `token`: cancelling it withdraws the request (`$/cancelRequest`). */
  request<M extends RequestName>(method: M, params: ParamsOf<M>, token?: CancelToken): Promise<ResultOf<M>> {
    const sent = token ? this.raw.sendRequest(method, params ?? undefined, token) : this.raw.sendRequest(method, params ?? undefined);
    return sent as Promise<ResultOf<M>>;
  }

  on<M extends NotificationName>(method: M, handler: (params: DaemonNotifications[M]) => void): Disposable {
    return this.raw.onNotification(method, handler as (params: never) => void);
  }

  serve<M extends DaemonRequestName>(
    method: M,
    handler: (params: DaemonRequests[M]["params"], token: CancelToken) => Promise<DaemonRequests[M]["result"]>,
  ): Disposable {
    return this.raw.onRequest(method, handler as (params: never, token: CancelToken) => Promise<unknown>);
  }
}

/** A protocol error as the daemon sends it: code, message and `data.kind`. */
export interface RpcError {
  code: number;
  message: string;
  kind: string | undefined;
}

/** Read the code, message and `data.kind` of a rejected request, whatever library threw it. */
export function rpcError(err: unknown): RpcError {
  if (typeof err === "object" && err !== null) {
    const e = err as { code?: unknown; message?: unknown; data?: unknown };
    const data = e.data as { kind?: unknown } | undefined;
    return {
      code: typeof e.code === "number" ? e.code : 0,
      message: typeof e.message === "string" ? e.message : String(err),
      kind: data && typeof data.kind === "string" ? data.kind : undefined,
    };
  }
  return { code: 0, message: String(err), kind: undefined };
}
