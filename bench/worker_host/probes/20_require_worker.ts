// Other ways to a Worker than the node:worker_threads import (what a bootstrap that hides
// Worker would have to close): createRequire, the web Worker global.
// --- run
import { createRequire } from "node:module";
try {
  const require = createRequire(import.meta.url);
  console.log(`require("worker_threads").Worker: ${typeof require("worker_threads").Worker}`);
} catch (error) {
  console.log(`createRequire: ${(error as Error).name}: ${(error as Error).message}`);
}
console.log(`globalThis.Worker: ${typeof (globalThis as any).Worker}`);
console.log(`process.binding: ${typeof (globalThis as any).process?.binding}`);
