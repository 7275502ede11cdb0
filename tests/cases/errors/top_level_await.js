const a = await 1;
const b = await Promise.resolve(2);
const c = await new Promise((resolve) => resolve(3));
return a + b + c;
