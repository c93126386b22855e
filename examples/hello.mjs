// node hello.mjs                   -> listens, prints its port, answers one message
// node hello.mjs 127.0.0.1:PORT    -> connects, sends "hello", prints the reply
import process from "node:process";
import { UcpWorker } from "ucx-ts";

const worker = await UcpWorker.create();
const [host, port] = (process.argv[2] ?? "").split(":");
if (!port) {
  const listener = await worker.listen({ port: 0 });
  console.log(`listening on port ${listener.port}`);
  const ep = await listener.accept();
  const buf = new Uint8Array(64);
  const { length } = await ep.recv(buf, 1); // tag 1
  await ep.send(buf.subarray(0, length).reverse(), 2); // tag 2
  await ep.close();
} else {
  const ep = await worker.connect({ host, port: Number(port) });
  await ep.send(new TextEncoder().encode("hello"), 1);
  const reply = new Uint8Array(64);
  const { length } = await ep.recv(reply, 2);
  console.log(new TextDecoder().decode(reply.subarray(0, length))); // "olleh"
  await ep.close();
}
await worker.close();
