"""Screenshots of the web console's main pages for docs/console/*.png (shown
in README.md and docs/console.md), taken in headless Chromium on sample data.

    python scripts/console_screenshots.py            # a scratch embedded PostgreSQL
    python scripts/console_screenshots.py --dsn URL  # an empty, migrated database

The sample: three topics, subscriptions behind by different amounts, a
minute of traffic sampled every second (what the scheduler's console_sample
job does every CONSOLE_SAMPLE_INTERVAL_SECONDS), a hanging transaction and
an aborted one, and an action taken from the console. Needs Debian's
chromium and chromium-driver (`make install-chromium`).
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import txnq  # noqa: E402
from tests.console_browser import MISSING, chromium_available, start_chromium  # noqa: E402
from txnq.console.reads import ConsoleDatabase  # noqa: E402
from txnq.console.samples import sample_history  # noqa: E402
from txnq.console.server import ConsoleServer  # noqa: E402

OUT = ROOT / "docs" / "console"
PAGES = ("topics", "subscriptions", "transactions", "storage", "messages")
SAMPLES = 40
WAIT_SECONDS = 10.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def populate(dsn: str) -> None:
    """The sample data: traffic sampled once a second, consumers behind."""
    with txnq.Client(dsn) as client:
        admin = client.admin
        admin.create_topic("orders", partitions=4, retention="7d", ttl="1h")
        admin.create_topic("payments", partitions=2, retention="1d", retention_size="10GiB")
        admin.create_topic("clicks", partitions=1)
        database = ConsoleDatabase(dsn, client.settings)
        billing = client.subscribe("orders", "billing", initial_position="earliest")
        client.subscribe("orders", "analytics", subscription_type="shared").close()
        ledger = client.subscribe("payments", "ledger", initial_position="earliest")
        client.subscribe("clicks", "sessions").close()
        producers = {name: client.producer(name) for name in ("orders", "payments", "clicks")}
        for step in range(SAMPLES):
            wave = 1 + (step % 10) / 3
            for name, base in (("orders", 60), ("payments", 25), ("clicks", 140)):
                for i in range(int(base * wave)):
                    payload = f'{{"{name[:-1]}": {step * 1000 + i}, "amount": {i % 97}.50}}'
                    producers[name].send_async(payload.encode(), key=f"customer-{i % 13}")
                producers[name].flush()
            for consumer, share in ((billing, 70), (ledger, 30)):
                for _ in range(int(share * wave)):
                    message = consumer.receive(timeout=0.2)
                    if message is None:
                        break
                    consumer.acknowledge(message)
            sample_history(database)
            time.sleep(1.0)
        hanging = client.new_transaction(timeout="2s")
        producers["payments"].send(b'{"payment": "pending"}', txn=hanging)
        aborted = client.new_transaction(timeout="1m")
        producers["orders"].send(b'{"order": "cancelled"}', txn=aborted)
        aborted.abort()
        client.new_transaction(timeout="10m")
        for producer in producers.values():
            producer.close()
        billing.close()
        ledger.close()
        time.sleep(2.5)  # the first transaction is past its timeout: hanging
        sample_history(database)


def shoot(dsn: str) -> list[Path]:
    server = ConsoleServer(dsn, txnq.settings.load_settings(), port=0).start()
    browser = start_chromium(1440, 960)
    saved = []
    try:
        server.actions.run("produce", {"topic": "clicks", "payload": '{"hello": "console"}'})
        OUT.mkdir(parents=True, exist_ok=True)
        for tab in PAGES:
            browser.get(f"{server.url}#{tab}")
            browser.refresh()
            deadline = time.monotonic() + WAIT_SECONDS
            while browser.execute_script("return document.body.dataset.loaded") != tab:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the {tab} page did not load")
                time.sleep(0.1)
            if tab == "messages":
                browser.find_element(
                    "css selector",
                    "#browse-format option[value=json], #browse-format option:nth-child(2)",
                ).click()
                browser.find_element("css selector", "#browse input[name=limit]").clear()
                browser.find_element("css selector", "#browse input[name=limit]").send_keys("12")
                browser.find_element("css selector", "#browse button[type=submit]").click()
                time.sleep(1.0)
            height = browser.execute_script("return document.documentElement.scrollHeight")
            browser.set_window_size(1440, min(max(int(height) + 20, 700), 1500))
            time.sleep(0.3)
            path = OUT / f"{tab}.png"
            browser.save_screenshot(str(path))
            saved.append(path)
            browser.set_window_size(1440, 960)
    finally:
        browser.quit()
        server.stop()
    return saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="an empty, migrated txnq database")
    args = parser.parse_args()
    if not chromium_available():
        print(MISSING, file=sys.stderr)
        return 1
    if args.dsn:
        populate(args.dsn)
        saved = shoot(args.dsn)
    else:
        from txnq.database.embedded import EmbeddedServer
        from txnq.database.migrate import upgrade

        with tempfile.TemporaryDirectory(prefix="txnq-screens-") as home:
            server = EmbeddedServer(Path(home), port=_free_port())
            try:
                dsn = server.start()
                upgrade(dsn)
                populate(dsn)
                saved = shoot(dsn)
            finally:
                server.stop()
    for path in saved:
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
