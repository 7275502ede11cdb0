// One huge allocation is refused without crashing the worker.
const b = new ArrayBuffer(2 ** 30);
return b.byteLength;
