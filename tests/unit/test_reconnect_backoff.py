"""The wait before a server's next connection attempt (``upstream.server.backoff_after_loss``):
it grew for good while the gateway ran, so a server that crashed once an hour was waited for
a minute at each crash."""

from toolscript.upstream.server import MAX_BACKOFF, STAYED_UP, backoff_after_loss


def test_a_connection_that_stayed_up_starts_the_backoff_again() -> None:
    assert backoff_after_loss(MAX_BACKOFF, connected_at=1000.0, now=1000.0 + STAYED_UP) == 1.0
    assert backoff_after_loss(16.0, connected_at=0.0, now=3600.0) == 1.0


def test_a_connection_lost_soon_after_it_came_up_keeps_the_backoff() -> None:
    assert backoff_after_loss(16.0, connected_at=1000.0, now=1000.0 + STAYED_UP / 2) == 16.0


def test_an_attempt_that_never_connected_keeps_the_backoff() -> None:
    assert backoff_after_loss(8.0, connected_at=None, now=5000.0) == 8.0
