// options: {"timeout_ms": 1500}
// BroadcastChannel: a run that listens never ends (the host's timeout terminates it);
// does a message of the next run reach it, or the run after?
// --- run
const channel = new BroadcastChannel("x");
channel.onmessage = (event) => console.log(`run 1 heard ${event.data}`);
console.log("run 1 listens");
// --- run
const channel = new BroadcastChannel("x");
channel.onmessage = (event) => console.log(`run 2 heard ${event.data}`);
channel.postMessage("run 2's message");
await new Promise((resolve) => setTimeout(resolve, 200));
channel.close();
console.log("run 2 posted and closed");
// --- run
const channel = new BroadcastChannel("x");
channel.postMessage("run 3's message");
channel.close();
console.log("run 3 posted");
