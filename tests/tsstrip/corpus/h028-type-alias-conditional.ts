type Unwrap<T> = T extends Promise<infer U> ? U : T extends (infer V)[] ? V : never;
return "ok"
