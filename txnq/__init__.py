"""txnq: a transactional message queue in PostgreSQL.

import txnq
client = txnq.Client(dsn)          # dsn=None: TXNQ_DSN, else embedded PostgreSQL under ./.txnq
client.admin.create_topic("orders", partitions=4)
producer = client.producer("orders", name="p1")
producer.send(b"payload", key="k1")
consumer = client.subscribe("orders", "billing", initial_position="earliest")
msg = consumer.receive(timeout=1.0)
consumer.acknowledge(msg)
with client.new_transaction() as txn:   # produce and acknowledge atomically
    producer.send(b"out", txn=txn)
    consumer.acknowledge(msg, txn=txn)
with conn.transaction(), txnq.attach(conn) as txn:   # in your own PostgreSQL transaction
    producer.send_async(b"out", txn=txn)             # (docs/exactly-once.md)
async with txnq.aio.Client(dsn) as client:          # asyncio (docs/asyncio.md)
    producer = await client.producer("orders")
    await producer.send(b"payload")
"""

from txnq import (
    aio,
    errors,
)
from txnq.admin import Admin, TopicInfo
from txnq.client import Client
from txnq.consumer import Backoff, Consumer, DeadLetterPolicy
from txnq.messages import Message, MessageId
from txnq.producer import PendingSend, Producer
from txnq.settings import Settings, load_settings
from txnq.transaction import AttachedTransaction, Transaction, TxnId, attach

__all__ = [
    "Admin",
    "AttachedTransaction",
    "Backoff",
    "Client",
    "Consumer",
    "DeadLetterPolicy",
    "Message",
    "MessageId",
    "PendingSend",
    "Producer",
    "Settings",
    "TopicInfo",
    "Transaction",
    "TxnId",
    "aio",
    "attach",
    "errors",
    "load_settings",
]
__version__ = "0.1.0"
