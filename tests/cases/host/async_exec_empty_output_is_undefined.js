// An exec host with empty stdout answers undefined.
const v = await nothing.f();
return [v === undefined, typeof v];
