/** A minimal typed event emitter (the host side has no vscode.EventEmitter to lean on). */
import type { Disposable } from "./connection";

export class Emitter<T> {
  private readonly listeners = new Set<(value: T) => void>();

  /** Subscribe; the returned disposable unsubscribes. */
  event = (listener: (value: T) => void): Disposable => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }

  clear(): void {
    this.listeners.clear();
  }
}
