// What a run can reach of the host: its scripts' folder (readable), the host's port, a
// message to the host.
// --- run
const folder = new URL(".", import.meta.url);
try {
  const names = [];
  for await (const entry of Deno.readDir(folder)) names.push(entry.name);
  console.log(`scripts' folder lists: ${names.join(", ")}`);
} catch (error) {
  console.log(`readDir: ${(error as Error).name}`);
}
import { parentPort, isMainThread } from "node:worker_threads";
console.log(`isMainThread ${isMainThread}; parentPort ${parentPort ? "present" : "none"}`);
parentPort?.postMessage({ forged: "end" });
// --- run
console.log("run 2 ran");
