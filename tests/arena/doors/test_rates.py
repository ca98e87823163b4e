"""Requests kept to a rate for each client (`referee.arena.doors.rates`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.arena.doors.rates import ADDRESS_SHARE, Buckets, clients
from referee.arena.store.config import Rate, parse_arena_config
from referee.errors import ConfigError
from tests.support.arena import Site, make_site
from tests.support.arena_databases import ArenaMaker

# One client may ask 3 at once, then one in 100 s: the test's requests, however slow a
# loaded machine makes them, all fall within one refill.
TIGHT = "  requests: {per_s: 0.01, burst: 3}\n"


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena, arena_keys=TIGHT)


def test_a_bucket_gives_its_burst_then_its_rate() -> None:
    buckets = Buckets(Rate(per_s=2.0, burst=3))
    assert [buckets.take("a", now=10.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a", now=10.0) == pytest.approx(0.5), "the next one in half a second"
    assert buckets.take("a", now=10.0) == pytest.approx(0.5), "a refused one is not taken"
    assert buckets.take("b", now=10.0) == 0.0, "another client's bucket is full"
    assert buckets.take("a", now=10.5) == 0.0
    assert buckets.take("a", now=10.5) == pytest.approx(0.5)
    # Filled while not asked, up to the burst and no more.
    assert [buckets.take("a", now=100.0) for _ in range(4)][-2:] == [0.0, pytest.approx(0.5)]


def test_the_clients_kept_are_bounded_and_the_oldest_is_forgotten() -> None:
    buckets = Buckets(Rate(per_s=1.0, burst=1), most=2)
    for client in ("a", "b", "c"):
        assert buckets.take(client, now=0.0) == 0.0
    assert buckets.take("c", now=0.0) > 0, "c is kept, its bucket empty"
    assert buckets.take("a", now=0.0) == 0.0, "a was forgotten: full again"


def scope(client: str, *headers: tuple[bytes, bytes]) -> dict[str, object]:
    return {"type": "http", "client": (client, 5000), "headers": list(headers)}


def test_a_client_is_its_credential_and_its_address_unless_a_local_proxy() -> None:
    bearer = (b"authorization", b"Bearer abc")
    cookie = (b"cookie", b"referee_session=xyz")
    credential, address = clients(scope("203.0.113.9", bearer))
    assert credential is not None and "abc" not in credential, "kept as a digest"
    assert address == "203.0.113.9"
    assert clients(scope("203.0.113.9", cookie))[0] not in (None, credential)
    # The sign-in cookie alone is the client: not the other cookies sent beside it.
    beside = (b"cookie", b"theme=dark; referee_session=xyz; seen=1")
    assert clients(scope("203.0.113.9", beside))[0] == clients(scope("203.0.113.9", cookie))[0]
    assert clients(scope("203.0.113.9", (b"cookie", b"theme=dark"))) == (None, "203.0.113.9")
    assert clients(scope("203.0.113.9")) == (None, "203.0.113.9")
    assert clients(scope("127.0.0.1")) == (None, None), "a local proxy's: anyone's"
    assert clients(scope("::1", bearer)) == (credential, None)
    # An IPv6 /64 is one address, as the doors count it.
    one = clients(scope("2001:db8::1"))[1]
    assert one == clients(scope("2001:db8::ffff"))[1] != clients(scope("2001:db8:0:1::1"))[1]


def test_a_client_past_its_rate_is_answered_429_with_one_line_and_others_are_not(
    site: Site,
) -> None:
    for _ in range(3):
        assert site.get("/api/me", "alice").status_code == 200
    refused = site.get("/api/me", "alice")
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "100"
    error = refused.json()["error"]
    assert "too many requests" in error and "\n" not in error
    # The guard's headers are on the refusal too.
    assert refused.headers["x-content-type-options"] == "nosniff"
    assert site.get("/api/me", "bob").status_code == 200, "bob has a bucket of his own"
    assert site.get("/assets/arena.css", "alice").status_code == 200, "assets are free"


def test_made_up_tokens_from_one_address_share_its_bucket(site: Site) -> None:
    # The test client's address is no local proxy's: its bucket is ADDRESS_SHARE clients'.
    statuses = [
        site.client.get("/api/me", headers={"Authorization": f"Bearer made-up-{n}"}).status_code
        for n in range(3 * ADDRESS_SHARE + 1)
    ]
    assert statuses[:-1] == [401] * (3 * ADDRESS_SHARE)
    refused = site.client.get("/api/me", headers={"Authorization": "Bearer one-more"})
    assert statuses[-1] == refused.status_code == 429
    assert f"at most {3 * ADDRESS_SHARE} at once" in refused.json()["error"]
    assert "from one address" in refused.json()["error"]


def test_a_clients_refused_flood_leaves_its_address_to_the_others(site: Site) -> None:
    # alice asks far past her 3: refused, her requests take nothing of the address's
    # ADDRESS_SHARE * 3, which bob then has whole but for alice's 3.
    statuses = [site.get("/api/me", "alice").status_code for _ in range(40)]
    assert statuses.count(200) == 3 and statuses.count(429) == 37
    assert [site.get("/api/me", "bob").status_code for _ in range(3)] == [200] * 3


def test_the_rate_is_the_arena_configs(tmp_path: Path) -> None:
    text = "name: r\ngames: [ticblock]\narena:\n  requests: {per_s: 2.5, burst: 7}\n"
    assert parse_arena_config(tmp_path / "arena.yaml", text).requests == Rate(2.5, 7)
    defaults = parse_arena_config(tmp_path / "arena.yaml", "name: r\ngames: [quad]\n")
    assert defaults.requests == Rate()
    with pytest.raises(ConfigError, match="requests"):
        parse_arena_config(tmp_path / "arena.yaml", text.replace("7}", "0}"))
    # A number written as text, or yes for a count, is refused, not read as one; a value
    # that is not a section is named as such.
    for wrong, said in (
        (
            "{per_s: '2', burst: 7}",
            "arena.requests.per_s: must be a number, not the text '2': write it without quotes",
        ),
        (
            "{per_s: 2.5, burst: yes}",
            "arena.requests.burst: must be a whole number, not yes or no (YAML reads true as one)",
        ),
        ("5", "arena.requests: must be a mapping of keys to values, got 5"),
    ):
        with pytest.raises(ConfigError) as raised:
            parse_arena_config(
                tmp_path / "arena.yaml", text.replace("{per_s: 2.5, burst: 7}", wrong)
            )
        assert str(raised.value) == f"{tmp_path / 'arena.yaml'}:4: {said}"
