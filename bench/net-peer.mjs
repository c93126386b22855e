// node:net baseline, same plan as p2p-peer.ts: a TCP socket on 127.0.0.1 between two processes.
//   node bench/net-peer.mjs server          -> prints {"port"}, echoes frames
//   node bench/net-peer.mjs client PORT PLAN -> prints results
// Frames are [u32 length][u8 kind][payload]; kind 1 ping (echoed as 2), 3 data, 4 ack request, 9 end.
import net from "node:net";

const [role, portText, planText] = process.argv.slice(2);
setTimeout(() => process.exit(3), 300_000).unref();

function framer(socket, onFrame) {
  let chunks = [];
  let have = 0;
  socket.on("data", (d) => {
    chunks.push(d);
    have += d.length;
    while (have >= 5) {
      const head = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      chunks = [head];
      const len = head.readUInt32LE(0);
      if (have < 5 + len) break;
      onFrame(head[4], head.subarray(5, 5 + len));
      const rest = head.subarray(5 + len);
      chunks = rest.length ? [rest] : [];
      have = rest.length;
    }
  });
}
function frame(kind, payload) {
  const h = Buffer.alloc(5);
  h.writeUInt32LE(payload.length, 0);
  h[4] = kind;
  return [h, payload];
}
function write(socket, kind, payload) {
  const [h, p] = frame(kind, payload);
  socket.cork();
  socket.write(h);
  if (p.length) socket.write(p);
  socket.uncork();
}

if (role === "server") {
  const server = net.createServer((s) => {
    s.setNoDelay(true);
    framer(s, (kind, payload) => {
      if (kind === 1) write(s, 2, payload);
      else if (kind === 4) write(s, 5, Buffer.alloc(8));
      else if (kind === 9) {
        s.end();
        server.close();
      }
    });
  });
  server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
} else {
  const plan = JSON.parse(planText);
  const s = net.connect(Number(portText), "127.0.0.1");
  s.setNoDelay(true);
  await new Promise((r) => s.once("connect", r));
  let waiting = null;
  framer(s, (kind) => waiting?.(kind));
  const next = () => new Promise((r) => (waiting = r));
  const out = Buffer.alloc(4 << 20, 7);
  const results = [];
  for (const [size, iterations] of plan.latency) {
    const rtts = [];
    for (let i = 0; i < iterations + 20; i++) {
      const t0 = performance.now();
      const got = next();
      write(s, 1, out.subarray(0, size));
      await got;
      if (i >= 20) rtts.push((performance.now() - t0) * 1000);
    }
    rtts.sort((a, b) => a - b);
    results.push({ kind: "rtt_us_median", size, value: rtts[rtts.length >> 1], iterations });
  }
  // Each windowed row warms up first, untimed, for a second, as the ucx-ts rows do (warm-up.ts;
  // this file is plain JavaScript, run without a TypeScript loader).
  const warmUpMs = Number(process.env.UCX_TS_BENCH_WARM_MS ?? 1000);
  for (const [size, window, rounds] of plan.bandwidth) {
    const round = async () => {
      for (let i = 0; i < window; i++) write(s, 3, out.subarray(0, size));
      const got = next();
      write(s, 4, Buffer.alloc(0));
      await got;
    };
    for (let r = 0, w0 = performance.now(); r === 0 || performance.now() - w0 < warmUpMs; r++) await round();
    const t0 = performance.now();
    for (let r = 0; r < rounds; r++) await round();
    results.push({ kind: "bw_MBps", size, value: (size * window * rounds) / ((performance.now() - t0) / 1000) / 1e6, iterations: rounds * window });
  }
  write(s, 9, Buffer.alloc(0));
  s.end();
  console.log(JSON.stringify(results));
}
