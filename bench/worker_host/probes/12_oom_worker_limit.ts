// options: {"memory_mb": 512, "heap_mb": 64}
// Out of memory with the Worker's own resourceLimits (64 MB) under a 512 MB process flag.
// --- run
const kept: number[][] = [];
console.log("run 1 allocates");
while (true) kept.push(new Array(1e6).fill(1.5));
// --- run
console.log("run 2 ran after");
