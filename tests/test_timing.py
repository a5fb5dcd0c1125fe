"""CPU tests of the benchmark timing helpers (python/nvfp4/_timing.py) that need no GPU."""

from nvfp4._timing import ClockSampler, parse_clock_samples


def test_parse_clock_samples_skips_the_ramp_and_bad_lines():
    text = "1980, 100.5\n1900, 300\n1665, 692.1\n[N/A], 3\n1650, 700\n1670, 695\nnot a sample\n"
    got = parse_clock_samples(text)
    # 5 usable samples, the first 2 (ramp) dropped
    assert got == {"mhz": 1665.0, "mhz_min": 1650.0, "watts": 695.0, "watts_max": 700.0, "samples": 3}


def test_parse_clock_samples_keeps_short_runs_and_empty_is_none():
    assert parse_clock_samples("1500, 400\n1510, 410\n")["samples"] == 2
    assert parse_clock_samples("") is None
    assert parse_clock_samples("[N/A], [N/A]\n") is None


def test_clock_sampler_without_nvidia_smi():
    sampler = ClockSampler()
    sampler.cmd = ["/nonexistent/nvidia-smi-for-the-test"]
    with sampler as s:
        pass
    assert s.stats is None


def test_time_many_interleaves_batches_and_isolates_failures():
    """Timer.time_many (host mode: no torch needed) prepares every job, then runs their timed
    batches in turn, so that implementations of one case share the same moments; a job whose
    launch raises reports its exception in its slot and the others go on."""
    from nvfp4._timing import Timer

    calls = []

    def job(name, fail_after=None):
        def launch(i):
            if fail_after is not None and len([c for c in calls if c == name]) >= fail_after:
                raise RuntimeError(f"{name} failed")
            calls.append(name)
        return launch

    timer = Timer(None, "cpu", reps=5, warmup=1, target_batch_us=1.0, max_launches=1, budget_s=10.0)
    got = timer.time_many([(job("a"), 1, True), (job("b"), 1, True), (job("c", fail_after=6), 1, True)])
    assert got[0].mode == "host" and got[0].batches == 5 and got[1].batches == 5
    assert isinstance(got[2], RuntimeError) and "c failed" in str(got[2])
    # preparation: each job's warm-up launch and 3 estimate launches, one job after the other
    assert calls[:12] == ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    # then the timed batches (one launch each here) in turn; c raises at its 7th launch, in
    # round 3, and a and b finish their 5 rounds
    assert calls[12:] == ["a", "b", "c", "a", "b", "c", "a", "b", "a", "b", "a", "b"]


def test_time_raises_what_its_only_job_raised():
    import pytest

    from nvfp4._timing import Timer

    def launch(i):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        Timer(None, "cpu", reps=3).time(launch, 1)
