"""bench/relevance_calibration.py's bounds: separability and the most answerable questions a
threshold keeps at the issue's bar for unanswerable ones."""

from __future__ import annotations

import math

import pytest

from bench.relevance_calibration import Pair, bounds, most_kept, separability


@pytest.mark.parametrize(
    ("best_a", "best_u", "expected"),
    [
        ([0.9, 0.8], [0.1, 0.2], 1.0),  # every answerable question above every unanswerable one
        ([0.1, 0.2], [0.9, 0.8], 0.0),
        ([0.5], [0.5], 0.5),  # a tie counts half
        ([0.9, 0.3], [0.5], 0.5),
    ],
)
def test_separability(best_a: list[float], best_u: list[float], expected: float) -> None:
    assert separability(best_a, best_u) == pytest.approx(expected)


def test_separability_without_a_group_is_not_a_number() -> None:
    assert math.isnan(separability([0.5], []))


@pytest.mark.parametrize(
    ("best_a", "best_u", "declined", "expected"),
    [
        # Separable: the threshold just above the unanswerable ones keeps every answerable one.
        ([0.6, 0.7, 0.9], [0.1, 0.2, 0.3, 0.4, 0.5], 0.8, (3, 5)),
        # 4 of 5 unanswerable must be declined: the threshold goes above 0.62, losing the 0.6 one;
        # of the thresholds that keep two, 0.7 declines all five.
        ([0.6, 0.7, 0.9], [0.1, 0.2, 0.3, 0.62, 0.65], 0.8, (2, 5)),
        # ... and with a bar of 60%, a threshold of 0.6 keeps all three and declines 3 of 5.
        ([0.6, 0.7, 0.9], [0.1, 0.2, 0.3, 0.62, 0.65], 0.6, (3, 3)),
        # Everything mixed up: only a threshold above all keeps the bar, and keeps nothing.
        ([0.1], [0.9, 0.8], 1.0, (0, 2)),
    ],
)
def test_most_kept(best_a: list[float], best_u: list[float], declined: float, expected: tuple[int, int]) -> None:
    assert most_kept(best_a, best_u, declined) == expected


def _pair(question: str, answerable: bool, score: float) -> Pair:
    return Pair(question, answerable, int(answerable), score, 0.0, 0.0, 0.0)


def test_bounds_prints_one_threshold_and_a_threshold_per_site(capsys: pytest.CaptureFixture[str]) -> None:
    # Site a scores everything high, site b everything low: each alone is separable, pooled they are not.
    pairs = [
        _pair("a#0", True, 0.9), _pair("a#0", True, 0.2),  # a question's best pair is what counts
        _pair("a#1", True, 0.85), _pair("a#2", False, 0.7),
        _pair("b#0", True, 0.4), _pair("b#1", True, 0.35), _pair("b#2", False, 0.1),
    ]
    bounds(pairs, lambda pair: pair.cosine)
    out = capsys.readouterr().out
    assert "separability per site: a 1.000, b 1.000" in out
    assert "one threshold keeps 2/4 answerable (0.500), 2/2 declined" in out
    assert "a threshold per site, chosen on these questions (a bound): keeps 4/4 answerable (1.000), 2/2 declined" in out
