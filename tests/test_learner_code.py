"""The learner's code under a build check (agentlab/workbook/learner_code.py): code that never ends is stopped at the
time limit and said so, and a stop (the stop button) is a verdict, never a traceback through the package's files."""
import signal
import time

import pytest

from agentlab.workbook import builds_frameworks, builds_guards, builds_loops, builds_repair, builds_site, builds_systems, exercises, learner_code


def _forever(*args, **kwargs):
    while True:
        pass


def _sleeps(*args, **kwargs):
    time.sleep(30)  # long past any limit here; bounded, so that a limit that failed fails its test, not the run


def _stopped(*args, **kwargs):
    raise KeyboardInterrupt


#: every build check that runs a function the learner wrote, with where that function goes, and its notebook
CHECKS = {
    "00": lambda fn, lang: builds_guards.build_refund_once(fn, lang=lang),
    "02": lambda fn, lang: builds_guards.build_tighter_contract(fn, lang=lang),
    "03": lambda fn, lang: builds_guards.build_refund_failure(fn, lang=lang),
    "04": lambda fn, lang: builds_guards.build_resend(fn, lang=lang),
    "05": lambda fn, lang: builds_loops.build_business_key(fn, lang=lang),
    "07": lambda fn, lang: builds_loops.build_answer_every_call(fn, lang=lang),
    "09": lambda fn, lang: builds_loops.build_write_check(fn, lang=lang),
    "12": lambda fn, lang: builds_systems.cut_keeps_pairs(fn, lang=lang),
    "13": lambda fn, lang: builds_systems.routes_by_language(fn, lang=lang),
    "14": lambda fn, lang: builds_systems.desk_rule_holds(fn, lang=lang),
    "16": lambda fn, lang: builds_site.key_scope_holds(fn, lang=lang),
    "18": lambda fn, lang: builds_repair.reask_policy_holds(fn, lang=lang),
    "19": lambda fn, lang: builds_frameworks.guard_wired({"refund": fn, "note": None}, lang=lang),
}


@pytest.mark.parametrize("notebook", CHECKS)
@pytest.mark.parametrize("code", [_forever, _sleeps])
def test_code_that_never_ends_is_stopped_and_said_so(monkeypatch, notebook, code):
    """A ``while True`` left in a learner's function held the cell for good; the stop button then printed a
    KeyboardInterrupt traceback through builds_guards.py."""
    monkeypatch.setattr(learner_code, "LEARNER_SECONDS", 0.3)
    sent = []
    monkeypatch.setattr(exercises, "report", lambda feedback, nb, **kw: sent.append(nb))
    for lang, words in (("en", "still running after 0.3 s"), ("zh", "运行了 0.3 秒还没结束")):
        started = time.monotonic()
        feedback = CHECKS[notebook](code, lang)
        assert time.monotonic() - started < 10
        assert not feedback.ok and words in feedback.message, feedback
    assert sent and set(sent) == {f"{notebook}b"}, sent


def _exits(*args, **kwargs):
    import sys
    sys.exit()


@pytest.mark.parametrize("notebook", CHECKS)
def test_code_that_calls_sys_exit_gets_a_verdict_in_its_language(notebook):
    """sys.exit() in a learner's function went past every build check: IPython printed SystemExit and its English
    warning, in the Chinese notebooks too, and no verdict."""
    for lang, words in (("en", "called sys.exit()"), ("zh", "调用了 sys.exit()")):
        feedback = CHECKS[notebook](_exits, lang)
        assert not feedback.ok and words in feedback.message, feedback


@pytest.mark.parametrize("notebook", CHECKS)
def test_a_stop_during_the_check_is_a_sentence(notebook):
    for lang, words in (("en", "stopped before it finished"), ("zh", "检查还没完成就被停下了")):
        feedback = CHECKS[notebook](_stopped, lang)
        assert feedback.state == "not yet" and words in feedback.message, feedback


def test_a_timer_that_rings_first_keeps_its_time_and_one_due_later_gets_it_back(monkeypatch):
    """pytest-timeout's timer (or any other) is not taken over: one due sooner rings as set; one due later is put
    back, less the time the check took."""
    class Rang(Exception):
        pass

    def ring(signum, frame):
        raise Rang
    previous = signal.signal(signal.SIGALRM, ring)
    before = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Rang):
            learner_code.bounded(seconds=5)(lambda lang="en": _sleeps())()
        signal.setitimer(signal.ITIMER_REAL, 30)
        feedback = learner_code.bounded(seconds=0.2)(lambda lang="en": _sleeps())()
        assert "still running" in feedback.message
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left < 30 and signal.getsignal(signal.SIGALRM) is ring
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if before[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, *before)


def test_a_timer_that_rang_during_the_check_is_not_put_back_to_ring_again():
    """An outer timer (pytest-timeout's, say) that fell due during a check was put back with a millisecond left, and
    rang a second time: once inside pytest's own handling of the first (seen in a full run of the suite)."""
    rings = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: rings.append(signum))
    before = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        learner_code.bounded(seconds=5)(lambda lang="en": time.sleep(0.3))()
        time.sleep(0.2)
        assert len(rings) == 1, rings
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if before[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, *before)


def test_the_limit_is_said_however_the_stop_reaches_the_check_and_the_handler_is_put_back(monkeypatch):
    """The probe (notebook 17's check) makes an interrupt its own exception: the limit read "stopped by you"; an
    outer check's limit was caught by an inner one and said with the inner's seconds; SIGALRM's handler is the one
    that was there before, after every verdict."""
    from agentlab.workbook.exercises import Feedback, _say

    before = signal.getsignal(signal.SIGALRM)

    class ProbeStopped(KeyboardInterrupt):
        pass

    def probing(lang="en"):
        try:
            _sleeps()
        except KeyboardInterrupt:
            raise ProbeStopped("stopped") from None
        return _say("right", "done", lang)
    feedback = learner_code.bounded(seconds=0.2)(probing)()
    assert "still running after 0.2 s" in feedback.message, feedback.message
    assert signal.getsignal(signal.SIGALRM) is before

    inner = learner_code.bounded(seconds=20)(lambda lang="en": _sleeps())
    outer = learner_code.bounded(seconds=0.3)(lambda lang="en": inner())
    feedback = outer()
    assert isinstance(feedback, Feedback) and "0.3 s" in feedback.message and "20 s" not in feedback.message
    assert signal.getsignal(signal.SIGALRM) is before
    for _ in range(200):  # the alarm due as the check ends: never a verdict of "too long", never a handler left
        assert learner_code.bounded(seconds=0.0005)(lambda lang="en": _say("right", "ok", lang))().state in ("right", "wrong")
        assert signal.getsignal(signal.SIGALRM) is before


def test_a_stub_is_told_from_a_function_with_a_body_by_its_code():
    from agentlab.workbook.learner_code import unanswered

    def dots(x): ...

    def documented(x):
        """What it will do."""
        pass

    def returns_none(x):
        return None  # your code

    def one_path(x):
        if x:
            return 1

    assert all(unanswered(f) for f in (dots, documented, returns_none, lambda x: None))
    assert not any(unanswered(f) for f in (one_path, lambda x: x, print, len, 3))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_what_came_back_instead_is_said_with_its_type_and_case(lang):
    from agentlab.workbook.learner_code import returned_instead
    assert returned_instead(2.5, "number", "my_wait", "429", lang) is None
    assert returned_instead(True, "number", "my_wait", "429", lang) is not None  # True is no number of seconds
    said = returned_instead("2", "number", "my_wait", "429", lang)
    assert "my_wait" in said and "str '2'" in said and "429" in said
    assert "None" in returned_instead(None, "text", "my_key", "q", lang)
    assert returned_instead(None, "bool", "my_write_check", "q", lang) is None  # as an if reads it: stop
    assert len(returned_instead("x" * 500, "bool", "f", "c", lang)) < 200


def test_a_limit_that_rings_while_it_is_being_set_is_the_checks_own_never_an_escaped_interrupt(monkeypatch):
    """A timer of half a millisecond rang inside the limit's set-up, before the check had the limit in hand: taken for
    an outer check's, it left every handler as a KeyboardInterrupt and stopped a pytest worker."""
    import os
    real = signal.setitimer
    before = signal.getsignal(signal.SIGALRM)

    def ringing_at_once(which, seconds, *interval):
        out = real(which, seconds, *interval)
        if seconds > 0 and signal.getsignal(signal.SIGALRM) is not before:  # the limit's own timer, being set
            os.kill(os.getpid(), signal.SIGALRM)  # delivered at the next instruction: still inside the set-up
        return out
    monkeypatch.setattr(signal, "setitimer", ringing_at_once)
    feedback = learner_code.bounded(seconds=5)(lambda lang="en": _sleeps())()
    assert feedback.state == "wrong" and "5 s" in feedback.message, feedback.message
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGALRM) is before


def test_a_value_that_cannot_say_itself_is_named_by_its_type():
    from agentlab.workbook.exercises import _shown
    from agentlab.workbook.learner_code import returned_instead
    assert _shown(10**5000) == "<int>"
    assert "int <int>" in returned_instead(10**5000, "text", "my_key", "A1001", "en")


def test_a_limit_whose_stop_was_swallowed_rings_again(monkeypatch):
    """The limit's stop is an exception raised by a signal's handler, which runs wherever Python is: inside a garbage
    collector's callback (hypothesis keeps one) it was swallowed, "ignored", and the learner's sleep ran its whole
    30 s past the limit (once in CI). The limit now rings again until its check ends."""
    import gc
    monkeypatch.setattr(learner_code, "LEARNER_SECONDS", 0.3)
    monkeypatch.setattr(learner_code, "RING_AGAIN", 0.5, raising=False)
    monkeypatch.setattr(exercises, "report", lambda feedback, nb, **kw: None)

    def slow_callback(phase, info):  # a collector's callback long enough for the limit to ring inside it
        if phase == "start":
            until = time.monotonic() + 0.6
            while time.monotonic() < until:
                pass

    def learner(*args, **kwargs):
        gc.callbacks.append(slow_callback)
        try:
            gc.collect()  # the limit rings in the callback: its exception is swallowed there
        finally:
            gc.callbacks.remove(slow_callback)
        time.sleep(12)

    started = time.monotonic()
    feedback = CHECKS["00"](learner, "en")
    assert time.monotonic() - started < 6, "the swallowed stop was never rung again"
    assert not feedback.ok and "still running after 0.3 s" in feedback.message, feedback


def _prints_verdict(tool, args, seen):
    print(all(str(v) in str(seen) for v in args.values()))  # printed where it should be returned


def _prints_wait(error, attempt, top):
    if error.code in ("UNAVAILABLE", "TIMEOUT", "RATE_LIMITED"):
        print(2 ** attempt)


def test_a_function_that_returns_nothing_anywhere_is_told_so_not_judged_on_its_none():
    from agentlab.workbook.learner_code import returned_instead, returns_nothing

    def returns_on_one_path(x):
        if x:
            return True
        print(x)

    def says_none(x):
        if x:
            return None
        print(x)

    assert returns_nothing(_prints_verdict) and returns_nothing(says_none)
    assert not any(returns_nothing(f) for f in (returns_on_one_path, lambda x: x, print, len, 3,
                                                lambda x: 2 * x if x else None))  # a jump to the return: a value
    assert "None" in returned_instead(None, "bool", "my_write_check", "q", "en", fn=_prints_verdict)
    # an explicit return None where None is right, a print elsewhere: said as a function that gives nothing back,
    # never as the right case's "a path ends without a return" (it blamed PERMISSION_DENIED, where it returned None)
    for lang in ("en", "zh"):
        said = returned_instead(None, "number", "my_wait", "PERMISSION_DENIED", lang, fn=says_none, none_ok=True)
        assert said and "PERMISSION_DENIED" not in said and "my_wait" in said and "return" in said, said
    assert returned_instead(None, "bool", "my_write_check", "q", "en", fn=returns_on_one_path) is None
    assert returned_instead(None, "number", "my_wait", "q", "en", fn=returns_on_one_path, none_ok=True) is None


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("check, fn", [("09", _prints_verdict), ("04", _prints_wait)])
def test_a_verdict_printed_instead_of_returned_is_said_as_none_not_as_a_stop(check, fn, lang, capsys):
    # a None read as "stop" (09) or "no resend" (04) told such a learner their decision stopped the asked writes
    said = str(CHECKS[check](fn, lang))
    assert "None" in said and "return" in said, said
