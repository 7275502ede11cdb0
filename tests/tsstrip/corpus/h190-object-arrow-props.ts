const o = { f: (x: number): number => x + 1, g: async (): Promise<string> => "g" }; return [o.f(1), await o.g()]
