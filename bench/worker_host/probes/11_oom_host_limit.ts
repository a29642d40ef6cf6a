// options: {"memory_mb": 128}
// Out of memory under the process's own V8 flag (--max-old-space-size, every isolate's):
// what happens to the host?
// --- run
const kept: number[][] = [];
console.log("run 1 allocates");
while (true) kept.push(new Array(1e6).fill(1.5));
// --- run
console.log("run 2 ran after");
