"""Issue 30 item 1, issue 37 item 1: a child's death is the machine's only on proof the grader owns.

A part's child killed from outside once (here: the test itself sends SIGKILL before the check's
first call; nothing races) runs again in a fresh child and keeps full marks. Killed so every time,
with nothing to prove it was the machine, it died the same way in every fresh child: charged. Only
proof the grader owns (here: the session's leader, which no process of the part can reach, killed
every time) makes a part "not graded", with no point lost and no score in any channel. A real
memory hog, CPU loop and sleep are still charged, each with the cause that was measured; so are a
part that SIGKILLs itself, closes its own channel, or dies only on some hidden inputs.
"""
import json
import os
import select
import signal
import subprocess
import sys
import time
import types

import process_ends
import pytest
from part_edits import run_one, submission
from rubric_points import PART as POINTS

from autograder import grading, reports, runner
from autograder.sandbox import client, death, idle, procfs

PART = "simple_attention"


def kill_from_outside(student, target="child"):
    """SIGKILL to the part's child (as an operator or another program sends it) or to its session's
    leader (which no process of the part can reach); waits until the child is gone."""
    part = student.session
    pidfd = part.pidfd if target == "child" else part.session.leader_pidfd
    os.kill(client._host_pid(pidfd), signal.SIGKILL)
    select.select([pidfd], [], [])  # a pidfd is readable once its process has ended
    select.select([part.pidfd], [], [])  # the child, after its leader: its parent-death signal


def suites_killing(engine, times, target="child"):
    """The real suites, with the part's first check killing its child (or its leader) first, on its
    first `times` calls."""
    rubric, suites, _ = engine
    (name, check), rest = suites[PART][0], suites[PART][1:]
    calls = []

    def killer(student, book):
        calls.append(1)
        if len(calls) <= times:
            kill_from_outside(student, target)
        return check(student, book)

    killer.__signature__ = __import__("inspect").signature(check)
    return {**suites, PART: [(name, killer)] + rest}, calls


def grade_with(engine, folder, suites):
    """Graded by the session's engine (Engine.grade) with these suites."""
    return engine.with_suites(suites).grade(folder, parts=[PART], figures=False)


@pytest.mark.quick
def test_a_child_killed_from_outside_is_graded_again_in_a_fresh_one(engine, tmp_path):
    suites, calls = suites_killing(engine, times=1)
    grade = grade_with(engine, submission(tmp_path), suites)
    assert len(calls) == 2  # killed once, then run again
    assert grade.parts[PART].score == grade.parts[PART].max_score == POINTS[PART]
    assert not grade.parts[PART].problem and not grade.not_graded
    assert all(c.passed for c in grade.checks), [(c.name, c.message) for c in grade.checks if not c.passed]


def test_a_kill_with_no_proof_every_time_is_charged(engine, tmp_path):
    """The same outside SIGKILL in every fresh child, and nothing the grader owns says it was the
    machine (no leader gone, no out-of-memory kill): the part's own code could do exactly that, so
    it is charged with what was seen, never "not graded"."""
    suites, calls = suites_killing(engine, times=99)
    grade = grade_with(engine, submission(tmp_path), suites)
    assert len(calls) == runner.MACHINE_RETRIES + 1
    assert grade.not_graded == {} and grade.parts[PART].score < 10
    assert grade.parts[PART].problem == f"the {PART} process {death.UNEXPLAINED_KILL} ({runner.SAME_EVERY_TIME})"


def test_a_part_the_machine_kills_every_time_is_not_graded_and_loses_nothing(engine, tmp_path):
    suites, calls = suites_killing(engine, times=99, target="leader")
    grade = grade_with(engine, submission(tmp_path), suites)
    assert len(calls) == runner.MACHINE_RETRIES + 1
    assert list(grade.not_graded) == [PART]
    assert grade.not_graded[PART] == (f"not graded: the machine was overloaded (its process {death.LEADER_GONE}, "
                                      f"{runner.MACHINE_RETRIES + 1} times)")
    assert all(c.not_graded for c in grade.checks)
    assert not any("memory than the part" in c.message for c in grade.checks)  # the student's cause is not guessed
    # no channel gives a score: not a lower one, none
    table = reports.table(grade)
    assert "not graded" in table.splitlines()[4] and "NOT GRADED: the machine was overloaded" in table
    for results in (reports.student_results(grade), reports.gradescope_results(grade)):
        assert "score" not in results and results["tests"] == []
        assert results["output"] == grading.NOT_GRADED_MESSAGE
    assert reports.markdown(grade) == f"## Not graded\n\n{grading.NOT_GRADED_MESSAGE}\n"
    record = reports.results_json(grade)  # the instructor's: the numbers kept, flagged, no score said
    assert list(record["extra_data"]["not_graded"]) == [PART]
    assert record["output"] == "Not graded: the machine was overloaded (simple_attention): no score stands"
    assert grading.not_graded_problem(grade) == ("not graded: the machine was overloaded (parts: simple_attention): "
                                                 "graded again on the next run")


def test_the_batch_writes_no_score_for_a_part_not_graded(tmp_path):
    """grades.csv: an empty score and part cell (never a 0) and the problem; the summary says so."""
    from autograder import batch
    from autograder.course.gradebook import Gradebook

    book = Gradebook(tmp_path / "gradebook.db")
    problem = "not graded: the machine was overloaded (parts: simple_attention): graded again on the next run"
    results = {"score": 90, "max_score": 100, "tests": [], "extra_data": {"not_graded": {"simple_attention": problem}},
               "parts": {"simple_attention": {"score": 0, "max_score": 10}, "causal": {"score": 22, "max_score": 22}}}
    book.record("ann", batch.RETRY + "x", results, problem)
    batch.write_csv(book, tmp_path / "grades.csv")
    row = (tmp_path / "grades.csv").read_text().splitlines()[1].split(",")
    header = (tmp_path / "grades.csv").read_text().splitlines()[0].split(",")
    cells = dict(zip(header, row, strict=False))
    assert cells["score"] == cells["max_score"] == cells["simple_attention"] == ""
    assert cells["causal"] == "22" and cells["problem"].startswith("not graded: the machine")
    said = batch.summary_text(book, "subs", tmp_path, batch.Outcome(["ann"], ["ann"], []))
    assert "not graded, no score (1):" in said and "scored 0" not in said
    from autograder.reports import class_report

    page = class_report.class_report([("ann", results, problem), ("bob", {**results, "score": 50, "extra_data": {}}, "")])
    assert "not graded: the machine was overloaded</td>" in page and "2 submission(s)" not in page
    assert "1 submission(s); mean 50.0" in page  # ann's numbers count for nothing: no score stands
    book.close()




HOG = """import os
import signal
import sys
import time


def work():
    # four processes of 300 MiB each (each within its address-space limit): together over the
    # part's 512 MiB, which only its control group counts. Once the group's out-of-memory killer has
    # taken one, this process ends itself with SIGKILL: the group's counter says why
    for _ in range(4):
        if os.fork() == 0:
            block = bytearray(300 << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            time.sleep(60)
            os._exit(0)
    os.wait()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_real_memory_hog_is_charged_with_the_measured_cause(engine, tmp_path):
    run = run_one(engine, tmp_path, HOG, timeout=20)
    if not any(p.startswith("control group (memory") for p in run.protections):
        pytest.skip(f"no control group on this machine (protections: {run.protections})")
    assert not run.not_graded and not run.results[0].passed
    assert run.problem == ("the task process was killed by the kernel (SIGKILL): its processes together used more "
                           "memory than the part's limit (512 MB)"), run.problem


# issue 37 item 1: deaths a part can cause itself are charged, each in every mode (root or not)

SELF_KILL = "import os\nimport signal\n\ndef work():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
CLOSE_OWN = ("import os\nimport time\n\ndef work():\n    os.closerange(3, 4096)  # its channel to the grader too\n"
             "    time.sleep(600)\n")
LOWER_CPU = ("import resource\n\ndef work():\n    try:  # soft = hard: the kernel's SIGKILL after 1 s\n"
             "        resource.setrlimit(resource.RLIMIT_CPU, (1, 1))\n    except (ValueError, OSError):\n"
             "        pass\n    while True:\n        pass\n")
MEMFD = ("import os\n\ndef work():\n    kept = []\n    for _ in range(512):  # 8 GiB in memory files, unmapped\n"
         "        fd = os.memfd_create('hog')\n        os.write(fd, b'1' * (16 << 20))\n        kept.append(fd)\n"
         "    return 'done'\n")


@pytest.mark.quick
def test_a_part_that_kills_itself_is_charged_not_left_ungraded(engine, tmp_path):
    run = run_one(engine, tmp_path, SELF_KILL)
    assert not run.not_graded and not run.results[0].passed
    assert run.problem == f"the task process {death.UNEXPLAINED_KILL} ({runner.SAME_EVERY_TIME})", run.problem


def test_a_part_that_closes_its_own_channel_is_charged(engine, tmp_path):
    """The grader's kill that follows the closed channel is remembered as the grader's: never "from outside"."""
    run = run_one(engine, tmp_path, CLOSE_OWN)
    assert not run.not_graded and not run.results[0].passed
    assert run.problem == f"the task process {death.CLOSED_CHANNEL} ({runner.SAME_EVERY_TIME})", run.problem


def test_a_part_cannot_lower_its_own_cpu_limit_to_die_by_the_kernel(engine, tmp_path):
    """setrlimit is refused (the filter), so the loop meets the grader's own CPU-time limit: charged as CPU time."""
    run = run_one(engine, tmp_path, LOWER_CPU, timeout=1)
    assert run.timed_out and not run.not_graded and not run.results[0].passed
    assert "timed out after 1 s of CPU time (the part's time limit)" in run.results[0].message, run.results[0].message


def test_memory_files_are_refused_so_no_memory_escapes_the_limit(engine, tmp_path):
    """Issue 37 item 5: memfd_create (memory no address-space limit sees) is refused in every mode:
    the check fails on the code's own error, charged, never "not graded" and never the machine's
    out-of-memory killer."""
    run = run_one(engine, tmp_path, MEMFD)
    assert not run.not_graded and not run.problem and not run.results[0].passed
    assert "PermissionError" in run.results[0].message, run.results[0].message


def test_the_part_s_processes_are_the_first_the_oom_killer_takes(engine, tmp_path):
    """Issue 37 item 5: oom_score_adj 1000 in the part's child, with root or without (the non-root
    path runs when the suite runs as a non-root user)."""
    source = "def work():\n    return open('/proc/self/oom_score_adj').read().strip()\n"
    _, _, sandbox = engine
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "task.py").write_text(source)
    session = sandbox.session(folder)
    part = session.part(10, 512)
    try:
        from autograder.student import Student

        assert Student(part).module("task").work() == "1000"
        assert "first to go if the machine runs out of memory" in part.protections, part.protections
    finally:
        part.close()
        session.close()


DIES_ON_ODD = ("import os\nimport signal\n\ndef work(digit):\n    if digit % 2:\n"
               "        os.kill(os.getpid(), signal.SIGKILL)\n    return 'done'\n")


@pytest.mark.parametrize("digit, passes", [(7, False), (4, True)])
def test_after_a_hidden_input_a_death_is_never_free(engine, tmp_path, digit, passes):
    """A part that dies only when a digit of the hidden input is odd: it dies on that input in each
    fresh child, so the check is charged (its bit costs the points it would cost any failed check),
    never "not graded" (which would cost nothing and tell the bit anyway)."""
    _, _, sandbox = engine
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "task.py").write_text(DIES_ON_ODD)

    def test_hidden(student):
        assert student.module("task").work(digit) == "done"

    run = runner.PartRun("task")
    context = runner.SubmissionContext(str(folder), None, {})
    place = runner.Place(sandbox, context)
    runner.run_checks(place, run, [("hidden", test_hidden)], runner.Limits(2, 512, 2), runner.default_fixtures(),
                      last=True, hidden=True)
    place.close()
    assert not run.not_graded and run.results[0].passed is passes
    if not passes:
        assert run.problem == f"the task process {death.UNEXPLAINED_KILL} ({runner.SAME_EVERY_TIME})", run.problem


def test_a_real_cpu_loop_is_charged_with_its_cpu_time(engine, tmp_path):
    run = run_one(engine, tmp_path, "def work():\n    while True:\n        pass\n", timeout=1)
    assert run.timed_out and not run.not_graded
    assert "timed out after 1 s of CPU time (the part's time limit)" in run.results[0].message


def test_a_real_sleep_is_charged_with_the_wall_clock(engine, tmp_path, monkeypatch):
    """The wall clock behind the CPU limit cut to 4 s (it is 4x + 10 s): the child sleeps, measured
    as neither on a CPU nor waiting for one, so the waiting is its own (a busy machine that kept it
    waiting for a CPU would need to do so for 2 of those 4 s to change that: it needs a few ms)."""
    monkeypatch.setattr(client.PartChild, "WALL_FACTOR", 1)
    monkeypatch.setattr(client.PartChild, "WALL_SLACK", 3)
    run = run_one(engine, tmp_path, "import time\n\ndef work():\n    time.sleep(60)\n", timeout=1)
    assert run.timed_out and not run.not_graded
    assert "timed out after 4 s of waiting (the part's wall-clock limit): look for code that waits" in run.problem


def test_waiting_for_a_cpu_is_the_machine_s(monkeypatch):
    """The readings alone: runnable but not running for most of the wall clock is not sleeping. (The
    grading thread's own time is held still: tests/test_machine_deaths.py's next test reads it.)"""
    readings = iter([(0.1, 0.2), (0.6, 7.0)])
    monkeypatch.setattr(death, "schedule", lambda pid: next(readings))
    monkeypatch.setattr(procfs, "own_schedule", lambda: 5.0)
    gauge = death.Gauge.start(None, 1)
    assert gauge.asleep(1, 8.0) is False  # 0.5 s on a CPU, 6.8 s waiting for one: the machine's
    readings = iter([(0.0, 0.0), (0.1, 0.3)])
    gauge = death.Gauge.start(None, 1)
    assert gauge.asleep(1, 8.0) is True
    monkeypatch.setattr(death, "schedule", lambda pid: None)
    assert death.Gauge.start(None, 1).asleep(1, 8.0) is None  # unmeasured: never charged


def test_waiting_for_the_grader_is_not_sleeping(monkeypatch):
    """At a wall-clock deadline, the grading thread's own CPU time and run delay during the part (answering
    the stand-ins' questions, judging replies, slowed by a busy machine) is not the child's sleep: 26 s
    of wall clock, the child 0.3 s on a CPU and 0.2 s waiting for one, the grader 20 s on a CPU or
    waiting for one: not asleep (before: asleep, charged "timed out after 26 s of waiting"). With the
    grader idle too, the child slept."""
    readings = iter([(0.0, 0.0), (0.3, 0.2)] * 2)
    monkeypatch.setattr(death, "schedule", lambda pid: next(readings))
    grader = iter([100.0, 120.0, 100.0, 100.5])
    monkeypatch.setattr(procfs, "own_schedule", lambda: next(grader))
    assert death.Gauge.start(None, 1).asleep(1, 26.0) is False
    assert death.Gauge.start(None, 1).asleep(1, 26.0) is True


SPIN = 3.5
V2_RAISES = ("self_attention_v2", "        super().__init__()\n", "        super().__init__()\n        raise KeyError(1)\n")


def test_a_child_waiting_on_a_slow_grader_is_not_charged_for_sleeping(engine, tmp_path, monkeypatch):
    """weight_transfer beside a SelfAttention_v2 that raises: its child asks the grader for the stand-ins'
    answers and waits. The grader made slow on purpose, as a busy machine makes it (SPIN s of its own CPU
    before each of its first two answers, outside what the part is charged for them: each alone, and
    the two together, outlast the wall clock; spinning before all seven answers proved no more and cost
    17 s more of CPU), and the wall clock behind the part
    cut to 3 s (its far wall clock out of reach): the child waits on the grader past that wall clock, which is moved on (the grader's time
    is not the child's sleep) and the part keeps full marks. Before, the part was charged "timed out
    after 3 s of waiting" (a batch under load lost 2 points so, 2026-11-28)."""
    from autograder import student as student_module

    real = student_module.stand_ins.answer
    answered = []

    def slow_answer(*args, **kwargs):
        answered.append(1)
        if len(answered) <= 2:
            end = time.process_time() + SPIN
            while time.process_time() < end:
                pass
        return real(*args, **kwargs)

    monkeypatch.setattr(student_module.stand_ins, "answer", slow_answer)
    monkeypatch.setattr(client.PartChild, "WALL_FACTOR", 0)
    monkeypatch.setattr(client.PartChild, "WALL_SLACK", 3)
    monkeypatch.setattr(client.PartChild, "FAR_WALL", 1000)  # the far wall clock out of reach, however slow the machine
    grade = engine.grade(submission(tmp_path, V2_RAISES), parts=["weight_transfer"], figures=False)
    part = grade.parts["weight_transfer"]
    assert len(answered) > 2 and SPIN > client.PartChild.WALL_SLACK  # each slow answer alone outlasts the wall clock
    assert not grade.not_graded and not part.problem, part.problem
    assert part.score == part.max_score == POINTS["weight_transfer"], [(c.name, c.message) for c in grade.checks]


class _AlwaysLate:
    """autograder.inside.protocol as the session module sees it, but a control message asked for once its
    deadline has passed is late, whether or not it has come in meanwhile: the machine slower than a
    wall clock of 0 s, every time, whatever the grader's own process was doing in between."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def receive_message(self, sock, deadline=None, max_fds=4):
        if deadline is not None and deadline <= time.monotonic():
            raise self._real.Deadline("no control message in time")
        return self._real.receive_message(sock, deadline, max_fds)


@pytest.mark.parametrize("clock", ["START_SECONDS", "PART_SECONDS"])
def test_a_sandbox_slower_than_its_own_wall_clock_is_not_charged(engine, tmp_path, monkeypatch, clock):
    """The leader of a session, or its first part child, slower to start than the grader's wall clock
    for it (0 s here, as a machine busy enough makes the 60 s and 30 s): no code of the submission has
    run in that session, so it is the machine's: run again in a fresh session, then "not graded" with
    no point lost (before: charged at once, 0 points, "the simple_attention process could not start the
    sandbox (no control message in time)" or "... the sandbox lost its session (no control message in
    time)").

    A wall clock of 0 s alone raced the machine: the socket is read without waiting once the deadline
    has passed, so a leader or child whose reply was already there when the grader came to read it
    (the grader's process preempted between its request and its read, as a busy machine does: seen
    once at load 7-9) was on time, and the part was graded. Here a reply counts as on time only when
    the grader reads it before its deadline, as with any clock the leader is slower than; a deadline
    still ahead is read as before."""
    from autograder.sandbox import session

    monkeypatch.setattr(session.Session, clock, 0)
    monkeypatch.setattr(session, "protocol", _AlwaysLate(session.protocol))
    grade = grade_with(engine, submission(tmp_path), engine[1])
    assert list(grade.not_graded) == [PART], grade.parts[PART].problem
    assert grade.not_graded[PART].startswith("not graded: the machine was overloaded (its process "), grade.not_graded
    assert all(c.not_graded for c in grade.checks)


@pytest.mark.quick
def test_an_oom_kill_is_read_from_the_group(tmp_path):
    for name, body in (("memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n"),
                       ("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / name).write_text(body)
        group = types.SimpleNamespace(folders=[str(folder)])
        gauge = death.Gauge(death.oom_kills(group), None)
        assert gauge.oom_kills == 2 and not gauge.oom_killed(group)
        (folder / name).write_text(body.replace("oom_kill 2", "oom_kill 3"))
        assert gauge.oom_killed(group)
    assert death.oom_kills(None) is None


def test_results_json_of_a_graded_run_has_no_not_graded_key(engine, tmp_path):
    suites, _ = suites_killing(engine, times=0)
    grade = grade_with(engine, submission(tmp_path), suites)
    assert grade.not_graded == {} and "not_graded" not in reports.results_json(grade)["extra_data"]
    assert json.loads(reports.dumps(reports.student_results(grade)))["score"] == POINTS[PART]


def test_the_environment_check_names_the_machine_when_the_reference_was_not_graded(engine, tmp_path):
    from autograder import envcheck

    suites, _ = suites_killing(engine, times=99, target="leader")
    grade = grade_with(engine, submission(tmp_path), suites)
    assert envcheck.likely_cause(grade, "cpu").startswith("the machine was overloaded while the reference was graded")


class _Engine:
    """Stands in for the Engine of a command: its grade() gives the grade the machine kept from being graded."""

    def __init__(self, grade):
        self.result = grade

    def grade(self, path, **_):
        return self.result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_grade_and_ci_commands_give_no_score_and_exit_3(engine, tmp_path, monkeypatch, capsys):
    from autograder import commands
    from autograder.commands import ci as ci_command
    from autograder.commands import grade as grade_command

    suites, _ = suites_killing(engine, times=99, target="leader")
    folder = submission(tmp_path)
    not_graded = grade_with(engine, folder, suites)
    monkeypatch.setattr(commands, "open_engine", lambda *args, **kwargs: _Engine(not_graded))
    for variable in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ACTIONS"):
        monkeypatch.delenv(variable, raising=False)
    args = types.SimpleNamespace(path=str(folder), json=str(tmp_path / "g.json"), junit=None, markdown=None)
    assert grade_command.run(args) == 3
    said = capsys.readouterr()
    assert "NOT GRADED: the machine was overloaded (simple_attention)" in said.out
    assert "error: not graded: the machine was overloaded (parts: simple_attention)" in said.err
    args = types.SimpleNamespace(path=str(folder), json=str(tmp_path / "c.json"), comment=str(tmp_path / "c.md"),
                                 fail_under=None)
    assert ci_command.run(args) == 3
    results = json.loads((tmp_path / "c.json").read_text())
    assert "score" not in results and results["output"] == grading.NOT_GRADED_MESSAGE
    assert "## Not graded" in (tmp_path / "c.md").read_text() and grading.NOT_GRADED_MESSAGE in (tmp_path / "c.md").read_text()


def test_a_student_s_feedback_counts_no_point_lost_for_a_part_not_graded(engine, tmp_path):
    from autograder.reports.common import what_to_fix

    suites, _ = suites_killing(engine, times=99, target="leader")
    grade = grade_with(engine, submission(tmp_path), suites)
    items = what_to_fix(grade.checks, grade.parts)
    assert [(i.title, i.points) for i in items] == [(PART, 0)] and items[0].message.startswith("not graded: the machine")


# issue 37 item 1: idle means off the CPU by the child's own choice

class _Clocks:
    """Readings a test sets: the wall clock, the session's CPU time, the child's run delay, the grader
    thread's own CPU time plus run delay."""

    def __init__(self, monkeypatch):
        self.wall = self.cpu = self.delay = self.grader = 0.0
        monkeypatch.setattr(idle.time, "monotonic", lambda: self.wall)
        monkeypatch.setattr(procfs, "run_delay", lambda pid: self.delay)
        monkeypatch.setattr(procfs, "own_schedule", lambda: self.grader)
        self.part = types.SimpleNamespace(spent=lambda: self.cpu, host_pid=1, pidfd=None)

    def call(self, wall, cpu, delay, grader):
        meter = idle.IdleMeter(self.part, 2.0)
        meter.call_begins()
        self.wall, self.cpu, self.delay, self.grader = wall, cpu, delay, grader
        return meter.over(waiting=True)


@pytest.mark.quick
def test_waiting_for_a_cpu_or_for_the_grader_is_not_sleeping(monkeypatch):
    """A 5 s call under load: the child ran 0.5 s and waited 1.5 s for a CPU; the grader's own thread
    was on a CPU or waiting for one for 3 s of it (it noticed the reply late): 0 s idle, under the
    2 s bound (counted as before, 3 s: "waited or slept for more than 2 s")."""
    clocks = _Clocks(monkeypatch)
    assert clocks.call(wall=5.0, cpu=0.5, delay=1.5, grader=3.0) is False


def test_a_child_that_sleeps_after_a_hidden_input_is_still_idle(monkeypatch):
    clocks = _Clocks(monkeypatch)
    assert clocks.call(wall=5.0, cpu=0.1, delay=0.0, grader=0.05) is True


def test_the_wall_clock_moves_on_while_the_machine_keeps_the_child_waiting(monkeypatch):
    """At the part's wall-clock deadline a child measured running or runnable (not asleep) is given
    more time, up to FAR_WALL x the wall clock; asleep, or unmeasured, it is not."""
    for asleep, now, moved in ((False, 30.0, True), (True, 30.0, False), (None, 30.0, False),
                               (False, 10 * 22.0 + 1, False)):
        part = types.SimpleNamespace(started=0.0, deadline=22.0, FAR_WALL=client.PartChild.FAR_WALL, host_pid=1,
                                     gauge=types.SimpleNamespace(asleep=lambda pid, wall, a=asleep: a))
        assert client.PartChild._kept_waiting(part, now) is moved, (asleep, now)


# issue 37 item 1, in batch: bounded regrades of a submission the machine kept from running; lateness

NOT_GRADED_PROBLEM = "not graded: the machine was overloaded (parts: simple_attention): graded again on the next run"


def _not_graded_results():
    return {"score": 90, "max_score": 100, "tests": [], "output": "Not graded",
            "parts": {"simple_attention": {"score": 0, "max_score": 10}, "causal": {"score": 22, "max_score": 22}},
            "extra_data": {"not_graded": {"simple_attention": "not graded: the machine was overloaded"}}}


def test_a_submission_not_graded_run_after_run_is_graded_as_it_stands_after_a_bound(tmp_path):
    """Each run records it as not graded (graded again next run) until NOT_GRADED_RUNS runs have; that
    run grades it as it stands, the parts the machine kept from running scored as failed, with a
    note for the instructor; no run after regrades it (the same submission, the same grader)."""
    from autograder import batch
    from autograder.course.gradebook import Gradebook

    book = Gradebook(tmp_path / "gradebook.db")
    for run in range(1, batch.NOT_GRADED_RUNS + 1):
        results = _not_graded_results()
        fingerprint, problem = batch.settle(book, "ann", "abc", results, NOT_GRADED_PROBLEM, "")
        book.record("ann", fingerprint, results, problem, "g1", "graded", run)
        if run < batch.NOT_GRADED_RUNS:
            assert (fingerprint, problem) == (batch.RETRY + batch.MACHINE + "abc", NOT_GRADED_PROBLEM)
            assert batch.why_grade(book.graded()["ann"], "abc", "g1", False) == \
                "graded again: its last grading did not finish"
    assert fingerprint == "abc" and problem == (
        f"graded as it stands after {batch.NOT_GRADED_RUNS} runs in which parts were not graded (simple_attention: "
        "scored as failed); regrade with --force once the machine is quiet")
    assert "not_graded" not in results["extra_data"] and results["extra_data"]["charged_after_not_graded"]
    assert batch.why_grade(book.graded()["ann"], "abc", "g1", False) is None  # no run after regrades it
    batch.write_csv(book, tmp_path / "grades.csv")
    lines = (tmp_path / "grades.csv").read_text().splitlines()
    cells = dict(zip(lines[0].split(","), lines[1].split(","), strict=False))
    assert cells["score"] == "90" and cells["simple_attention"] == "0"  # a score stands, the part failed
    book.close()


def test_lateness_applies_whether_or_not_a_grade_finished(tmp_path):
    """A late submission the machine kept from running: its late days and penalty are in grades.csv
    now (its final score waits, like its score, for a run that grades it)."""
    from datetime import datetime, timezone

    from autograder import batch
    from autograder.course import lateness
    from autograder.course.gradebook import Gradebook

    book = Gradebook(tmp_path / "gradebook.db")
    book.record("ann", batch.RETRY + "abc", _not_graded_results(), NOT_GRADED_PROBLEM, "g1", "graded", 1)
    due = datetime(2026, 1, 10, tzinfo=timezone.utc)
    late = lateness.LatePolicy(due, percent_per_day=10, times={"ann": datetime(2026, 1, 12, 1, tzinfo=timezone.utc)})
    folder = tmp_path / "ann"
    folder.mkdir()
    rows = batch.judge_lateness(book, late, [("ann", folder, "")])
    assert rows["ann"].late_days == 3 and rows["ann"].penalty == 30
    batch.write_csv(book, tmp_path / "grades.csv", ["ann"], rows)
    lines = (tmp_path / "grades.csv").read_text().splitlines()
    cells = dict(zip(lines[0].split(","), lines[1].split(","), strict=False))
    assert (cells["late_days"], cells["penalty"], cells["final_score"], cells["score"]) == ("3", "30", "", "")
    assert book.lateness()["ann"]["penalty"] == 30
    book.close()


# ---------------------------------------------------------------- the fork server killed (issue 38.8)

@pytest.fixture(scope="module")
def checked(engine, tmp_path_factory):
    """An environment check's cache holding this machine's verdict (the reference graded once on the
    module's fork server): the commands below then kill the fork servers of the submission's grading."""
    from autograder import chapter, envcheck

    rubric, suites, sandbox = engine
    folder = tmp_path_factory.mktemp("envcheck")
    record = envcheck.ensure(sandbox, rubric, suites, chapter.current().rubric, cache=folder)
    assert record["passed"], record
    return folder


def kill_starting_servers(monkeypatch, times):
    """The first `times` fork servers SIGKILLed (their process group, as an operator or the host's OOM
    killer would) and waited for just before the grader sends them their configuration. A fork server
    reads that message before its warm-up and says its first word after it (inside/zygote.main), so a
    server killed there has said nothing, however the grader and the server are scheduled; killed
    later (as this helper first did, just before the grader read the first word), a server that had
    already written its word was taken for ready, and the door replaced it only at its first session,
    once more than the test counted. -> [(the door, the killed server's pid)]."""
    start, send = client.Sandbox._start, client.protocol.send_message
    starting, killed = [], []

    def killing_start(self):
        starting.append(self)
        try:
            return start(self)
        finally:
            starting.pop()

    def killing_send(sock, header, fds=()):
        if starting and "seccomp" in header and len(killed) < times:  # the configuration of a server starting
            door = starting[-1]
            killed.append((door, door.process.pid))
            os.killpg(door.process.pid, signal.SIGKILL)
            select.select([door.pidfd], [], [])  # a pidfd is readable once its process has ended
        return send(sock, header, fds)

    monkeypatch.setattr(client.Sandbox, "_start", killing_start)
    monkeypatch.setattr(client.protocol, "send_message", killing_send)
    return killed


def grade_reference(checked, monkeypatch, capsys):
    """`grade` on the reference solutions, as an instructor runs it -> (exit status, stdout, stderr)."""
    from autograder import chapter, cli
    from autograder.settings import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(checked))
    status = cli.main(["grade", str(chapter.current().solutions)])
    said = capsys.readouterr()
    return status, said.out, said.err


def test_a_fork_server_killed_as_it_starts_is_replaced_and_the_grade_goes_on(engine, checked, monkeypatch, capsys):
    """The fork server dies before its first word (the crash of issue 38.8: `grade` printed a
    traceback and exited 1): the door starts another and the reference gets full marks."""
    rubric = engine[0]
    killed = kill_starting_servers(monkeypatch, times=1)
    status, out, err = grade_reference(checked, monkeypatch, capsys)
    assert status == 0, err
    assert len(killed) == 1
    door, pid = killed[0]
    assert door.starts == 2 and door.process.pid != pid  # a second server did the grading
    width = f"{'part':<20}{'score':>12}"
    expected = ["", width, "-" * 32]
    expected += [f"{part:<20}{f'{p.max_score:g} / {p.max_score:g}':>12}" for part, p in rubric.parts.items()]
    total = sum(p.max_score for p in rubric.parts.values())
    expected += ["-" * 32, f"{'total':<20}{f'{total:g} / {total:g}':>12}"]
    lines = out.splitlines()
    assert lines[1:len(expected) + 1] == expected, out
    assert "What went wrong" not in out and "NOT GRADED" not in out and "Traceback" not in err


def test_a_fork_server_that_always_dies_leaves_the_run_not_graded_in_one_line(engine, checked, monkeypatch, capsys):
    """Every fork server is killed before its first word: the door replaces the one it started with
    (killed from outside before it was asked: not a try) and gives up after SERVER_STARTS more, every
    part is "not graded" (no score), and `grade` says so in one line and exits 3."""
    rubric = engine[0]
    killed = kill_starting_servers(monkeypatch, times=99)
    status, out, err = grade_reference(checked, monkeypatch, capsys)
    assert status == 3
    assert len(killed) == client.SERVER_STARTS + 1 and killed[0][0].starts == client.SERVER_STARTS + 1
    assert err.strip().splitlines() == [f"error: not graded: the machine was overloaded (parts: "
                                        f"{', '.join(rubric.parts)}): graded again on the next run"], err
    assert "NOT GRADED: the machine was overloaded" in out and "total" in out and "not graded" in out
    assert f"its process {client.SERVER_LOST}" in out  # the instructor's detail names the fork server


def test_a_child_on_its_way_out_is_not_taken_for_one_that_closed_its_channel():
    """A process being killed closes its files (the channel reads as closed) before its pidfd says it
    ended; the kernel's state and PF_EXITING flag tell the two apart without waiting on the clock."""
    import subprocess

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert client._exiting(sleeper.pid) is False  # alive, not exiting
        os.kill(sleeper.pid, signal.SIGKILL)
        os.waitid(os.P_PID, sleeper.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie
        assert client._exiting(sleeper.pid) is True
    finally:
        sleeper.kill()
        sleeper.wait()
    assert client._exiting(sleeper.pid) is True  # reaped: no such process
    assert client._exiting(0) is False  # no pid: cannot be told


def test_only_the_grader_s_structured_record_counts_a_not_graded_run(tmp_path):
    """A run kept for a retry for another reason (the grader's own failure), whose problem text reads
    like the machine's, is not one of the not-graded runs: the count reads the fingerprint batch.settle
    chose from results' extra_data.not_graded, never the problem's words."""
    from autograder import batch
    from autograder.course.gradebook import Gradebook

    book = Gradebook(tmp_path / "gradebook.db")
    results = _not_graded_results()
    del results["extra_data"]["not_graded"]
    fingerprint, _ = batch.settle(book, "ann", "abc", results, NOT_GRADED_PROBLEM, "an internal error")
    book.record("ann", fingerprint, results, NOT_GRADED_PROBLEM, "g1", "graded", 1)
    assert fingerprint == batch.RETRY + "abc" and book.not_graded_runs("ann", "abc") == 0
    fingerprint, _ = batch.settle(book, "ann", "abc", _not_graded_results(), "", "")
    book.record("ann", fingerprint, _not_graded_results(), "", "g1", "graded", 2)
    assert book.not_graded_runs("ann", "abc") == 1
    book.close()


def test_a_fork_server_slower_to_warm_up_than_its_wait_is_waited_for(engine, checked, monkeypatch, capsys):
    """The fork server's first word comes later than READY_SECONDS (0.05 s here, as a machine busy enough
    makes the 120 s) while its warm-up runs (its processes on a CPU or waiting for one: death.kept_busy):
    the wait is moved on, the one server started grades, full marks. Before, each start was taken for
    lost ("the sandbox fork server did not start (Deadline: ...)"), and after SERVER_STARTS of them the
    run was "not graded": load made grading ungraded."""
    monkeypatch.setattr(client.Sandbox, "READY_SECONDS", 0.05)
    monkeypatch.setattr(client.Sandbox, "READY_FAR", 10**5)  # the far bound out of reach (a hang's only)
    started = []
    start = client.Sandbox._start

    def counted(self):
        started.append(self)
        return start(self)

    monkeypatch.setattr(client.Sandbox, "_start", counted)
    status, out, err = grade_reference(checked, monkeypatch, capsys)
    assert status == 0, err
    assert len(started) == 1 and started[0].starts == 1, [door.starts for door in started]
    total = sum(p.max_score for p in engine[0].parts.values())
    assert f"{'total':<20}{f'{total:g} / {total:g}':>12}" in out.splitlines(), out
    assert "NOT GRADED" not in out and "not graded" not in err


def test_kept_busy_tells_a_working_process_tree_from_a_sleeping_one():
    """death.kept_busy, the evidence that moves ready()'s wait on: a tree whose work goes on (a parent
    waiting on a child that loops) was busy; a process asleep on its own was not, over a wall clock four
    times what it has been busy. No clock decides: both are read from the processes' schedstat."""
    began = time.monotonic()
    working = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                                "subprocess.run([sys.executable, '-c', 'while True: pass'])"])
    sleeping = subprocess.Popen([sys.executable, "-c", "import sys, time; print('asleep', flush=True); time.sleep(600)"],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert sleeping.stdout.readline() == "asleep\n"
        while (death.tree_busy(working.pid) or 0) < 1.0:  # its loop has run (or waited to) for a second
            time.sleep(0.05)
        assert death.kept_busy(working.pid, time.monotonic() - began)
        asleep_for = death.tree_busy(sleeping.pid)
        assert asleep_for is not None and not death.kept_busy(sleeping.pid, 4 * asleep_for + 0.01)
    finally:
        for process in (working, sleeping):
            process_ends.kill_all(process_ends.descendants(process.pid))
            process.kill()
            process.wait()
