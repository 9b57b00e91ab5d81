"""What became of each hunk of a proposal in the text the user wrote."""

from __future__ import annotations

from turnstoned.core.approval.hunks import Hunk, fates, note

OLD = "a\nb\nc\nd\ne\nf\ng\n"


def test_kept_dropped_and_changed_hunks() -> None:
    proposed = "a\nB\nc\nd\nE\nf\ng\nh\n"
    final = "a\nb\nc\nd\nE!\nf\ng\nh\n"
    assert fates(OLD, proposed, final) == [
        Hunk(2, 2, "dropped"), Hunk(5, 5, "changed"), Hunk(8, 7, "kept")]


def test_an_untouched_proposal_keeps_every_hunk() -> None:
    proposed = "a\nc\nd\nX\nY\ne\nf\ng\n"
    assert {h.fate for h in fates(OLD, proposed, proposed)} == {"kept"}
    assert fates(OLD, proposed, OLD) == [Hunk(2, 2, "dropped"), Hunk(5, 4, "dropped")]


def test_an_insertion_and_a_deletion_are_named_by_where_they_were() -> None:
    hunks = fates(OLD, "a\nb\nnew\nc\nd\ne\ng\n", "a\nb\nnew\nc\nd\ne\nf\ng\n")
    assert [(h.where(), h.fate) for h in hunks] == [
        ("an insertion before line 3", "kept"), ("line 6", "dropped")]


def test_the_note_caps_the_diff() -> None:
    old = "".join(f"{i}\n" for i in range(5000))
    told = note("/w/big.txt", old, old.replace("1\n", "one\n"), "")
    assert told.startswith("[The user edited your change to /w/big.txt")
    assert "more characters of the diff" in told and len(told) < 8_000
