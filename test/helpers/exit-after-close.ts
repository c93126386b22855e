/**
 * Child process: the README's hello exchange in one process (a listener's endpoint and a
 * connected one, one message each way), then close both endpoints and both workers and end.
 * The parent checks that the process then exits by itself: nothing the workers made may keep
 * the event loop alive after close() (seen under Bun, whose default is hybrid mode: a request
 * settled during the close re-armed hybrid's keep-alive timer and the process never ended).
 */
import process from "node:process";
import { Worker } from "../../src/index.ts";
import { drive } from "./workers.ts";

const mode = (process.argv[2] ?? "thread") as "thread";
const server = await Worker.create({ progressMode: mode });
const client = await Worker.create({ progressMode: mode });
const run = <T>(p: Promise<T>) => drive([server, client], p);
const listener = await server.listen({ host: "127.0.0.1", port: 0 });
const [accepted, connected] = await run(Promise.all([listener.accept(), client.connect({ host: "127.0.0.1", port: listener.port })]));
const got = new Uint8Array(8);
await run(Promise.all([accepted.recv(got, 1), connected.send(new Uint8Array([1, 2, 3]), 1)]));
const reply = new Uint8Array(8);
await run(Promise.all([connected.recv(reply, 2), accepted.send(got.subarray(0, 3).reverse(), 2)]));
await run(Promise.all([accepted.close(), connected.close()]));
await server.close();
await client.close();
console.log(JSON.stringify(Array.from(reply.subarray(0, 3))));
