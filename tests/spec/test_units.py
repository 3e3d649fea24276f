"""Durations and sizes as people write them in specs and on the command line."""

from __future__ import annotations

import math

import pytest

from pytest_mlab.spec.units import format_duration, parse_duration, parse_size


@pytest.mark.parametrize("value, seconds", [
    (90, 90.0),
    (2.5, 2.5),
    ("90", 90.0),
    ("90s", 90.0),
    ("30m", 1800.0),
    ("5h", 18000.0),
    ("1d", 86400.0),
    ("1.5h", 5400.0),
    (" 30m ", 1800.0),
    ("30 m", 1800.0),
])
def test_parse_duration(value, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["5 hours", "soon", "", "30M", "1w", "h", "-5", "5m30"])
def test_parse_duration_rejects_text_it_cannot_read_and_says_how_to_write_it(value: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_duration(value)
    message = str(excinfo.value)
    assert repr(value) in message
    assert "is not a duration" in message
    assert "30m" in message  # an example of what works


@pytest.mark.parametrize("value", [0, 0.0, -5, "0", "0s", "0.0h"])
def test_parse_duration_rejects_zero_and_negative(value) -> None:
    with pytest.raises(ValueError, match="must be longer than zero"):
        parse_duration(value)


@pytest.mark.parametrize("value", [True, False])
def test_parse_duration_rejects_booleans(value: bool) -> None:
    # 'max_time: yes' is YAML for True, which is an int in Python
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(value)


def test_parse_duration_rejects_nan() -> None:
    with pytest.raises(ValueError):
        parse_duration(math.nan)


@pytest.mark.parametrize("seconds", [185.0, 3720.0])
def test_parse_duration_reads_what_format_duration_prints(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize("value, size", [
    (1048576, 1048576),
    ("1048576", 1048576),
    ("512K", 512 * 1024),
    ("512k", 512 * 1024),
    ("100M", 100 * 1024 ** 2),
    ("100MB", 100 * 1024 ** 2),
    ("100MiB", 100 * 1024 ** 2),
    ("100mb", 100 * 1024 ** 2),
    ("8G", 8 * 1024 ** 3),
    ("1T", 1024 ** 4),
    ("1.5K", 1536),
    ("100B", 100),
    (" 2 G ", 2 * 1024 ** 3),
])
def test_parse_size(value, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize("value", ["100 X", "lots", "", "1P", "-1M"])
def test_parse_size_rejects_text_it_cannot_read_and_says_how_to_write_it(value: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_size(value)
    assert "is not a size" in str(excinfo.value)
    assert "100M" in str(excinfo.value)


@pytest.mark.parametrize("value", [0, -1, "0", "0M"])
def test_parse_size_rejects_zero_and_negative(value) -> None:
    with pytest.raises(ValueError, match="must be larger than zero"):
        parse_size(value)


def test_parse_size_rejects_booleans() -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(True)


@pytest.mark.parametrize("seconds, text", [
    (0.0, "0.0s"),
    (0.4, "0.4s"),
    (9.94, "9.9s"),
    (12.0, "12s"),
    (59.0, "59s"),
    (60.0, "1m00s"),
    (185.0, "3m05s"),
    (3599.0, "59m59s"),
    (3600.0, "1h00m"),
    (3720.0, "1h02m"),
    (90000.0, "25h00m"),
])
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_parse_size_rejects_a_size_too_large_for_a_number() -> None:
    with pytest.raises(ValueError, match="is not a finite size"):
        parse_size("9" * 400 + "G")
