/** A chat's standing grants: what "Always allow" saved, listed to read and to take back. */
import type { TurnstonedClient } from "./client";
import { rpcError } from "./connection";
import type { Host, PickItem } from "./host";
import type { GrantInfo } from "./protocol";

/** One row per grant: the rule as saved, where it comes from, what it lets run unasked. */
export function grantPickItems(grants: GrantInfo[]): PickItem<GrantInfo>[] {
  return grants.map((g) => ({
    label: `${g.source === "session" ? "$(key)" : "$(gear)"} ${g.rule}`,
    description: g.source === "session" ? "saved by “Always allow” in this chat" : "config.toml [tools] auto_approve_tools",
    detail: g.description,
    value: g,
  }));
}

export type GrantAction = "revoke";

export function grantActions(grant: GrantInfo): PickItem<GrantAction>[] {
  return [{ label: `$(trash) Revoke ${grant.rule}`, description: "its calls ask again", value: "revoke" }];
}

/**
 * The Grants command: list a session's grants; a picked one can be revoked, and the list comes
 * back without it. A grant from config.toml is changed there, not here.
 */
export async function manageGrants(host: Host, client: TurnstonedClient, sessionId: string): Promise<void> {
  for (;;) {
    const grants = await client.grants(sessionId);
    if (!grants.length) {
      void host.info("This chat has no grants: nothing runs unasked because of an earlier “Always allow”.");
      return;
    }
    const grant = await host.pick(grantPickItems(grants), { title: "Grants of this chat", placeHolder: "Pick a grant to revoke it" });
    if (!grant) return;
    if (!grant.revocable) {
      void host.info(`${grant.rule} is set in config.toml ([tools] auto_approve_tools): remove it there.`);
      return;
    }
    if ((await host.pick(grantActions(grant), { title: `Grant ${grant.rule}` })) !== "revoke") return;
    try {
      await client.revokeGrant(sessionId, grant.rule);
      void host.info(`Revoked ${grant.rule}: its calls ask again.`);
    } catch (err) {
      void host.warn(`grant/revoke: ${rpcError(err).message}`);
    }
  }
}
