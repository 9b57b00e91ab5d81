"""The policies that apply to a session: the user's config, and its workspace's file if any.

A workspace's ``.turnstone/policies.toml`` is read fresh for every batch (it is
small), hashed, and its ``allow`` rules count only when the user trusted that
hash (``TrustStore`` subject ``policies``, beside the project MCP decisions).
When a session opens in a workspace whose file has ``allow`` rules nobody
decided about, the user is asked once per content (``policy/requestTrust``);
``trust``/``deny`` are remembered, anything else leaves its allow rules off
and asks at the next session. ``policy/trust`` decides on demand.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from turnstoned import protocol as p
from turnstoned.config import ConfigError, PolicyFile, PolicyRule, decode
from turnstoned.core.approval.policies import Policy, ordered
from turnstoned.questions import Answer, TrustQuestions
from turnstoned.store.trust import TrustStore

POLICY_FILE = Path(".turnstone") / "policies.toml"
MAX_BYTES = 256 * 1024
# Returns "trust", "deny" or "dismiss"; anything else (None included) trusts nothing.
Ask = Callable[[p.PolicyTrustRequestParams], Awaitable[str | None]]


class PolicyTrustError(Exception):
    """An explicit trust/revoke cannot be done; the message says why."""


@dataclass(frozen=True, slots=True)
class WorkspaceFile:
    workspace: Path
    path: Path
    hash: str
    rules: list[PolicyRule]
    problem: str | None = None


def read_file(workspace: Path) -> WorkspaceFile | None:
    """The workspace's policies file now (None when it has none)."""
    path = workspace / POLICY_FILE
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        return WorkspaceFile(workspace, path, "", [], f"cannot read: {exc.strerror}")
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_BYTES:
        return WorkspaceFile(workspace, path, digest, [], f"larger than {MAX_BYTES} bytes")
    try:
        rules = decode(path, data, PolicyFile).policies
    except ConfigError as exc:
        return WorkspaceFile(workspace, path, digest, [], str(exc))
    return WorkspaceFile(workspace, path, digest, rules)


class PolicyBook:
    """Every session's policies, and the user's trust in workspace files."""

    def __init__(self, config_rules: list[PolicyRule], config_path: str,
                 decisions: TrustStore, ask: Ask | None) -> None:
        self._config = [Policy(rule, "config", config_path, i + 1)
                        for i, rule in enumerate(config_rules)]
        self._decisions = decisions
        self._ask = ask
        self.questions = TrustQuestions()

    def policies(self, workspace: Path) -> tuple[list[Policy], WorkspaceFile | None]:
        """The policies for a session in ``workspace``, in the order they are tried."""
        found = read_file(workspace)
        return self._listed(found), found

    def _listed(self, found: WorkspaceFile | None) -> list[Policy]:
        """The config's policies and those of ``found`` (as read and hashed), in order."""
        listed = list(self._config)
        if found is not None:
            trusted = self.decision(found) == "trusted"
            for i, rule in enumerate(found.rules):
                untrusted = rule.action == "allow" and not trusted
                listed.append(Policy(rule, "workspace", str(found.path), i + 1,
                                     active=not untrusted,
                                     note="not trusted: a workspace file may deny or ask, but "
                                          "allows only once the user trusts it (policy/trust)"
                                     if untrusted else ""))
        return ordered(listed)

    def decision(self, found: WorkspaceFile) -> str | None:
        return self._decisions.decision(str(found.workspace), found.hash)

    def listing(self, workspace: Path) -> p.PolicyListResult:
        policies, found = self.policies(workspace)
        info = None
        if found is not None:
            decided = self.decision(found)
            info = p.PolicyFileInfo(path=str(found.path), hash=found.hash, problem=found.problem,
                                    decision="trusted" if decided == "trusted" else
                                    "denied" if decided == "denied" else None)
        return p.PolicyListResult(policies=[x.info() for x in policies], workspace_file=info)

    def open(self, workspace: Path) -> None:
        """A session opened in ``workspace``: ask about its file if it would allow something
        and nobody decided about this content yet."""
        found = read_file(workspace.resolve())
        if found is None or not any(r.action == "allow" for r in found.rules):
            return
        ask = self._ask
        if self.decision(found) is not None or ask is None:
            return

        async def question() -> str | None:
            # Built from the bytes that were hashed: what the user trusts is what was shown.
            policies = self._listed(found)
            return await ask(p.PolicyTrustRequestParams(
                workspace=str(found.workspace), config_path=str(found.path), hash=found.hash,
                policies=[x.info() for x in policies if x.source == "workspace"],
                previously_trusted=self._decisions.ever_trusted(str(found.workspace))))

        def decided(answer: Answer) -> None:
            self._decisions.record(str(found.workspace), str(found.path), found.hash,
                                   "trusted" if answer == "trust" else "denied")

        self.questions.ask((found.workspace, found.hash), str(found.path), question, decided)

    def set_trusted(self, workspace: Path, trusted: bool,
                    expected_hash: str | None = None) -> WorkspaceFile:
        """Trust or revoke the workspace's current file; raises ``PolicyTrustError``."""
        found = read_file(workspace.resolve())
        if found is None:
            raise PolicyTrustError(f"{workspace} has no {POLICY_FILE}")
        if expected_hash is not None and expected_hash != found.hash:
            raise PolicyTrustError(f"{found.path} changed since it was shown "
                                   f"(hash {found.hash})")
        key = str(found.workspace)
        if not trusted:
            self._decisions.revoke(key)
        self._decisions.record(key, str(found.path), found.hash,
                               "trusted" if trusted else "denied")
        return found

    async def close(self) -> None:
        """Withdraw pending questions."""
        await self.questions.close()
