declare module Foo.Bar { export const x: number }
return 2
