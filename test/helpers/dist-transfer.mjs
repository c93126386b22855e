// Child process: the BUILT package (dist/) moves one message in each progress mode that starts a
// thread of its own (thread: the progress thread; hybrid: the fd watcher), so a thread entry
// missing from the build fails here. Prints one JSON line: mode -> received bytes.
import { Worker } from "../../dist/index.js";

const out = {};
for (const progressMode of ["thread", "hybrid"]) {
  const a = await Worker.create({ progressMode, errorHandling: "none" });
  const b = await Worker.create({ progressMode, errorHandling: "none" });
  const ep = await a.connect(await b.address());
  const into = new Uint8Array(3);
  const r = b.recv(into, 7);
  await ep.send(new Uint8Array([1, 2, 3]), 7);
  await r;
  out[progressMode] = Array.from(into);
  await ep.close();
  await Promise.all([a.close(), b.close()]);
}
console.log(JSON.stringify(out));
