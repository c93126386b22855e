/**
 * Starting the progress thread. `node:worker_threads` works the same on Node, Deno and Bun,
 * and SharedArrayBuffers passed in `workerData` are shared on all three. One runtime quirk lives
 * here: Node 20 does not apply module hooks (such as tsx's TypeScript loader) to worker threads,
 * so when the library runs from its TypeScript sources under Node (its own tests do), the thread
 * registers tsx itself before loading the entry. From the built package the entry is plain JS.
 */
import { Worker } from "node:worker_threads";
import { runtime } from "./runtime.ts";

export type Thread = Worker;

export function startThread(entry: URL, workerData: unknown, transferList: Transferable[] = []): Thread {
  if (runtime === "node" && entry.pathname.endsWith(".ts")) {
    const tsx = import.meta.resolve("tsx/esm/api");
    const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
    return new Worker(boot, { eval: true, workerData, transferList: transferList as never });
  }
  return new Worker(entry, { workerData, transferList: transferList as never });
}

/**
 * A thread's entry module beside the module at `from` (its import.meta.url): the .ts file when
 * running from source, the .js file tsup built next to the chunk when running from dist/.
 */
export function entryBeside(from: string, name: string): URL {
  return new URL(`./${name}${from.endsWith(".ts") ? ".ts" : ".js"}`, from);
}

/**
 * The progress thread's own side: its start-up data, the channel to the application thread,
 * and `receiveMessageOnPort`, which takes a message synchronously (the thread never returns
 * to its event loop while it runs UCX).
 */
export { parentPort, workerData, isMainThread, MessageChannel, receiveMessageOnPort, type MessagePort } from "node:worker_threads";
