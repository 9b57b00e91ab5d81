"""What web_fetch and open_preview share: screening a URL at prepare, and the approval it asks.

The URL is screened when the call is prepared, so the user is asked only about
a fetch that can happen, and a private-network target says so in the approval
(and is never covered by a standing grant). The fetch screens every hop again
when it runs: what the user approved is the first hop's lane, not a pass for
whatever the name resolves to later.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnstoned.net.screen import Screened, decide
from turnstoned.tools.base import PreparedCall, ToolContext, prepare_error

PRIVATE_MARK = " (private network)"


@dataclass(frozen=True, slots=True)
class UrlPlan:
    url: str  # canonical: normalised host, no user info, no fragment
    private: bool  # approved as a private-network target
    addresses: str  # what the host resolved to, for the approval


def screen_for_call(tool: str, raw_url: str, ctx: ToolContext) -> UrlPlan | PreparedCall:
    """The plan for fetching ``raw_url``, or the prepared error the model reads."""
    web = ctx.env.services.web
    if web is None:
        return prepare_error(f"Error: {tool} is not available in this daemon (no web access).")
    url = raw_url.strip()
    screened = web.fetcher.screen_url(url)
    if not isinstance(screened, Screened):
        return prepare_error(f"Error: {screened}", header=f"✗ {tool}: {url[:80]}")
    decision = decide(screened, web.settings.allow_private_network)
    if not decision.allowed:
        blocked = " (private network)" if "private/internal" in decision.message else ""
        return prepare_error(f"Error: {decision.message}",
                             header=f"✗ {tool}: blocked{blocked} {url[:80]}")
    return UrlPlan(screened.target.url, decision.private, screened.describe())


def approval(tool: str, plan: UrlPlan, extra: str = "") -> tuple[str, str]:
    """The header and preview of a URL call's approval."""
    mark = PRIVATE_MARK if plan.private else ""
    lines = [f"URL: {plan.url}", f"Resolves to: {plan.addresses}"]
    if plan.private:
        lines.insert(0, "⚠ This reaches your private network (allowed by "
                        "[tools] allow_private_network). Approve only if you expect it.")
    if extra:
        lines.append(extra)
    return f"⚙ {tool}: {plan.url[:80]}{mark}", "\n".join(lines)
