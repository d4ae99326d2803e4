"""Quick start: produce and consume on the embedded PostgreSQL (or TXNQ_DSN).

make demo          # or: .venv/bin/python examples/quickstart.py
"""

from __future__ import annotations

import txnq


def main() -> None:
    with txnq.Client() as client:  # no DSN: embedded PostgreSQL under ./.txnq, migrated
        print(f"connected to {client.dsn}")
        if "orders" not in {t.name for t in client.admin.list_topics()}:
            client.admin.create_topic("orders", partitions=4, retention="7d")

        with client.producer("orders", name="quickstart") as producer:
            first = producer.send(b"order #1", key="customer-1", properties={"source": "demo"})
            print(f"sent one message synchronously: {first}")
            for i in range(2, 1001):
                producer.send_async(f"order #{i}".encode(), key=f"customer-{i % 10}")
            producer.flush()
            print("sent 999 more in batches")

        consumer = client.subscribe(
            "orders", "billing", subscription_type="failover", initial_position="earliest"
        )
        with consumer:
            received = 0
            last_per_partition: dict[int, txnq.Message] = {}
            while (message := consumer.receive(timeout=2.0)) is not None:
                received += 1
                last_per_partition[message.partition] = message
            for message in last_per_partition.values():
                consumer.acknowledge_cumulative(message)
            print(f"received and acknowledged {received} messages")

        for sub in client.admin.list_subscriptions("orders"):
            print(f"subscription {sub.name}: backlog {sub.backlog_entries} entries")


if __name__ == "__main__":
    main()
