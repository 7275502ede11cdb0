// Awaiting a group (a thenable check reads store.then) calls no host function.
const v = await store;
const w = await Promise.resolve(store);
return [v === store, w === store, typeof store.then];
