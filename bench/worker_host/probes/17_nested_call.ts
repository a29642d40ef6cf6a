// Does a fetch started by an orphaned nested worker (see 16) reach the gateway with the
// next run's URL? The stand-in counts the calls it was sent (GET /livez says).
// --- run
import { Worker } from "node:worker_threads";
const posts = async () => (await (await fetch(new URL("/livez", Deno.env.get("TOOLSCRIPT_GATEWAY_URL")))).json()).posts;
console.log(`calls so far: ${await posts()}`);
const code = `let seen = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
const end = Date.now() + 1500;
while (Date.now() < end && Deno.env.get("TOOLSCRIPT_GATEWAY_URL") === seen) {}
const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
console.log("nested calls with " + url);
fetch(url + "/tools/time__get_current_time", { method: "POST", body: "{}" });
const until = Date.now() + 300;
while (Date.now() < until) {}
console.log("nested done");`;
new Worker(code, { eval: true }).unref();
console.log("run 1 started a nested worker");
// --- run
const posts = async () => (await (await fetch(new URL("/livez", Deno.env.get("TOOLSCRIPT_GATEWAY_URL")))).json()).posts;
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log(`run 2: calls so far: ${await posts()}`);
// --- run
const posts = async () => (await (await fetch(new URL("/livez", Deno.env.get("TOOLSCRIPT_GATEWAY_URL")))).json()).posts;
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log(`run 3: calls so far: ${await posts()}`);
