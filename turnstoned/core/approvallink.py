"""The engine's side of approvals: the judge and the policy book from config, and the
requests that show and change grants and policies (``grant/*``, ``policy/*``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from turnstoned import paths
from turnstoned import protocol as p
from turnstoned.config import Config, ModelSettings, resolve_entry, resolve_model
from turnstoned.core.approval import grants
from turnstoned.core.errors import EngineError
from turnstoned.core.events import EventSink
from turnstoned.llm.types import OnUsage
from turnstoned.protocol import ErrorCode

if TYPE_CHECKING:
    from turnstoned.core.approval.judge import Judge
    from turnstoned.core.approval.policy_files import PolicyBook
    from turnstoned.core.engine import Engine
    from turnstoned.core.session import Session
    from turnstoned.store import Store


def make_book(config: Config, store: Store, sink: EventSink) -> PolicyBook:
    from turnstoned.core.approval.policy_files import PolicyBook
    from turnstoned.store.trust import TrustStore

    async def ask(question: p.PolicyTrustRequestParams) -> str | None:
        answer = await sink.request_policy_trust(question)
        return answer.decision if answer is not None else None

    return PolicyBook(config.policies, str(paths.config_file()), TrustStore(store, "policies"),
                      ask)


def make_judge(engine: Engine) -> Judge | None:
    """The judge ``[judge]`` asks for (None when it is off)."""
    from turnstoned.core.approval.judge import Judge, JudgeSettings

    cfg = engine.config.judge
    if not (cfg.enabled or cfg.smart_approvals):
        return None

    def model_for(session_id: str) -> ModelSettings | str:
        if cfg.model:
            entry = engine.config.models.get(cfg.model)
            if entry is None:
                return f"[judge] model names {cfg.model!r}, which is not a [models] entry"
            return resolve_entry(entry, cfg.timeout)
        live = engine.sessions.get(session_id)
        return resolve_model(engine.config.model, live.model if live else None)

    def usage_for(session_id: str) -> OnUsage | None:
        live = engine.sessions.get(session_id)
        return live.spend() if live else None

    settings = JudgeSettings(timeout=cfg.timeout, smart=cfg.smart_approvals,
                             threshold=cfg.confidence_threshold)
    return Judge(settings, model_for, usage_for=usage_for)


def workspace_of(session: Session) -> Path:
    return Path(session.env.workspace or session.env.cwd).resolve()


def grant_list(session: Session) -> p.GrantListResult:
    policy = session.policy
    listed = [p.GrantInfo(rule=rule, description=grants.describe(rule), source="session",
                          revocable=True) for rule in sorted(policy.grants)]
    listed += [p.GrantInfo(rule=rule, description=grants.describe(rule), source="config",
                           revocable=False) for rule in sorted(policy.configured)]
    return p.GrantListResult(grants=listed)


def grant_revoke(session: Session, rule: str) -> p.GrantRevokeResult:
    policy = session.policy
    if rule not in policy.grants:
        if rule in policy.configured:
            raise EngineError(ErrorCode.INVALID_PARAMS,
                              f"{rule!r} is set in config.toml ([tools] auto_approve_tools)")
        raise EngineError(ErrorCode.GRANT_NOT_FOUND, f"session has no grant {rule!r}")
    policy.grants.discard(rule)
    policy.on_grant(policy.grants)
    return p.GrantRevokeResult(revoked=True)


def policy_trust(book: PolicyBook, params: p.PolicyTrustParams) -> p.PolicyTrustResult:
    """``policy/trust``: trust or revoke a workspace's policies file."""
    from turnstoned.core.approval.policy_files import POLICY_FILE, PolicyTrustError

    if params.config_path is not None:
        path = Path(params.config_path)
        if not path.is_absolute() or not str(path).endswith(str(POLICY_FILE)):
            raise EngineError(ErrorCode.INVALID_PARAMS,
                              f"configPath must be an absolute path to a {POLICY_FILE} file")
        workspace = path.parent.parent
    elif params.workspace is not None and Path(params.workspace).is_absolute():
        workspace = Path(params.workspace)
    else:
        raise EngineError(ErrorCode.INVALID_PARAMS,
                          "workspace (an absolute folder) or configPath is required")
    try:
        found = book.set_trusted(workspace, params.trusted, params.hash)
    except PolicyTrustError as exc:
        raise EngineError(ErrorCode.INVALID_PARAMS, str(exc)) from exc
    listed = book.listing(found.workspace).policies
    return p.PolicyTrustResult(workspace=str(found.workspace), config_path=str(found.path),
                               hash=found.hash, trusted=params.trusted,
                               policies=[x for x in listed if x.source == "workspace"])
