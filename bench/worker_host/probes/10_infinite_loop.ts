// options: {"timeout_ms": 1000}
// An infinite loop: does the host's worker.terminate() (at timeout_ms) stop it?
// --- run
console.log("run 1 loops");
while (true) {
  // busy
}
// --- run
console.log("run 2 ran after");
