/** argv that runs this same CLI again under the same runtime (for peer processes). */
import process from "node:process";
import { runtime } from "../index.ts";

export function selfArgv(): string[] {
  const script = process.argv[1];
  if (!script) throw new Error("cannot tell which script is running to start a peer process");
  if (runtime === "deno") return [process.execPath, "run", "-A", script];
  return [process.execPath, ...process.execArgv, script];
}
