/** Test support: collect a client's events and wait for one, bounded. */
import type { TurnstonedClient } from "../../src/client";
import type { DaemonEvent } from "../../src/protocol";
import type { DaemonNotifications } from "../../src/protocol";

export class EventLog {
  readonly events: DaemonEvent[] = [];
  private waiters: { match: (e: DaemonEvent) => boolean; resolve: (e: DaemonEvent) => void }[] = [];

  constructor(client: TurnstonedClient) {
    client.onEvent((event) => {
      this.events.push(event);
      for (const w of [...this.waiters]) {
        if (w.match(event)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(event);
        }
      }
    });
  }

  /** The first event (already seen or still to come) that matches, within `ms`. */
  wait<M extends DaemonEvent["method"]>(method: M, match: (e: Extract<DaemonEvent, { method: M }>) => boolean = () => true, ms = 10000): Promise<Extract<DaemonEvent, { method: M }>> {
    const test = (e: DaemonEvent) => e.method === method && match(e as Extract<DaemonEvent, { method: M }>);
    const seen = this.events.find(test);
    if (seen) return Promise.resolve(seen as Extract<DaemonEvent, { method: M }>);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${method} within ${ms} ms; saw ${this.events.map((e) => e.method).join(", ")}`)), ms);
      this.waiters.push({ match: test, resolve: (e) => { clearTimeout(timer); resolve(e as Extract<DaemonEvent, { method: M }>); } });
    });
  }

  of<M extends DaemonEvent["method"]>(method: M): DaemonNotifications[M][] {
    return this.events.filter((e) => e.method === method).map((e) => e.params as unknown as DaemonNotifications[M]);
  }
}
