"""One transactional copier process (Kafka's ``TransactionalMessageCopier`` on txnq).

    python bench/chaoslib/copier.py --dsn URL --name copier-0 --log copier-0.jsonl

Consumes the input topic in a ``failover`` (or, once merged, ``shared``)
subscription, transforms each message (``in-…`` → ``out:in-…``, same key),
produces the result to the output topic and acknowledges the input in one
transaction of up to ``--txn-size`` messages, aborting about ``--abort-ratio``
of them on purpose. It runs until it is killed (the harness SIGKILLs it) or
SIGTERMed.

Every transaction leaves lines in the JSON-lines log, flushed before the next
step, so a SIGKILL loses at most the step in flight (an unfinished last line is
ignored by the reader)::

    {"ev": "batch", "txn": "3:42", "t": ..., "consumed": [...], "produced": [...]}
    {"ev": "commit", "txn": "3:42", "t": ...}      # commit() is being called
    {"ev": "end", "txn": "3:42", "t": ..., "outcome": "committed|aborted|unknown"}

An outcome the process cannot know (the connection died during commit) is
``unknown``; the harness resolves it from ``txnq.transactions`` afterwards.
Any error it does not expect ends the process with status 3: the harness
restarts it, as a supervisor would.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import txnq  # noqa: E402
from txnq import errors  # noqa: E402

_stop = False


def _on_term(signum: int, frame: object) -> None:
    global _stop
    _stop = True


def transform(value: bytes) -> bytes:
    return b"out:" + value


class Log:
    def __init__(self, path: str) -> None:
        self._file: TextIO = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, **record: Any) -> None:
        record["t"] = time.time()
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    log = Log(args.log)
    client = txnq.Client(args.dsn)
    consumer = client.subscribe(
        args.input,
        args.subscription,
        args.subscription_type,
        consumer_name=args.name,
        initial_position="earliest",
        receiver_queue_size=args.txn_size * 2,
    )
    producer = client.producer(args.output, transactional_id=args.name, batching_max_messages=500)
    log.write(ev="start", pid=__import__("os").getpid())
    while not _stop:
        batch = consumer.batch_receive(args.txn_size, timeout="500ms")
        if not batch:
            continue
        txn = client.new_transaction(timeout=args.txn_timeout)
        name = str(txn.txn_id)
        abort = rng.random() < args.abort_ratio
        try:
            last: dict[int, txnq.Message] = {}
            produced = []
            for message in batch:
                out = transform(message.value)
                producer.send_async(out, key=message.key_bytes, txn=txn)
                produced.append(out.decode())
                last[message.message_id.partition] = message
            log.write(
                ev="batch",
                txn=name,
                consumed=[m.value.decode() for m in batch],
                produced=produced,
            )
            if args.subscription_type in ("shared", "key_shared"):
                # Individual acks only there (other consumers hold earlier messages).
                consumer.acknowledge(batch, txn=txn)
            else:
                for message in last.values():
                    consumer.acknowledge_cumulative(message, txn=txn)
            if args.pause:
                time.sleep(args.pause)
            if abort:
                txn.abort()
                log.write(ev="end", txn=name, outcome="aborted")
            else:
                log.write(ev="commit", txn=name)
                txn.commit()
                log.write(ev="end", txn=name, outcome="committed")
        except (errors.TransactionConflictError, errors.TransactionEndedError) as exc:
            # Another transaction holds these inputs (a copier that died with
            # its transaction open), or the system aborted ours: give up this
            # one; abort() rewinds the consumer so the inputs come back.
            try:
                txn.abort()
                outcome = "aborted"
            except errors.TxnqError:
                outcome = "unknown"
            log.write(ev="end", txn=name, outcome=outcome, error=type(exc).__name__)
            time.sleep(0.2)
        except Exception as exc:  # the server went away: a supervisor restarts us
            log.write(ev="end", txn=name, outcome="unknown", error=f"{type(exc).__name__}: {exc}")
            return 3
    consumer.close()
    producer.close()
    client.close()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--name", required=True, help="consumer name and transactional id")
    parser.add_argument("--log", required=True)
    parser.add_argument("--input", default="chaos-in")
    parser.add_argument("--output", default="chaos-out")
    parser.add_argument("--subscription", default="copiers")
    parser.add_argument("--subscription-type", default="failover")
    parser.add_argument("--txn-size", type=int, default=500)
    parser.add_argument("--txn-timeout", default="10s")
    parser.add_argument("--abort-ratio", type=float, default=1 / 3)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds held in each txn")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _on_term)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
