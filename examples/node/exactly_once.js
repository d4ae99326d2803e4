// Exactly-once processing with txnq from Node.js, through the SQL API alone
// (docs/sql-api.md, docs/exactly-once.md). Run: TXNQ_DSN=postgresql://... node exactly_once.js
//
// 1. Consume topic "node-in" (subscription "node"), and for each message, in
//    ONE PostgreSQL transaction: write a row into the application's own table
//    node_results, produce "out <value>" to "node-out", acknowledge the input.
// 2. Produce a summary message in a txnq transaction (open, append, decide,
//    marker phase), and abort another one: its message is never delivered.
// Python consumers read what this wrote (tests/test_node_example.py).
"use strict";
const { Client } = require("pg");

async function one(db, text, params) {
  const { rows } = await db.query(text, params);
  return rows[0];
}

async function main() {
  const db = new Client({ connectionString: process.env.TXNQ_DSN });
  await db.connect();
  try {
    await db.query(
      "CREATE TABLE IF NOT EXISTS node_results (value text, source_partition int, source_offset bigint)"
    );
    const input = await one(db, "SELECT topic_id FROM txnq.topic_by_name_v1('node-in')");
    const subscriptionId = (
      await one(
        db,
        "SELECT txnq.subscribe_v2($1, 'node', 'exclusive', 'read_committed', 'earliest') AS id",
        [input.topic_id]
      )
    ).id;

    // 1. The exactly-once processor: fetch, write, produce, ack -- one transaction per batch.
    let processed = 0;
    for (;;) {
      await db.query("BEGIN");
      const { rows } = await db.query(
        `SELECT c.partition, f.entry_offset, f.payloads, f.acked_batch_indexes
           FROM txnq.cursor_positions_v1($1, $2) c,
                LATERAL txnq.fetch_v4($1, c.partition, $2, c.mark_delete_offset, 10) f
          ORDER BY c.partition, f.entry_offset`,
        [input.topic_id, subscriptionId]
      );
      if (rows.length === 0) {
        await db.query("ROLLBACK");
        break;
      }
      const acks = new Map(); // partition -> {offsets, indexes, sizes}
      for (const row of rows) {
        const skip = new Set(row.acked_batch_indexes || []);
        if (!acks.has(row.partition)) acks.set(row.partition, { offsets: [], indexes: [], sizes: [] });
        const ack = acks.get(row.partition);
        for (const [index, payload] of row.payloads.entries()) {
          if (skip.has(index)) continue; // acknowledged before
          const value = payload.toString("utf8");
          // The application's own write, and the output message, in the same transaction.
          await db.query("INSERT INTO node_results VALUES ($1, $2, $3)", [
            value,
            row.partition,
            row.entry_offset,
          ]);
          await db.query("SELECT txnq.send_at_commit_v2('node-out', $1, $2)", [
            Buffer.from(`out ${value}`),
            Buffer.from(value),
          ]);
          ack.offsets.push(row.entry_offset);
          ack.indexes.push(row.payloads.length === 1 ? -1 : index);
          ack.sizes.push(row.payloads.length);
          processed += 1;
        }
      }
      for (const [partition, ack] of acks) {
        await db.query("SELECT txnq.stage_ack_v2($1, $2, $3, $4::bigint[], $5::int[], $6::int[])", [
          input.topic_id,
          partition,
          subscriptionId,
          ack.offsets,
          ack.indexes,
          ack.sizes,
        ]);
      }
      await db.query("COMMIT"); // publishes the messages and applies the acks, with the rows
    }

    // 2. A txnq transaction (two phases), committed, and one aborted.
    const output = await one(db, "SELECT topic_id FROM txnq.topic_by_name_v1('node-out')");
    for (const [payload, commit] of [
      [`summary ${processed}`, true],
      ["aborted", false],
    ]) {
      const txn = await one(db, "SELECT tc_id, txn_seq FROM txnq.open_txn_v2(0, 60)");
      await db.query(
        `SELECT * FROM txnq.append_v4($1, 0, NULL, NULL, NULL, ARRAY[$2::bytea],
                                      NULL, NULL, NULL, $3, $4)`,
        [output.topic_id, Buffer.from(payload), txn.tc_id, txn.txn_seq]
      );
      const done = await one(
        db,
        `SELECT e.state, txnq.complete_txn_v2($1, $2) AS final_state
           FROM txnq.end_txn_v2($1, $2, $3) e`,
        [txn.tc_id, txn.txn_seq, commit]
      );
      console.log(`transaction ${txn.tc_id}:${txn.txn_seq} ${done.final_state}`);
    }
    console.log(`processed ${processed}`);
  } finally {
    await db.end();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
