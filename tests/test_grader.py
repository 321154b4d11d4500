"""The grader (grader/): each blank graded alone, with the hidden tests, in a process of its own. One mistake
costs one point, a correct blank written another way earns it, patching the comparisons earns nothing, and
a loop or a runaway allocation costs its blank's point within the time limit. tests/test_nbgrader.py runs
the same submissions through nbgrader and the sandboxed grading kernel."""

import nbformat
import pytest

import grader
from benchmarks.grading import ALTERNATIVES, PATCHES_THE_CHECK, READS_THE_KEY, looping
from tools import student

LESSON = nbformat.read(student.LESSON, as_version=4)
SOLVED = grader.blank_sources(LESSON)
BLANKS = list(SOLVED)


def grade(checks, blank, source):
    return checks.check(blank, source, student.HIDDEN[f"check-{blank}"])["failed"]


def test_the_grader_sees_every_blank_of_the_edition(checks):
    assert checks.blanks() == BLANKS == student.blank_ids(LESSON)


@pytest.mark.parametrize("blank", BLANKS)
def test_a_blank_earns_its_point_alone_and_loses_it_as_handed_out_or_raising(checks, blank):
    # every other blank is the edition's stub, which raises: nothing of the student's other blanks is used
    assert grade(checks, blank, SOLVED[blank]) == {}
    assert f"check-{blank}" in grade(checks, blank, None)
    raising = SOLVED[blank].replace('"""\n', '"""\n' + " " * 4 + "raise ValueError('not yet')\n", 1)
    assert raising != SOLVED[blank] and grade(checks, blank, raising)


@pytest.mark.parametrize("blank", BLANKS)
def test_a_second_correct_way_of_writing_each_blank_earns_its_point(checks, blank):
    assert grade(checks, blank, ALTERNATIVES[blank]) == {}


def test_rebinding_the_comparisons_or_the_checks_helpers_earns_nothing_and_is_undone(checks):
    failed = grade(checks, "ddpg-soft-update", PATCHES_THE_CHECK)
    assert "check-ddpg-soft-update" in failed
    # the same patches after a correct update: the cell runs, the patches are undone, the point is earned
    assert grade(checks, "ddpg-soft-update", SOLVED["ddpg-soft-update"] + PATCHES_THE_CHECK.split("pass\n", 1)[1]) == {}


def test_a_blank_cannot_change_the_given_classes_or_torch(checks):
    cheat = SOLVED["ddpg-target"].replace("self.actor_target(s_next)", "self.actor(s_next)") + (
        "\nTwinCritic.forward = lambda self, s, a: torch.zeros(len(s))\n"
        "DDPG.critic_loss = lambda self, q, y, w: (y - q, torch.zeros(()))\n"
        "torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)\n"
    )
    assert "check-ddpg-target" in grade(checks, "ddpg-target", cheat)
    assert grade(checks, "ddpg-critic-loss", SOLVED["ddpg-critic-loss"]) == {}


def test_the_answer_key_is_found_where_it_is_within_reach(checks):
    # here the checkout is readable, so the cheat works: in the grading kernel it gets 0 (test_nbgrader.py)
    assert grade(checks, "importance-weights", READS_THE_KEY) == {}


def test_an_endless_loop_in_any_blank_costs_that_blank_within_the_time_limit():
    short = grader.Grader(timeout=1)
    try:
        for blank in BLANKS:
            failed = grade(short, blank, looping(SOLVED[blank]))
            assert list(failed) == ["program"] and failed["program"].startswith("TimeoutError"), f"{blank}: {failed}"
        assert grade(short, "ddpg-critic-loss", SOLVED["ddpg-critic-loss"]) == {}  # the next is graded as ever
    finally:
        short.close()


def test_a_runaway_allocation_costs_its_blank(checks):
    for grab in ("bytearray(1 << 40)", "torch.empty(1 << 38)", "[bytearray(1 << 27) for _ in range(1 << 10)]"):
        source = SOLVED["importance-weights"].replace('"""\n', f'"""\n    _ = {grab}\n', 1)
        assert "memory" in str(grade(checks, "importance-weights", source)).lower(), grab
    assert grade(checks, "importance-weights", SOLVED["importance-weights"]) == {}
