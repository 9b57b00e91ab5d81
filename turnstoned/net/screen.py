"""Screening a target: resolve its host, judge every answer, decide.

A host is as bad as its worst address. A resolution failure or an empty answer
refuses (fail closed). ``localhost`` and ``*.localhost`` are loopback by name
(RFC 6761) and never looked up; the cloud metadata host names are refused by
name. ``decide`` applies the user's opt-in: private targets are allowed only
with ``allow_private_network`` and only when every answer is private, so a
name that also resolves publicly cannot smuggle a private address through.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass

from turnstoned.net.addresses import Judgement, Lane, classify, judge
from turnstoned.net.urls import Target

# (host, port) -> the host's addresses as text, in the order to try them. Raises
# OSError (or UnicodeError) when the name cannot be resolved.
Resolver = Callable[[str, int], list[str]]

METADATA_NAMES = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "instance-data",
    "instance-data.ec2.internal", "metadata.azure.com",
})

OPT_IN_HINT = ("Set `allow_private_network = true` under [tools] in the turnstoned config "
               "to allow private-network addresses (each such fetch still asks).")


def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's answers for ``host``, duplicates removed, in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True)
class Screened:
    """What a target's host resolved to and how each answer was judged."""

    target: Target
    judgements: tuple[Judgement, ...]
    problem: str = ""  # set when nothing could be judged (unresolvable, blocked name)

    @property
    def lane(self) -> Lane:
        if self.problem or not self.judgements:
            return Lane.NEVER
        return max(j.lane for j in self.judgements)

    @property
    def mixed(self) -> bool:
        """Both public and private answers (and no never-lane one)."""
        lanes = {j.lane for j in self.judgements}
        return lanes == {Lane.PUBLIC, Lane.PRIVATE}

    @property
    def addresses(self) -> list[str]:
        return [j.address for j in self.judgements]

    def describe(self, lane: Lane | None = None) -> str:
        chosen = [j for j in self.judgements if lane is None or j.lane == lane]
        return ", ".join(j.describe() for j in chosen)


def screen(target: Target, resolver: Resolver) -> Screened:
    """Resolve (unless the host is an address) and judge every answer."""
    if target.ip is not None:
        return Screened(target, (judge(target.ip),))
    host = target.host
    if host in METADATA_NAMES:
        return Screened(target, (), f"Blocked: URL names a metadata host ({host})")
    if host == "localhost" or host.endswith(".localhost"):
        return Screened(target, (classify("127.0.0.1"),))
    try:
        answers = resolver(host, target.port)
    except (OSError, UnicodeError) as exc:
        return Screened(target, (), f"Blocked: hostname cannot be resolved ({host}: {exc})")
    if not answers:
        return Screened(target, (), f"Blocked: hostname cannot be resolved ({host}: no address)")
    return Screened(target, tuple(classify(a) for a in answers))


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    private: bool = False  # allowed only through the private-network opt-in
    message: str = ""  # why not (model-facing), when refused


def decide(screened: Screened, allow_private: bool) -> Decision:
    """Whether a screened target may be requested under the opt-in setting."""
    if screened.problem:
        return Decision(False, message=screened.problem)
    lane = screened.lane
    if lane is Lane.PUBLIC:
        return Decision(True)
    if lane is Lane.NEVER:
        return Decision(False, message=(
            "Blocked: URL resolves to a link-local/multicast/unspecified/reserved/metadata "
            f"address ({screened.describe(Lane.NEVER)}); this is never allowed."))
    base = f"Blocked: URL resolves to a private/internal address ({screened.describe(Lane.PRIVATE)})"
    if not allow_private:
        return Decision(False, message=f"{base}. {OPT_IN_HINT}")
    if screened.mixed:
        return Decision(False, message=(
            f"{base}. That hostname also resolves to a public address, so it cannot be "
            "approved as a private-network target; use the private address directly."))
    return Decision(True, private=True)
