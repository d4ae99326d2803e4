// txnq console: polls the console's JSON endpoints and draws the page.
// Plain JavaScript, charts as inline SVG: nothing to build, nothing fetched
// from the internet.
"use strict";

const REFRESH_MS = 2000;
const COLORS = ["#2f6fde", "#e07b24", "#2e8540", "#9b4dca", "#c2352b", "#128a8a", "#8a6d1f", "#d4458f"];
const state = { tab: "topics", who: null, timer: null, topics: [] };

// -- helpers -------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

const admin = () => state.who && state.who.may_administer;

function bytes(n) {
  if (n === null || n === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0; let v = Number(n);
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v) + " " + units[i];
}

function seconds(s) {
  if (s === null || s === undefined) return "";
  s = Number(s);
  if (s < 0) return "-" + seconds(-s);
  if (s < 1) return Math.round(s * 1000) + "ms";
  if (s < 120) return s.toFixed(s < 10 ? 1 : 0) + "s";
  if (s < 7200) return Math.round(s / 60) + "m";
  if (s < 172800) return (s / 3600).toFixed(1) + "h";
  return (s / 86400).toFixed(1) + "d";
}

function policy(secondsValue, bytesValue) {
  const time = secondsValue === -1 ? "forever" : secondsValue === 0 ? "none" : seconds(secondsValue);
  const size = bytesValue === -1 ? "no cap" : bytesValue === 0 ? "none" : bytes(bytesValue);
  return `${time} / ${size}`;
}

function time(iso) { return iso ? new Date(iso).toLocaleString() : ""; }
function num(v) { return v === null || v === undefined ? "" : Number(v).toLocaleString(); }

function table(columns, rows, options) {
  if (!rows.length) return el("div", { class: "empty" }, (options && options.empty) || "nothing yet");
  const head = el("tr", {}, columns.map(c => el("th", { class: c.num ? "num" : null }, c.title)));
  const body = rows.map(row => el("tr", { class: options && options.rowClass ? options.rowClass(row) : null },
    columns.map(c => el("td", { class: c.num ? "num" : null }, c.value(row)))));
  return el("table", { class: options && options.id ? options.id : null }, el("thead", {}, head), el("tbody", {}, body));
}

// -- charts ----------------------------------------------------------------------

// series: [{name, points: [[epochMs, value], ...]}]
function lineChart(title, series, format) {
  const width = 520, height = 170, left = 56, right = 10, top = 10, bottom = 22;
  const all = series.flatMap(s => s.points);
  const box = el("div", { class: "card chart", "data-chart": title });
  box.append(el("h3", {}, title));
  if (all.length < 1) {
    box.append(el("div", { class: "empty" }, "no samples yet: the scheduler's console_sample job takes one every " +
      seconds(state.who ? state.who.sample_interval_seconds : 10)));
    return box;
  }
  const xs = all.map(p => p[0]), ys = all.map(p => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1000);
  const y1 = Math.max(...ys, 1) * 1.1;
  const sx = x => left + (x - x0) / (x1 - x0) * (width - left - right);
  const sy = y => top + (1 - y / y1) * (height - top - bottom);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img" });
  for (let i = 0; i <= 4; i++) {
    const v = y1 * i / 4, y = sy(v);
    chart.append(svg("line", { x1: left, x2: width - right, y1: y, y2: y, class: "axis" }));
    const label = svg("text", { x: left - 6, y: y + 3, "text-anchor": "end" });
    label.textContent = format(v);
    chart.append(label);
  }
  for (const [i, x] of [[0, x0], [1, x1]]) {
    const label = svg("text", { x: i ? width - right : left, y: height - 6, "text-anchor": i ? "end" : "start" });
    label.textContent = new Date(x).toLocaleTimeString();
    chart.append(label);
  }
  series.forEach((s, i) => {
    if (!s.points.length) return;
    const d = s.points.map((p, j) => (j ? "L" : "M") + sx(p[0]).toFixed(1) + " " + sy(p[1]).toFixed(1)).join(" ");
    chart.append(svg("path", { d, fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 2,
                               "vector-effect": "non-scaling-stroke", "data-series": s.name }));
    if (s.points.length === 1) {
      const [p] = s.points;
      chart.append(svg("circle", { cx: sx(p[0]), cy: sy(p[1]), r: 3, fill: COLORS[i % COLORS.length] }));
    }
  });
  box.append(chart);
  box.append(el("div", { class: "legend" }, series.map((s, i) =>
    el("span", {}, el("i", { style: `background:${COLORS[i % COLORS.length]}` }), s.name))));
  return box;
}

function groupBy(rows, key) {
  const groups = new Map();
  for (const row of rows) {
    if (!groups.has(row[key])) groups.set(row[key], []);
    groups.get(row[key]).push(row);
  }
  return groups;
}

function rate(rows, column) {
  const points = [];
  for (let i = 1; i < rows.length; i++) {
    const dt = (Date.parse(rows[i].sampled_at) - Date.parse(rows[i - 1].sampled_at)) / 1000;
    if (dt > 0) points.push([Date.parse(rows[i].sampled_at), Math.max(0, (rows[i][column] - rows[i - 1][column]) / dt)]);
  }
  return points;
}

const level = (rows, column) => rows.map(r => [Date.parse(r.sampled_at), Number(r[column])]);
const perSecond = v => (v < 10 ? v.toFixed(1) : Math.round(v).toLocaleString()) + "/s";

// -- actions ---------------------------------------------------------------------

// fields: [{name, label, value, type, options}]; summary(values) -> text.
function openAction(title, action, fields, summary) {
  const dialog = document.getElementById("dialog");
  const fieldBox = document.getElementById("dialog-fields");
  const summaryBox = document.getElementById("dialog-summary");
  const errorBox = document.getElementById("dialog-error");
  const [next, confirm, back, cancel] = ["next", "confirm", "back", "cancel"].map(
    n => document.getElementById("dialog-" + n));
  document.getElementById("dialog-title").textContent = title;
  fieldBox.replaceChildren(...fields.filter(f => f.type !== "hidden").map(f => el("label", {}, f.label,
    f.options ? el("select", { name: f.name }, f.options.map(o => el("option", { selected: o === f.value }, o)))
              : el("input", { name: f.name, value: f.value ?? "", type: f.type || "text" }))));
  const values = () => {
    const v = {};
    for (const f of fields) {
      const input = fieldBox.querySelector(`[name="${f.name}"]`);
      v[f.name] = f.type === "hidden" ? f.value : f.type === "checkbox" ? input.checked
        : f.type === "number" ? Number(input.value) : input.value;
    }
    return v;
  };
  const step = review => {
    fieldBox.hidden = review; summaryBox.hidden = !review;
    next.hidden = review; confirm.hidden = !review; back.hidden = !review || !fields.some(f => f.type !== "hidden");
  };
  errorBox.hidden = true;
  step(false);
  if (!fields.some(f => f.type !== "hidden")) { summaryBox.textContent = summary(values()); step(true); }
  next.onclick = () => { summaryBox.textContent = summary(values()); step(true); };
  back.onclick = () => step(false);
  cancel.onclick = () => dialog.close();
  confirm.onclick = async () => {
    confirm.disabled = true;
    try {
      await api("/api/actions/" + action, {
        method: "POST", body: JSON.stringify(values()),
        headers: { "content-type": "application/json", "x-txnq-console": "1" },
      });
      dialog.close();
      refresh();
    } catch (error) {
      errorBox.textContent = error.message; errorBox.hidden = false;
    } finally { confirm.disabled = false; }
  };
  dialog.showModal();
}

function actionButton(label, onclick, data) {
  if (!admin()) return null;  // a read-only console shows no action at all
  return el("button", { class: "small action", type: "button", onclick, ...data }, label);
}

// -- pages -----------------------------------------------------------------------

const pages = {
  async topics(root) {
    const data = await api("/api/topics");
    state.topics = data.topics.map(t => t.topic);
    const groups = groupBy(data.history, "topic");
    const series = column => [...groups].map(([name, rows]) => ({ name, points: rate(rows, column) }));
    root.replaceChildren(
      el("div", { class: "toolbar" }, el("h2", {}, "Topics"),
         actionButton("New topic", () => openAction("Create a topic", "create_topic", [
           { name: "topic", label: "Name", value: "" },
           { name: "partitions", label: "Partitions", value: 1, type: "number" },
           { name: "retention", label: "Retention (e.g. 7d; empty: none)", value: "" },
           { name: "ttl", label: "TTL (e.g. 1h; empty: none)", value: "" },
         ], v => `Create topic "${v.topic}" with ${v.partitions} partition(s)?`), { id: "new-topic" })),
      el("div", { class: "grid" },
        lineChart("Produce rate (entries/s)", series("entries_written"), perSecond),
        lineChart("Consume rate (entries acknowledged/s, all subscriptions)", series("entries_acked"), perSecond),
        lineChart("Backlog (entries)", [...groups].map(([name, rows]) => ({ name, points: level(rows, "backlog_entries") })), num)),
      el("h2", {}, "All topics"),
      table([
        { title: "Topic", value: r => r.topic },
        { title: "Partitions", num: true, value: r => r.partitions },
        { title: "Subscriptions", num: true, value: r => r.subscriptions },
        { title: "Entries written", num: true, value: r => num(r.entries_written) },
        { title: "Live messages", num: true, value: r => num(r.live_messages) },
        { title: "Live bytes", num: true, value: r => bytes(r.live_bytes) },
        { title: "Open txns", num: true, value: r => r.ongoing_txns },
        { title: "Last publish", value: r => time(r.last_publish_time) },
        { title: "", value: r => [
          actionButton("Test message", () => openAction(`Produce a test message to ${r.topic}`, "produce", [
            { name: "topic", type: "hidden", value: r.topic },
            { name: "payload", label: "Payload (text)", value: '{"hello": "from the console"}' },
            { name: "key", label: "Key (optional)", value: "" },
          ], v => `Send ${new Blob([v.payload]).size} bytes to "${r.topic}"?`), { "data-topic": r.topic }),
          actionButton("Policies", () => openAction(`Policies of ${r.topic}`, "set_policy", [
            { name: "topic", type: "hidden", value: r.topic },
            { name: "retention", label: "Retention (7d, infinite; empty: unchanged)", value: "" },
            { name: "retention_size", label: "Retention size (10GiB; empty: unchanged)", value: "" },
            { name: "ttl", label: "TTL (1h, none; empty: unchanged)", value: "" },
            { name: "backlog_quota_size", label: "Backlog quota size (10GiB, -1, default; empty: unchanged)", value: "" },
            { name: "backlog_quota_age", label: "Backlog quota age (1d, -1, default; empty: unchanged)", value: "" },
            { name: "backlog_quota_policy", label: "Backlog quota policy (producer_hold, producer_error, consumer_backlog_eviction, default)", value: "" },
          ], v => `Change the policies of "${r.topic}": ` + Object.entries(v).filter(([k, x]) => k !== "topic" && x)
            .map(([k, x]) => `${k} = ${x}`).join(", ") + "?"), { "data-topic": r.topic }),
          actionButton("Delete", () => openAction(`Delete ${r.topic}`, "delete_topic", [
            { name: "topic", type: "hidden", value: r.topic },
            { name: "force", label: "Also when it has subscriptions", type: "checkbox", value: "" },
          ], v => `Delete topic "${r.topic}" and every message in it${v.force ? ", subscriptions included" : ""}? This cannot be undone.`),
          { "data-topic": r.topic }),
        ] },
      ], data.topics, { empty: "no topics: create one with `txnq topics create NAME`" }),
      el("h2", {}, "Partitions"),
      table([
        { title: "Topic", value: r => r.topic },
        { title: "Partition", num: true, value: r => r.partition },
        { title: "High watermark", num: true, value: r => num(r.high_watermark) },
        { title: "Max read offset", num: true, value: r => num(r.max_read_offset) },
        { title: "Open txns", num: true, value: r => r.ongoing_txns },
        { title: "Oldest open txn", value: r => r.oldest_ongoing_txn ? `${r.oldest_ongoing_txn} (${seconds(r.oldest_ongoing_txn_age_seconds)})` : "" },
        { title: "Live ledgers", num: true, value: r => r.live_ledgers },
        { title: "Live bytes", num: true, value: r => bytes(r.live_bytes) },
      ], data.partitions),
    );
  },

  async subscriptions(root) {
    const data = await api("/api/subscriptions");
    root.replaceChildren(
      el("h2", {}, "Subscriptions"),
      table([
        { title: "Topic", value: r => r.topic },
        { title: "Subscription", value: r => r.subscription },
        { title: "Type", value: r => r.subscription_type },
        { title: "Isolation", value: r => r.isolation },
        { title: "Consumers", num: true, value: r => r.consumers },
        { title: "Backlog", num: true, value: r => num(r.backlog_messages) },
        { title: "Backlog bytes", num: true, value: r => bytes(r.backlog_bytes) },
        { title: "Oldest unacked", num: true, value: r => seconds(r.oldest_unacked_age_seconds) },
        { title: "Pending acks", num: true, value: r => r.pending_acks },
        { title: "", value: r => [
          actionButton("Seek", () => openAction(`Seek ${r.topic}/${r.subscription}`, "seek_subscription", [
            { name: "topic", type: "hidden", value: r.topic },
            { name: "subscription", type: "hidden", value: r.subscription },
            { name: "to", label: "To: earliest, latest, an offset or a time (2026-01-31T12:00Z)", value: "earliest" },
          ], v => `Move every cursor of "${r.subscription}" on "${r.topic}" to ${v.to}? Consumers are rewound.`)),
          actionButton("Skip all", () => openAction(`Skip the backlog of ${r.topic}/${r.subscription}`, "skip_subscription", [
            { name: "topic", type: "hidden", value: r.topic },
            { name: "subscription", type: "hidden", value: r.subscription },
          ], () => `Skip all ${num(r.backlog_messages)} unacknowledged message(s) of "${r.subscription}"? They are never delivered to it.`)),
        ] },
      ], data.subscriptions, { empty: "no subscriptions" }),
      el("h2", {}, "Per partition"),
      table([
        { title: "Topic", value: r => r.topic },
        { title: "Subscription", value: r => r.subscription },
        { title: "Partition", num: true, value: r => r.partition },
        { title: "Mark-delete offset", num: true, value: r => num(r.mark_delete_offset) },
        { title: "Readable up to", num: true, value: r => num(r.readable_offset) },
        { title: "Lag (entries)", num: true, value: r => num(r.lag_entries) },
        { title: "Individual acks", num: true, value: r => num(r.individual_acks) },
        { title: "In flight", num: true, value: r => num(r.in_flight) },
        { title: "Redeliveries", num: true, value: r => num(r.redeliveries) },
        { title: "Dead letters", num: true, value: r => r.dead_letters === null ? "-" : num(r.dead_letters) },
      ], data.cursors),
    );
  },

  async transactions(root) {
    const data = await api("/api/transactions");
    const rows = data.transactions;
    const hanging = r => r.state === "OPEN" && r.overdue_seconds !== null;
    const count = f => rows.filter(f).length;
    root.replaceChildren(
      el("div", { class: "counts" },
        [["Open", r => r.state === "OPEN"], ["Committing", r => r.state === "COMMITTING"],
         ["Aborting", r => r.state === "ABORTING"], ["Aborted (recent)", r => r.state === "ABORTED"],
         ["Hanging", hanging]].map(([label, f]) => el("div", { class: "card" }, el("b", {}, count(f)), label))),
      el("h2", {}, "Transactions"),
      table([
        { title: "Id", value: r => r.id },
        { title: "State", value: r => [el("span", { class: "badge " + r.state }, r.state), " ",
                                       hanging(r) ? el("span", { class: "badge hanging" }, "hanging") : null] },
        { title: "Opened", value: r => time(r.opened_at) },
        { title: "Age", num: true, value: r => seconds(r.age_seconds) },
        { title: "Timeout in", num: true, value: r => seconds(r.time_to_timeout_seconds) },
        { title: "Partitions (marked)", value: r => r.partition_list === null
            ? `${r.partitions} (${r.partitions_marked})`
            : r.partition_list.map(p => `${p.topic}/${p.partition}${p.marker_offset === null ? "" : " ✓"}`).join(", ") || "none" },
        { title: "Pending acks (applied)", value: r => r.ack_list === null
            ? `${r.subscriptions} subscription(s) (${r.subscriptions_done})`
            : r.ack_list.map(a => `${a.topic}/${a.partition} ${a.subscription}: ${num(a.pending_acks)}${a.done ? " ✓" : ""}`).join(", ") || "none" },
        { title: "Producer", value: r => r.transactional_id || "" },
        { title: "Reason", value: r => r.reason || "" },
        { title: "", value: r => r.state === "OPEN" ? actionButton("Abort", () => openAction(`Abort transaction ${r.id}`, "abort_transaction", [
          { name: "txn_id", type: "hidden", value: r.id },
        ], () => `Abort transaction ${r.id}? Its messages are never delivered and its pending acks are released.`),
        { "data-txn": r.id }) : null },
      ], rows, { empty: "no open, ending or recently aborted transactions", rowClass: r => hanging(r) ? "hanging" : null }),
    );
  },

  async storage(root) {
    const data = await api("/api/storage");
    const h = data.history;
    const next = t => {
      const said = [];
      said.push(t.ttl_seconds ? `TTL: acknowledges messages older than ${seconds(t.ttl_seconds)} at the next check (every ${seconds(data.schedules.ttl)})` : "no TTL");
      said.push(t.retention_seconds === -1 ? "retention keeps consumed ledgers forever"
        : `retention deletes consumed ledgers older than ${t.retention_seconds ? seconds(t.retention_seconds) : "0s"} at the next run (every ${seconds(data.schedules.retention)})`);
      return said.join("; ");
    };
    root.replaceChildren(
      el("div", { class: "grid" },
        lineChart("Entry logs", [{ name: "entry logs", points: level(h, "entry_logs") }], num),
        lineChart("Entry logs on disk", [{ name: "bytes", points: level(h, "entry_log_bytes") }], bytes),
        lineChart("Ledgers", [{ name: "live ledgers", points: level(h, "ledgers") }], num)),
      el("h2", {}, "Policies"),
      table([
        { title: "Topic", value: r => r.topic },
        { title: "Retention (time / size)", value: r => policy(r.retention_seconds, r.retention_bytes) },
        { title: "TTL", value: r => r.ttl_seconds ? seconds(r.ttl_seconds) : "none" },
        { title: "Max message", num: true, value: r => bytes(r.max_message_bytes) },
        { title: "What happens next", value: next },
      ], data.topics),
      el("h2", {}, "Lifecycle runs (what TTL, retention and GC did)"),
      table([
        { title: "Run", num: true, value: r => r.run_id },
        { title: "Job", value: r => r.job + (r.dry_run ? " (dry run)" : "") },
        { title: "Started", value: r => time(r.started_at) },
        { title: "Took", num: true, value: r => seconds(r.duration_seconds) },
        { title: "Items", num: true, value: r => num(r.items) },
        { title: "Bytes", num: true, value: r => bytes(r.bytes) },
        { title: "Failures", num: true, value: r => r.failures },
      ], data.gc_runs, { empty: "no lifecycle run did anything yet" }),
      el("h2", {}, "Failing now"),
      table([
        { title: "Job", value: r => r.job },
        { title: "Topic", value: r => r.topic || r.subject || "" },
        { title: "Runs", num: true, value: r => r.failures },
        { title: "For", num: true, value: r => seconds(r.failing_seconds) },
        { title: "Error", value: r => r.error },
      ], data.failures, { empty: "nothing is failing" }),
      el("h2", {}, "Live ledgers"),
      table([
        { title: "Topic", value: r => r.topic || "(orphan)" },
        { title: "Partition", num: true, value: r => r.partition },
        { title: "Ledger", num: true, value: r => r.ledger_id },
        { title: "State", value: r => r.state },
        { title: "Offsets", value: r => r.first_offset === null ? "" : `${r.first_offset}–${r.last_offset}` },
        { title: "Entries", num: true, value: r => num(r.entries) },
        { title: "Size", num: true, value: r => bytes(r.size_bytes) },
        { title: "Age", num: true, value: r => seconds(r.age_seconds) },
      ], data.ledgers),
    );
  },

  async messages() {
    const select = document.getElementById("browse-topic");
    if (!state.topics.length) state.topics = (await api("/api/topics")).topics.map(t => t.topic);
    const chosen = select.value;
    if ([...select.options].map(o => o.value).join() !== state.topics.join()) {
      select.replaceChildren(...state.topics.map(t => el("option", { selected: t === chosen }, t)));
    }
  },

  async audit(root) {
    const data = await api("/api/actions");
    root.replaceChildren(
      el("h2", {}, "Actions taken from the console"),
      table([
        { title: "When", value: r => time(r.at) },
        { title: "Role", value: r => r.role },
        { title: "Action", value: r => r.action },
        { title: "Target", value: r => r.target },
        { title: "Arguments", value: r => el("pre", {}, JSON.stringify(r.details)) },
        { title: "Outcome", value: r => r.succeeded ? "done" : el("span", { class: "error" }, r.error) },
      ], data.actions, { empty: "no action taken from the console yet" }),
    );
  },
};

async function browse(event) {
  if (event) event.preventDefault();
  const form = document.getElementById("browse");
  const out = document.getElementById("browse-result");
  const f = new FormData(form);
  const params = new URLSearchParams({ topic: f.get("topic") || "", partition: f.get("partition"), limit: f.get("limit") });
  params.set(f.get("from") === "time" ? "time" : "offset", f.get("at"));
  try {
    const data = await api("/api/messages?" + params);
    const format = f.get("format");
    const show = p => format === "hex" ? p.hex : format === "json" ? (p.json ?? "(not JSON) " + (p.text ?? p.hex)) : (p.text ?? "(not UTF-8) " + p.hex);
    out.replaceChildren(table([
      { title: "Offset", num: true, value: r => r.batch_index ? `${r.offset} #${r.batch_index}` : r.offset },
      { title: "Published", value: r => time(r.publish_time) },
      { title: "Key", value: r => r.key ?? "" },
      { title: "Properties", value: r => r.properties ? el("pre", {}, JSON.stringify(r.properties)) : "" },
      { title: "Payload", value: r => el("pre", {}, show(r.payload) + (r.payload.truncated ? ` … (${bytes(r.payload.size)})` : "")) },
    ], data.messages, { empty: "no committed message there", id: "messages" }));
  } catch (error) {
    out.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

// -- refresh loop ---------------------------------------------------------------

async function refresh() {
  const banner = document.getElementById("banner");
  try {
    if (!state.who) {
      state.who = await api("/api/whoami");
      document.getElementById("whoami").replaceChildren(
        "role ", el("b", {}, state.who.role), " ",
        el("span", { class: "badge " + (state.who.may_administer ? "admin" : "reader") },
           state.who.may_administer ? "admin" : "read only"),
        ` · schema ${state.who.revision}`);
    }
    if (document.getElementById("dialog").open) return;  // do not redraw under an open dialog
    await pages[state.tab](document.getElementById("page-" + state.tab));
    banner.hidden = true;
    document.getElementById("refreshed").textContent = "refreshed " + new Date().toLocaleTimeString() +
      ` · every ${REFRESH_MS / 1000}s`;
    document.body.dataset.loaded = state.tab;
  } catch (error) {
    banner.textContent = error.message;
    banner.hidden = false;
  }
}

function show(tab) {
  if (!pages[tab]) tab = "topics";
  state.tab = tab;
  for (const link of document.querySelectorAll("#tabs a")) link.classList.toggle("active", link.dataset.tab === tab);
  for (const page of document.querySelectorAll(".page")) page.hidden = page.id !== "page-" + tab;
  delete document.body.dataset.loaded;
  refresh();
}

window.addEventListener("hashchange", () => show(location.hash.slice(1)));
document.getElementById("browse").addEventListener("submit", browse);
show(location.hash.slice(1) || "topics");
state.timer = setInterval(refresh, REFRESH_MS);
