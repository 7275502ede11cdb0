type RO<T> = { readonly [K in keyof T]: T[K] };
type Mut<T> = { -readonly [K in keyof T]-?: T[K] };
type Ren<T> = { [K in keyof T as `get${Capitalize<string & K>}`]: () => T[K] };
return 1
