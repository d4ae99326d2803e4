"""The web console in a real browser (issue 21): headless Chromium from
Debian's packages drives the page. Pages render, a chart shows data just
produced, an abort from the page aborts the transaction, and the reader
role sees no action button. Skips, saying what to install, without
Chromium. Every wait is bounded (WAIT_SECONDS)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import txnq
from tests.console_browser import MISSING, chromium_available, start_chromium
from tests.helpers import Login, sql, sql_value, wait_until
from txnq.console.reads import ConsoleDatabase
from txnq.console.samples import sample_history
from txnq.console.server import ConsoleServer
from txnq.settings import load_settings

pytestmark = pytest.mark.skipif(not chromium_available(), reason=MISSING)

WAIT_SECONDS = 8.0
PAGES = ("topics", "subscriptions", "transactions", "storage", "messages", "audit")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = start_chromium()
    driver.set_page_load_timeout(WAIT_SECONDS)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def serve() -> Iterator[Callable[[str], str]]:
    servers: list[ConsoleServer] = []

    def start(dsn: str) -> str:
        servers.append(ConsoleServer(dsn, load_settings(), port=0).start())
        return servers[-1].url

    yield start
    for server in servers:
        server.stop()


def open_page(browser: Any, url: str, tab: str) -> None:
    """Show ``tab`` and wait until the page drew it from fresh data."""
    browser.get(f"{url}#{tab}")
    browser.refresh()  # a hash change alone does not reload the page
    wait_until(
        lambda: browser.execute_script("return document.body.dataset.loaded") == tab,
        WAIT_SECONDS,
        f"the {tab} page loaded",
    )


def banner(browser: Any) -> str:
    return str(
        browser.execute_script(
            "const b = document.getElementById('banner'); return b.hidden ? '' : b.textContent"
        )
    )


def test_every_page_renders(dsn: str, browser: Any, serve: Callable[[str], str]) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2)
    url = serve(dsn)
    for tab in PAGES:
        open_page(browser, url, tab)
        assert banner(browser) == "", f"{tab}: {banner(browser)}"
    open_page(browser, url, "topics")
    assert "orders" in browser.find_element("css selector", "#page-topics table").text
    assert "admin" in browser.find_element("id", "whoami").text


def test_a_chart_shows_data_just_produced(
    dsn: str, browser: Any, serve: Callable[[str], str]
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("clicks", partitions=1)
        database = ConsoleDatabase(dsn, client.settings)
        sample_history(database)  # the scheduler's job, run now
        with client.producer("clicks") as producer:
            for i in range(200):
                producer.send_async(f"click {i}".encode())
            producer.flush()
        sample_history(database)
    url = serve(dsn)
    open_page(browser, url, "topics")
    chart = browser.find_element("css selector", '[data-chart^="Produce rate"]')
    path = chart.find_element("css selector", 'path[data-series="clicks"]')
    points = path.get_attribute("d").split("L")
    assert len(points) == 1  # two samples make one rate
    # The rate is above zero: the point is above the chart's bottom line.
    y = float(points[0].split()[-1])
    assert y < 148, path.get_attribute("d")
    # The message browser shows what was produced.
    open_page(browser, url, "messages")
    browser.find_element("css selector", "#browse button[type=submit]").click()
    wait_until(
        lambda: "click " in browser.find_element("id", "browse-result").text,
        WAIT_SECONDS,
        "messages shown",
    )


def test_an_abort_from_the_page_aborts_the_transaction(
    dsn: str, browser: Any, serve: Callable[[str], str]
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("payments")
        txn = client.new_transaction(timeout="10m")
        with client.producer("payments") as producer:
            producer.send(b"pending", txn=txn)
        txn_id = str(txn.txn_id)
        url = serve(dsn)
        open_page(browser, url, "transactions")
        browser.find_element("css selector", f'button[data-txn="{txn_id}"]').click()
        summary = browser.find_element("id", "dialog-summary")
        wait_until(lambda: summary.is_displayed(), WAIT_SECONDS, "the confirmation shown")
        assert f"Abort transaction {txn_id}?" in summary.text
        assert (
            sql_value(dsn, "SELECT state FROM txnq.transaction_status WHERE id = %s", [txn_id])
            == "OPEN"
        )
        browser.find_element("id", "dialog-confirm").click()
        wait_until(
            lambda: (
                sql_value(dsn, "SELECT state FROM txnq.transaction_status WHERE id = %s", [txn_id])
                in ("ABORTING", "ABORTED")
            ),
            WAIT_SECONDS,
            "the transaction aborted",
        )
        # Recorded once the abort returned.
        wait_until(
            lambda: (
                sql(dsn, "SELECT action, target, succeeded FROM txnq.console_action_log")
                == [("abort_transaction", txn_id, True)]
            ),
            WAIT_SECONDS,
            "the abort recorded",
        )


def test_the_reader_role_sees_no_action_buttons(
    dsn: str, browser: Any, serve: Callable[[str], str], make_login: Callable[..., Login]
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders")
        client.subscribe("orders", "billing").close()
        client.new_transaction(timeout="10m")  # an open transaction an admin could abort
    reader = make_login("txnq_reader")
    url = serve(reader.dsn)
    for tab in ("topics", "subscriptions", "transactions"):
        open_page(browser, url, tab)
        assert banner(browser) == ""
        assert browser.find_elements("css selector", ".action, #new-topic") == []
    assert "read only" in browser.find_element("id", "whoami").text
    page = browser.find_element("id", "page-transactions").text
    assert "OPEN" in page
