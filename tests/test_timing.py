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
