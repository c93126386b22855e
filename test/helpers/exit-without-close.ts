/** Child process: open two workers, transfer once, and end WITHOUT closing them. */
import process from "node:process";
import { Worker } from "../../src/index.ts";
import { drive } from "./workers.ts";

const mode = (process.argv[2] ?? "thread") as "thread";
const a = await Worker.create({ progressMode: mode });
const b = await Worker.create({ progressMode: mode });
const run = <T>(p: Promise<T>) => drive([a, b], p);
const ep = await run(b.address().then((addr) => a.connect(addr)));
const into = new Uint8Array(4);
await run(Promise.all([b.recv(into, 1), ep.send(new Uint8Array([1, 2, 3, 4]), 1)]));
console.log(JSON.stringify(Array.from(into)));
