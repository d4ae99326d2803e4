"""The asyncio client: ``txnq.aio.Client``, the same API as ``txnq.Client``
with ``await`` (docs/asyncio.md).

    async with txnq.aio.Client(dsn) as client:
        producer = await client.producer("orders")
        await producer.send(b"payload", key="k1")
        async with client.subscribe("orders", "billing", initial_position="earliest") as consumer:
            async for msg in consumer:
                async with client.new_transaction() as txn:
                    await producer.send(b"out", txn=txn)
                    await consumer.acknowledge(msg, txn=txn)

One implementation, two faces: every exchange with PostgreSQL is a plan of
``txnq.database.plans`` in a shared base; the asyncio faces (the ``aio``
module of each package: txnq.client, txnq.producer, txnq.consumer,
txnq.transaction) only drive the plans on psycopg ``AsyncConnection``s and
replace threads with tasks and conditions with events. Sync and asyncio
clients interoperate on the same database. This module gathers their names.
"""

# The public names (__all__), then, with `as`, the names this module had
# before the faces moved into their packages, kept importable from here.
from txnq.client.aio import POOL_IDLE as POOL_IDLE
from txnq.client.aio import Client
from txnq.client.base import ClientBase as ClientBase
from txnq.client.sync import Client as SyncClient  # noqa: F401
from txnq.consumer.aio import Consumer
from txnq.consumer.base import ConsumerBase as ConsumerBase
from txnq.consumer.dead_letters import Backoff, DeadLetterPolicy
from txnq.messages import Message, MessageId
from txnq.producer.aio import Producer
from txnq.producer.base import ProducerBase as ProducerBase
from txnq.producer.base import delivery_time as delivery_time
from txnq.transaction.aio import Transaction
from txnq.transaction.attached_aio import AttachedTransaction, attach
from txnq.transaction.attached_aio import process as process
from txnq.transaction.attached_base import AttachedBase as AttachedBase
from txnq.transaction.attached_base import check_between_batches as check_between_batches
from txnq.transaction.base import TransactionBase as TransactionBase
from txnq.transaction.base import TxnId as TxnId
from txnq.transaction.pending import PendingSend
from txnq.transaction.pending import SendCallback as SendCallback
from txnq.transaction.staging import StagedSend as StagedSend

__all__ = [
    "AttachedTransaction",
    "Backoff",
    "Client",
    "Consumer",
    "DeadLetterPolicy",
    "Message",
    "MessageId",
    "PendingSend",
    "Producer",
    "Transaction",
    "attach",
]
