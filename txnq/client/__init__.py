"""Clients: one per process and database, the factories of producers,
consumers and transactions.

    base    settings, argument checks, the plans that open transactions
    sync    txnq.Client (a SQLAlchemy-pooled psycopg connection per call)
    aio     txnq.aio.Client (built on a sync client for admin and schema checks)
"""

from txnq.client.aio import Client as AsyncClient
from txnq.client.base import ClientBase
from txnq.client.sync import Client

__all__ = ["AsyncClient", "Client", "ClientBase"]
