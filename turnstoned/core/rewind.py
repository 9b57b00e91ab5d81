"""Undo, redo, fork and review of turns: the workspace through ``undo.Checkpoints``, the
conversation through ``Sessions``.

An undo that rewinds takes the turns' messages out of what the model reads (the store
keeps them, marked with the undo's id, so redo brings them back); one that does not
tells the model at its next turn what the user undid. Both tell the editor with an
``undo`` (or ``redo``) notice, so every client showing the session redraws it.
"""

from __future__ import annotations

from typing import Any

from turnstoned import protocol as p
from turnstoned.core import messages as m
from turnstoned.core.errors import EngineError
from turnstoned.core.session import Session
from turnstoned.core.sessions import Sessions
from turnstoned.core.undo import Checkpoints
from turnstoned.protocol import ErrorCode

_LISTED = 20  # files named in the note to the model


class Rewinds:
    def __init__(self, sessions: Sessions, checkpoints: Checkpoints) -> None:
        self.sessions = sessions
        self.checkpoints = checkpoints

    def _idle(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session.running:
            raise EngineError(ErrorCode.TURN_RUNNING, "a turn is running in this session: "
                              "interrupt it (or wait for it to end) first")
        return session

    async def changes(self, params: p.TurnRef) -> p.TurnChangesResult:
        session = self.sessions.get(params.session_id)
        if not self.sessions.store.turns_from(session.id, params.turn_id):
            raise EngineError(ErrorCode.TURN_NOT_FOUND,
                              f"no turn {params.turn_id!r} in this session")
        running = session.turn is not None and session.turn.id == params.turn_id
        return await self.checkpoints.changes(session.id, params.turn_id, running)

    async def undo(self, params: p.TurnUndoParams) -> p.TurnUndoResult:
        session = self._idle(params.session_id)
        if params.rewind and params.paths is not None:
            raise EngineError(ErrorCode.INVALID_PARAMS, "rewind takes whole turns back: "
                              "leave out paths")
        turn_id = params.turn_id or self.checkpoints.rows.last_live(session.id)
        if turn_id is None:
            raise EngineError(ErrorCode.CHECKPOINT_NOT_FOUND,
                              "nothing to undo: no turn of this session changed the workspace "
                              "and is not undone already")
        result = await self.checkpoints.undo(session.id, turn_id, params.paths,
                                             params.resolutions, params.rewind)
        if not result.applied:
            return result
        if params.rewind:
            result.prompt = self._prompt(session, turn_id)
            self.sessions.store.rewind(session.id, result.turn_ids,
                                       result.undo_id or f"rewind_{turn_id}")
            self.sessions.reload(session)
            result.rewound = True
        self._tell(session, "undo", result, rewound=params.rewind)
        return result

    async def redo(self, params: p.TurnRedoParams) -> p.TurnUndoResult:
        session = self._idle(params.session_id)
        undo_id = params.undo_id or self.checkpoints.rows.last_undo(session.id)
        if undo_id is None:
            raise EngineError(ErrorCode.CHECKPOINT_NOT_FOUND, "nothing to redo in this session")
        undo = self.checkpoints.rows.get_undo(undo_id)
        if undo is None or undo.session_id != session.id:
            raise EngineError(ErrorCode.CHECKPOINT_NOT_FOUND,
                              f"no undo {undo_id!r} in this session")
        if undo.redone:
            raise EngineError(ErrorCode.CHECKPOINT_NOT_FOUND,
                              f"undo {undo_id!r} was redone already")
        result = await self.checkpoints.redo(undo, params.resolutions)
        if not result.applied:
            return result
        if undo.rewound:
            self.sessions.store.unrewind(session.id, undo.id)
            self.sessions.reload(session)
            result.rewound = True
        self._tell(session, "redo", result, rewound=undo.rewound)
        return result

    async def fork(self, params: p.SessionForkParams) -> p.SessionForkResult:
        source = self.sessions.get(params.session_id)
        if not self.sessions.store.turns_from(source.id, params.turn_id):
            raise EngineError(ErrorCode.TURN_NOT_FOUND,
                              f"no turn {params.turn_id!r} in this session")
        undo = None
        if params.restore_files:
            undo = await self.undo(p.TurnUndoParams(
                session_id=source.id, turn_id=params.turn_id, resolutions=params.resolutions))
            if not undo.applied:
                return p.SessionForkResult(undo=undo)
        row = source.row
        forked = self.sessions.start(p.SessionStartParams(
            cwd=row.cwd, workspace=row.workspace, model=source.model, kind=row.kind,
            title=params.title or (f"{source.title} (fork)" if source.title else None),
            approval_mode=source.policy.mode), parent_id=row.parent_id)
        self.sessions.store.copy_before(source.id, forked.id, params.turn_id)
        self.sessions.reload(forked)
        return p.SessionForkResult(session=forked.info(), undo=undo,
                                   prompt=self._prompt(source, params.turn_id))

    def _prompt(self, session: Session, turn_id: str) -> str | None:
        body = self.sessions.store.first_body(session.id, turn_id)
        if not body:
            return None
        first = m.decode(body)
        return first.prompt or first.text()

    def _tell(self, session: Session, kind: str, result: p.TurnUndoResult, rewound: bool) -> None:
        """The editor hears of it; the model too, unless the conversation went back with
        the files (the model then never saw the turns, or sees them again)."""
        data: dict[str, Any] = {"undoId": result.undo_id, "turnIds": result.turn_ids,
                                "rewound": rewound, "restored": [f.path for f in result.restored]}
        names = [f.path for f in result.restored]
        listed = ", ".join(names[:_LISTED]) + (f" and {len(names) - _LISTED} more"
                                               if len(names) > _LISTED else "")
        if kind == "undo":
            text = (f"The user undid {_turns(result.turn_ids)}: "
                    + (f"these files are back as they were before: {listed}."
                       if names else "no files needed restoring."))
            if result.kept:
                text += " They kept their own version of " + ", ".join(result.kept) + "."
        else:
            text = (f"The user redid {_turns(result.turn_ids)} that they had undone: "
                    + (f"these files are again as those turns left them: {listed}."
                       if names else "no files needed restoring."))
        if rewound:
            self.sessions.sink.notify(p.SessionNotice(session_id=session.id, kind=kind,
                                                      text=text, data=data))
        else:
            self.sessions.notice(session, kind, text, data, keep=True)


def _turns(turn_ids: list[str]) -> str:
    return "your last turn" if len(turn_ids) == 1 else f"your last {len(turn_ids)} turns"
